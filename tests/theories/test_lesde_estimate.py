"""Oracles 4 and 5 (docs/theories/lesde.md): estimator round trips and the tail index."""

import numpy as np
import pytest

from ncdynamics.theories.lesde import estimate as est
from ncdynamics.theories.lesde import model as m
from ncdynamics.theories.lesde.simulate import solve_leode

T = 801


def _rates():
    alpha = m.Rate(
        lambda t: 0.02 + 0.05 * np.exp(-np.asarray(t) / 300),
        lambda t: 0.02 * np.asarray(t) + 15.0 * (1 - np.exp(-np.asarray(t) / 300)),
    )
    beta = m.Rate(
        lambda t: -0.01 - 0.03 * np.exp(-np.asarray(t) / 500),
        lambda t: -0.01 * np.asarray(t) - 15.0 * (1 - np.exp(-np.asarray(t) / 500)),
    )
    return alpha, beta


def test_l_estimator_recovers_A_B_exactly(rng):
    alpha, beta = _rates()
    ts = np.arange(T, dtype=float)
    x = m.l_model_means(ts, rng.normal(size=(3, 3)), alpha, beta)
    ab = est.estimate_ab_l(x)
    np.testing.assert_allclose(ab.A, alpha.integral(ts), atol=1e-6)
    np.testing.assert_allclose(ab.B, beta.integral(ts), atol=1e-6)


def test_paper_forms_of_the_l_estimator(rng):
    alpha, beta = _rates()
    ts = np.arange(T, dtype=float)
    x = m.l_model_means(ts, rng.normal(size=(3, 3)), alpha, beta)
    avg = x.mean(axis=1)
    dev = x - avg[:, None]
    # D.6 as printed (e^{B} for e^{-B}) returns -B, not B
    b_d6 = np.mean(np.log(np.abs(avg[0] * dev / (dev[0] * avg[:, None]))), axis=(1, 2))
    np.testing.assert_allclose(b_d6, -beta.integral(ts), atol=1e-6)
    assert np.max(np.abs(b_d6 - beta.integral(ts))) > 10.0
    # eq. (11)'s "Xbar^k - Xbar^{k-1}" also scales with e^{(A-B)/K}: harmless on the ODE
    lag = x - np.roll(x, 1, axis=1)
    a_lit = np.mean(np.log(np.abs(avg[:, None] * lag**2 / (avg[0] * lag[0] ** 2))), axis=(1, 2))
    np.testing.assert_allclose(a_lit, alpha.integral(ts), atol=1e-6)


def test_projection_estimator_exact_for_any_K(rng):
    alpha, beta = _rates()
    ts = np.arange(0, T, 4, dtype=float)
    for k in (3, 4):
        x = m.L_model_means(ts, rng.normal(size=(k, k)), alpha, beta)
        ab = est.estimate_ab_projection(x)
        np.testing.assert_allclose(ab.A, alpha.integral(ts), atol=1e-8)
        np.testing.assert_allclose(ab.B, beta.integral(ts), atol=1e-8)


def test_L_estimator_is_offset_and_rates_unbiased(rng):
    alpha, beta = _rates()
    ts = np.arange(T, dtype=float)
    x = m.L_model_means(ts, rng.normal(size=(3, 3)), alpha, beta)
    ab = est.estimate_ab_L(x)
    late = slice(T // 2, T)
    for got, rate in ((ab.A, alpha), (ab.B, beta)):
        true = rate.integral(ts)
        assert np.var(got[late] - true[late]) < 1e-3 * np.var(true[late])
        d = est.rates_savgol(got, 51)
        window = slice(T - 200, T - 30)
        np.testing.assert_allclose(d[window], rate(ts[window]), rtol=0.05)


def test_savgol_rate_of_a_quadratic_is_exact():
    t = np.arange(300, dtype=float)
    a = 0.5 * 1e-3 * t**2 + 0.1 * t
    np.testing.assert_allclose(est.rates_savgol(a, 31), 1e-3 * t + 0.1, atol=1e-10)


@pytest.mark.parametrize("r", [0.3, 0.7])
def test_tail_index_exact_on_power_law(r):
    t = np.arange(5000, dtype=float)
    a = (1 - r) * (1 + t) ** (1 - r) / (1 - r)
    assert abs(est.tail_index(a) - r) < 1e-9
    assert abs(est.tail_index(-a) - r) < 1e-9  # sign flip when most of the tail is negative
    b = a.copy()
    b[-10:-5] = 0.0  # log of non-positive values is skipped
    assert abs(est.tail_index(b) - r) < 1e-9
    assert np.isnan(est.tail_index(np.zeros(100)))


def test_class_means_from_records():
    logits = np.arange(2 * 3 * 2, dtype=float).reshape(2, 3, 2)
    labels = np.array([[0, 0, 1], [1, 1, 1]])
    xb = est.class_means_from_records(logits, labels, 2)
    np.testing.assert_allclose(xb[0, 0], logits[0, :2].mean(axis=0))
    np.testing.assert_allclose(xb[0, 1], logits[0, 2])
    assert np.all(np.isnan(xb[1, 0]))
    filled = est.class_means_from_records(logits, labels, 2, fill="ffill")
    np.testing.assert_allclose(filled[1, 0], filled[0, 0])


def test_leode_imitation_real_init_is_euler_of_the_L_model(rng):
    k, n = 3, 200
    a_hat = np.full(n, 0.03)
    b_hat = np.full(n, -0.01)
    x0 = rng.normal(size=(k, k))
    out = est.leode_imitation(a_hat, b_hat, x0, rng=rng, init="real")
    params = m.LEParams.make(0.03, -0.01, m.h_logits(k))
    ref = solve_leode(params, x0, np.arange(n, dtype=float), method="euler").ys
    np.testing.assert_allclose(out.mean, ref, rtol=1e-12, atol=1e-14)
    rand = est.leode_imitation(a_hat, b_hat, x0, rng=rng, n_runs=50)
    assert rand.mean.shape == (n, k, k) and np.all(rand.sd[1:] > 0)


def test_relative_distance_properties(rng):
    x = rng.normal(size=(10, 3, 3))
    assert np.all(est.relative_distance(x, x) == 0)
    rd = est.relative_distance(x, -x, model="l")
    np.testing.assert_allclose(rd, 2.0)
    # the L-model norm only sees the d_k component
    d = m.d_vectors(3)
    ortho = np.ones((10, 3, 3))  # 1 is orthogonal to every d_k
    assert np.all(est.relative_distance(x, x + ortho, model="L") < 1e-12)
    assert np.all(est.relative_distance(x, x + d[None], model="L") > 0)


@pytest.mark.parametrize("model", ["l", "L"])
def test_drift_from_impacts_recovers_E(rng, model):
    k, lr = 3, 0.005
    e = m.le_matrix(0.4, -0.1, k)
    ys = np.repeat(np.arange(k), 4)
    yp = np.repeat(np.arange(k), 5)
    xs = rng.normal(size=(ys.size, k))
    h = m.hbar(k) if model == "L" else np.broadcast_to(np.eye(k), (k, k, k))
    u = np.einsum("jab,jb->ja", h[ys], xs)
    impacts = e[yp][:, ys].T[:, :, None] * u[:, None, :] / lr  # (n_src, n_probe, K)
    out = est.drift_from_impacts(impacts, xs, ys, yp, k, lr=lr, model=model)
    np.testing.assert_allclose(out.E, e, atol=1e-12)
    assert abs(out.alpha - 0.4) < 1e-12 and abs(out.beta + 0.1) < 1e-12


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: est.estimate_ab_L(np.ones((5, 4, 4))), "means"),
        (lambda: est.estimate_ab_projection(np.ones((5, 3, 2))), "means"),
        (lambda: est.estimate_ab_l(np.ones((5, 3, 2)), ref=9), "ref"),
        (lambda: est.rates_savgol(np.full(5, np.nan), 3), "finite"),
        (lambda: est.tail_index(np.ones(10), tail=0), "tail"),
        (
            lambda: est.leode_imitation(
                np.ones(3), np.ones(4), np.eye(3), rng=np.random.default_rng(0)
            ),
            "beta_hat",
        ),
        (lambda: est.relative_distance(np.ones((2, 3, 3)), np.ones((2, 3, 3)), model="x"), "model"),
    ],
)
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
