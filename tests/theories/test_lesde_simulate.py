"""Oracles 8 and 9 (docs/theories/lesde.md), and agreement of the two Euler--Maruyama schemes."""

import numpy as np
import pytest

from ncdynamics.theories.lesde import model as m
from ncdynamics.theories.lesde.simulate import simulate_discrete, simulate_sde, solve_leode


@pytest.mark.parametrize("scheme", ["class-means", "particles", "particles-reference"])
def test_within_class_spread_is_initial_plus_brownian(rng, scheme):
    n, sigma, t_end, h = 20000, 1.0, 5.0, 0.05
    params = m.LEParams.make(0.3, -0.1, m.h_isotropic(2, 1), sigma=sigma)
    x0 = rng.standard_normal((1, 2, n, 1))  # Var0 = 1
    paths = simulate_sde(
        params, x0, h=h, n_steps=int(t_end / h), rng=rng, record_every=int(t_end / h), scheme=scheme
    )
    xs = paths.ys[0, -1]  # (K, n, p)
    dev = xs - xs.mean(axis=1)[:, None, :]
    want = (1.0 + sigma**2 * t_end) * (1 - 1 / n)
    np.testing.assert_allclose(dev.var(axis=1).ravel(), want, rtol=0.03)


def test_schemes_agree_in_distribution(rng):
    # class means after t = 2: same mean and spread across repetitions in both schemes
    params = m.LEParams.make(0.5, -0.2, m.h_isotropic(3, 2), sigma=1.0)
    x0 = np.broadcast_to(
        np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])[None, :, None, :], (400, 3, 10, 2)
    ).copy()
    a = simulate_sde(params, x0, h=0.02, n_steps=100, rng=rng, record_every=100, record="means")
    assert a.ys.shape == (400, 2, 3, 2) and a.ts.tolist() == [0.0, 2.0]
    a = a.ys[:, -1]
    b = simulate_sde(
        params,
        x0,
        h=0.02,
        n_steps=100,
        rng=rng,
        record_every=100,
        scheme="particles",
        record="means",
    ).ys[:, -1]
    se = np.sqrt(a.var(axis=0) / 400 + b.var(axis=0) / 400)
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 4 * se)
    np.testing.assert_allclose(a.std(axis=0), b.std(axis=0), rtol=0.2)
    # noise-free means follow the closed form (7)
    ref = m.l_model_means(np.array([2.0]), x0[0].mean(axis=1), 0.5, -0.2)[0]
    np.testing.assert_allclose(a.mean(axis=0), ref, rtol=0.05, atol=0.05)


def test_mean_field_drift_follows_ode_path(rng):
    params = m.LEParams.make(0.4, -0.1, m.h_isotropic(2, 1), sigma=0.0)
    x0 = rng.standard_normal((2, 2, 50, 1))
    c = np.array([[0.5], [-0.5]])
    paths = simulate_sde(
        params,
        x0,
        h=1e-3,
        n_steps=3000,
        rng=rng,
        drift_mode="mean-field",
        mean_field_init=c,
        record_every=3000,
    )
    ode = m.binary_means(np.array([3.0]), 0.4, -0.1, 0.5, -0.5)[0]
    # X_i(t) = xbar_ode(t) - c + X_i(0) without noise (Sec. 2.2)
    want = ode[None, :, None] - c[None, :, :] + x0[..., 0]
    np.testing.assert_allclose(paths.ys[:, -1, :, :, 0], want, atol=1e-3)  # Euler O(h)


def _discrete_error(h, rng, reps=20):
    t_end, alpha, beta = 5.0, 0.5, -0.3
    params = m.LEParams.make(alpha, beta, m.h_isotropic(2, 1), sigma=0.0)
    x0 = rng.standard_normal((reps, 2, 50, 1))
    x0[:, 0] += 0.5
    x0[:, 1] -= 0.5
    paths = simulate_discrete(
        params, x0, h=h, n_steps=int(round(t_end / h)), rng=rng, record_every=int(round(t_end / h))
    )
    errs = []
    for r in range(reps):
        c = x0[r].mean(axis=1)[:, 0]
        ref = m.binary_means(np.array([t_end]), alpha, beta, c[0], c[1])[0]
        mean = paths.ys[r, -1, :, :, 0].mean(axis=1)  # (K,)
        errs.append(np.linalg.norm(mean - ref) / np.linalg.norm(ref))
    return float(np.mean(errs))


def test_discrete_dynamics_converge_to_ode(rng):
    coarse, fine = _discrete_error(1e-2, rng), _discrete_error(1e-3, rng)
    assert fine < 0.05
    assert fine < coarse


def test_discrete_L_model_uses_column_class_projector(rng):
    # one step with a single sample per class: X^k += h E_{k,L} Hbar^L X^L
    k = 3
    params = m.LEParams.make(0.7, -0.2, m.h_logits(k))
    x0 = rng.normal(size=(1, k, 1, k))
    gen = np.random.default_rng(3)
    out = simulate_discrete(params, x0, h=0.1, n_steps=1, rng=gen)
    el = np.random.default_rng(3).choice(k, size=1, p=params.class_probs)[0]
    e = m.le_matrix(0.7, -0.2, k)
    want = x0[0, :, 0] + 0.1 * e[:, el][:, None] * (m.hbar(k)[el] @ x0[0, el, 0])[None]
    np.testing.assert_allclose(out.ys[0, -1, :, 0], want, atol=1e-12)


def test_leode_euler_and_rk_match_closed_form(rng):
    k = 3
    params = m.LEParams.make(0.3, -0.1, m.h_logits(k))
    x0 = rng.normal(size=(k, k))
    ts = np.linspace(0, 10, 2001)
    exact = m.L_model_means(ts, x0, 0.3, -0.1)
    rk = solve_leode(params, x0, ts)
    assert rk.success and rk.n_evals > 0
    np.testing.assert_array_equal(rk.ts, ts)
    np.testing.assert_allclose(rk.ys, exact, rtol=1e-8, atol=1e-10)
    euler = solve_leode(params, x0, ts, method="euler").ys
    assert np.max(np.abs(euler - exact)) < 1e-2 * np.max(np.abs(exact))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"x0": np.zeros((1, 3, 2, 1))}, "x0"),
        ({"h": 0.0}, "h"),
        ({"n_steps": 0}, "n_steps"),
        ({"scheme": "exact"}, "scheme"),
        ({"drift_mode": "ode"}, "drift_mode"),
        ({"record": "xs"}, "record"),
        ({"dtype": "float16"}, "dtype"),
    ],
)
def test_simulate_sde_rejects_bad_input(rng, kw, match):
    params = m.LEParams.make(0.3, -0.1, m.h_isotropic(2, 1), sigma=1.0)
    args = {"x0": np.zeros((1, 2, 3, 1)), "h": 0.1, "n_steps": 2, "rng": rng}
    args.update(kw)
    x0 = args.pop("x0")
    with pytest.raises(ValueError, match=match):
        simulate_sde(params, x0, **args)


@pytest.mark.parametrize("drift_mode", ["empirical", "mean-field"])
@pytest.mark.parametrize("record", ["particles", "means"])
def test_fast_particles_equal_reference_in_float64(drift_mode, record):
    # same rng, same noise stream: the torch fast path is the NumPy loop up to rounding,
    # with time-varying rates
    params = m.LEParams.make(lambda t: 0.3 + 0.1 * np.sin(t), -0.1, m.h_isotropic(3, 2), sigma=0.7)
    x0 = np.random.default_rng(1).standard_normal((2, 3, 40, 2))
    kw = dict(h=0.01, n_steps=250, record_every=50, drift_mode=drift_mode, record=record)
    fast = simulate_sde(params, x0, rng=np.random.default_rng(5), scheme="particles", **kw)
    ref = simulate_sde(params, x0, rng=np.random.default_rng(5), scheme="particles-reference", **kw)
    assert fast.ys.shape == ref.ys.shape and fast.ys.dtype == np.float64
    np.testing.assert_array_equal(fast.ts, ref.ts)
    np.testing.assert_allclose(fast.ys, ref.ys, rtol=1e-12, atol=1e-12)


def test_fast_particles_float32_agree_in_law(rng):
    # float32 draws torch's noise: class means and within-class spread match the
    # float64 class-mean scheme in distribution (4 standard errors / 3% on the spread)
    params = m.LEParams.make(0.5, -0.2, m.h_isotropic(3, 2), sigma=1.0)
    x0 = np.broadcast_to(
        np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])[None, :, None, :], (400, 3, 10, 2)
    ).copy()
    kw = dict(h=0.02, n_steps=100, record_every=100, record="means")
    a = simulate_sde(params, x0, rng=rng, **kw).ys[:, -1]
    b = simulate_sde(params, x0, rng=rng, scheme="particles", dtype="float32", **kw).ys[:, -1]
    assert b.dtype == np.float64
    se = np.sqrt(a.var(axis=0) / 400 + b.var(axis=0) / 400)
    assert np.all(np.abs(a.mean(axis=0) - b.mean(axis=0)) < 4 * se)
    np.testing.assert_allclose(a.std(axis=0), b.std(axis=0), rtol=0.2)
    big = simulate_sde(
        m.LEParams.make(0.3, -0.1, m.h_isotropic(2, 1), sigma=1.0),
        rng.standard_normal((1, 2, 20000, 1)),
        h=0.05,
        n_steps=100,
        rng=rng,
        record_every=100,
        scheme="particles",
        dtype="float32",
    ).ys[0, -1]
    dev = big - big.mean(axis=1)[:, None, :]
    np.testing.assert_allclose(dev.var(axis=1).ravel(), (1.0 + 5.0) * (1 - 1 / 20000), rtol=0.03)


@pytest.mark.parametrize("scheme", ["class-means", "particles-reference"])
def test_simulate_sde_float32_only_for_fast_particles(rng, scheme):
    params = m.LEParams.make(0.3, -0.1, m.h_isotropic(2, 1), sigma=1.0)
    with pytest.raises(ValueError, match="dtype"):
        simulate_sde(
            params,
            np.zeros((1, 2, 3, 1)),
            h=0.1,
            n_steps=2,
            rng=rng,
            scheme=scheme,
            dtype="float32",
        )


def _particle_paths(device, dtype):
    params = m.LEParams.make(0.4, -0.2, m.h_isotropic(3, 2), sigma=0.5)
    x0 = np.random.default_rng(2).standard_normal((2, 3, 30, 2))
    return simulate_sde(
        params,
        x0,
        h=0.01,
        n_steps=60,
        rng=np.random.default_rng(9),
        record_every=20,
        scheme="particles",
        dtype=dtype,
        device=device,
    ).ys


@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_fast_particles_device_path_on_cpu_equals_default(dtype):
    # the path a CUDA run takes (explicit device, device generator), exercised on the CPU
    np.testing.assert_array_equal(_particle_paths("cpu", dtype), _particle_paths(None, dtype))


@pytest.mark.gpu
def test_fast_particles_on_cuda_equal_cpu_in_float64():
    np.testing.assert_allclose(
        _particle_paths("cuda", "float64"), _particle_paths(None, "float64"), rtol=1e-10
    )


def test_discrete_step_applies_each_block_untransposed_to_the_drawn_particle(rng):
    """One step on asymmetric, distinct blocks H[k, l] (p = 3) and several repetitions: the
    update of class k is E_{k,L} H[k, L] x_L for the drawn class L and particle, row by row.
    A transposed block (H[k, L]^T, or H[L, k]) gives another result here."""
    k, p, reps, n = 3, 3, 4, 5
    h_blocks = rng.normal(size=(k, k, p, p))  # no symmetry of any kind
    params = m.LEParams.make(0.7, -0.2, h_blocks, sigma=0.0)
    x0 = rng.normal(size=(reps, k, n, p))
    out = simulate_discrete(params, x0, h=0.1, n_steps=1, rng=np.random.default_rng(5))
    # the same draws, in the order simulate_discrete makes them
    gen = np.random.default_rng(5)
    el = gen.choice(k, size=reps, p=params.class_probs)
    jm = gen.integers(0, n, size=reps)
    e = m.le_matrix(0.7, -0.2, k)
    want = x0.copy()
    for r in range(reps):
        src = x0[r, el[r], jm[r]]
        for c in range(k):
            want[r, c] += 0.1 * e[c, el[r]] * (h_blocks[c, el[r]] @ src)
    np.testing.assert_allclose(out.ys[:, -1], want, rtol=1e-12, atol=1e-12)
