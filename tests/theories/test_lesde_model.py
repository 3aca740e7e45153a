"""Oracles 1-3 and 10 (docs/theories/lesde.md): drift matrices, v1/v2, closed forms, ETF."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.linalg import expm, null_space

from ncdynamics.theories.geometry import simplex_etf
from ncdynamics.theories.lesde import model as m


def _ode_reference(x0, alpha, beta, h, ts):
    params = m.LEParams.make(alpha, beta, h)
    shape = x0.shape
    sol = solve_ivp(
        lambda t, y: m.drift(t, y.reshape(shape), params).ravel(),
        (0, ts[-1]),
        x0.ravel(),
        t_eval=ts,
        rtol=1e-12,
        atol=1e-14,
        method="DOP853",
    )
    return sol.y.T.reshape(-1, *shape)


def test_l_model_drift_eigenvalues():
    k, p, a, b = 3, 3, 1.3, 0.4
    ev = np.sort(np.linalg.eigvals(m.drift_matrix(a, b, m.h_isotropic(k, p))).real)
    want = np.sort([(a - b) / k] * ((k - 1) * p) + [(a + (k - 1) * b) / k] * p)
    np.testing.assert_allclose(ev, want, atol=1e-10)


def test_L_model_drift_eigenvalues_and_d_eigenvector():
    k, a, b = 3, 1.3, 0.4
    mat = m.drift_matrix(a, b, m.h_logits(k))
    ev = np.sort(np.linalg.eigvals(mat).real)
    want = np.sort([(a - b) / k] + [(a + b / (k - 1)) / k] * (k - 1) + [0.0] * (k * (k - 1)))
    np.testing.assert_allclose(ev, want, atol=1e-10)
    d = m.d_vectors(k).ravel()
    np.testing.assert_allclose(mat @ d, (a - b) / k * d, atol=1e-12)


def test_paper_eigenvalue_typo_c8_is_wrong():
    # (C.8) prints (alpha + beta/(K+1))/K; the spectrum holds (alpha + beta/(K-1))/K.
    k, a, b = 4, 1.0, 0.6
    ev = np.linalg.eigvals(m.drift_matrix(a, b, m.h_logits(k))).real
    assert np.min(np.abs(ev - (a + b / (k - 1)) / k)) < 1e-10
    assert np.min(np.abs(ev - (a + b / (k + 1)) / k)) > 1e-3


def test_drift_matrix_blocks_and_paper_kron_form_differs():
    k, a, b = 3, 0.7, -0.2
    h = m.h_logits(k)
    mat = m.drift_matrix(a, b, h)
    e = m.le_matrix(a, b, k)
    for i in range(k):
        for j in range(k):
            np.testing.assert_allclose(
                mat[i * k : (i + 1) * k, j * k : (j + 1) * k], e[i, j] * h[i, j] / k, atol=1e-15
            )
    # the paper's "(E ⊗ I_K) ∘ H / K" zeroes the off-diagonal entries of every block
    hflat = h.transpose(0, 2, 1, 3).reshape(k * k, k * k)
    paper = np.kron(e, np.eye(k)) * hflat / k
    assert np.max(np.abs(paper - mat)) > 0.05


@pytest.mark.parametrize("k, p", [(2, 1), (3, 2), (4, 3)])
def test_drift_equals_drift_matrix_times_state_for_non_symmetric_h(rng, k, p):
    # random blocks H_kl with H_kl != H_kl^T (and H_kl != H_lk), non-uniform class
    # probabilities: the einsum drift must apply each block, not its transpose
    h = rng.normal(size=(k, k, p, p))
    if p > 1:
        assert np.min(np.abs(h - h.transpose(0, 1, 3, 2)).max(axis=(2, 3))) > 0.1
    probs = rng.dirichlet(np.ones(k))
    alpha, beta = 0.7, -0.3
    params = m.LEParams.make(alpha, beta, h, class_probs=probs)
    mat = m.drift_matrix(alpha, beta, h, class_probs=probs)
    y = rng.normal(size=(k, p))
    want = (mat @ y.ravel()).reshape(k, p)  # class-major flattening
    np.testing.assert_allclose(m.drift(0.0, y, params), want, rtol=1e-12, atol=1e-14)
    # batch axes in front of (K, p) are carried through
    ys = rng.normal(size=(5, k, p))
    want_batch = (ys.reshape(5, k * p) @ mat.T).reshape(5, k, p)
    np.testing.assert_allclose(m.drift(0.0, ys, params), want_batch, rtol=1e-12, atol=1e-14)


def test_v1_v2_identities():
    k = 3
    v1, v2 = m.v1_v2_k3()
    d = m.d_vectors(k).ravel()
    assert abs(v1 @ d - 1) < 1e-12 and abs(v2 @ d - 4 / 3) < 1e-12
    rng = np.random.default_rng(0)
    for _ in range(5):
        a, b = rng.normal(size=2)
        mat = m.drift_matrix(a, b, m.h_logits(k))
        lam = (a + b / 2) / 3
        f_space = null_space(mat - lam * np.eye(9), rcond=1e-9)
        assert f_space.shape[1] == 2
        assert np.max(np.abs(v1 @ f_space)) < 1e-12
        zero_space = null_space(mat, rcond=1e-9)
        assert np.max(np.abs(v2 @ zero_space)) < 1e-12


def test_binary_closed_form_matches_ode():
    ts = np.linspace(0, 20, 41)
    x = m.binary_means(ts, 0.5, -0.3, 0.7, -0.2)
    ref = _ode_reference(np.array([[0.7], [-0.2]]), 0.5, -0.3, m.h_isotropic(2, 1), ts)
    np.testing.assert_allclose(x, ref[:, :, 0], rtol=1e-7)


def _tv_rates():
    alpha = m.Rate(
        lambda t: 0.02 + 0.05 * np.exp(-np.asarray(t) / 300),
        lambda t: 0.02 * np.asarray(t) + 15.0 * (1 - np.exp(-np.asarray(t) / 300)),
    )
    beta = m.Rate(
        lambda t: -0.01 - 0.03 * np.exp(-np.asarray(t) / 500),
        lambda t: -0.01 * np.asarray(t) - 15.0 * (1 - np.exp(-np.asarray(t) / 500)),
    )
    return alpha, beta


def test_l_model_closed_form_time_varying_matches_ode(rng):
    k, p = 3, 2
    alpha, beta = _tv_rates()
    ts = np.linspace(0, 1500, 31)
    x0 = rng.normal(size=(k, p))
    ref = _ode_reference(x0, alpha, beta, m.h_isotropic(k, p), ts)
    np.testing.assert_allclose(m.l_model_means(ts, x0, alpha, beta), ref, rtol=1e-7, atol=1e-12)


def test_callable_rate_quadrature_matches_closed_integral():
    alpha, _ = _tv_rates()
    numeric = m.as_rate(alpha.value)
    ts = np.array([0.0, 10.0, 400.0, 1500.0])
    np.testing.assert_allclose(numeric.integral(ts), alpha.integral(ts), rtol=1e-10, atol=1e-12)


def test_array_rate_integral_is_exact_for_linear_rate():
    ts = np.arange(11.0)
    r = m.as_rate(0.5 + 0.1 * ts)
    q = np.array([0.0, 2.5, 10.0, 12.0])
    want = 0.5 * q + 0.05 * np.minimum(q, 10) ** 2 + np.where(q > 10, 1.0 * (q - 10), 0)
    np.testing.assert_allclose(r.integral(q), want, rtol=1e-12)


def test_L_model_s_reduction_time_varying_matches_ode(rng):
    k = 3
    alpha, beta = _tv_rates()
    ts = np.linspace(0, 1500, 16)
    x0 = rng.normal(size=(k, k))
    ref = _ode_reference(x0, alpha, beta, m.h_logits(k), ts)
    s_ref = m._s_coordinates(ref)
    s = m.L_model_s(ts, m._s_coordinates(x0), alpha, beta)
    np.testing.assert_allclose(s, s_ref, rtol=1e-7, atol=1e-12)
    x = m.L_model_means(ts, x0, alpha, beta)
    np.testing.assert_allclose(x, ref, rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("k", [3, 4])
def test_L_model_constant_rates_match_expm(rng, k):
    a, b = 0.3, -0.1
    ts = np.linspace(0, 60, 7)
    x0 = rng.normal(size=(k, k))
    mat = m.drift_matrix(a, b, m.h_logits(k))
    ref = np.stack([(expm(mat * t) @ x0.ravel()).reshape(k, k) for t in ts])
    np.testing.assert_allclose(m.L_model_means(ts, x0, a, b), ref, rtol=1e-7, atol=1e-10)


def test_eq10_etf_of_the_shared_floor_has_unit_equiangular_columns():
    # eq. (10), S = sqrt(K/(K-1)) Q (I - 11^T/K), is the floor's simplex_etf
    for k, p in [(3, 3), (4, 6), (10, 12)]:
        s = simplex_etf(k, p)
        g = s.T @ s
        np.testing.assert_allclose(np.diag(g), 1.0, atol=1e-12)
        off = g[~np.eye(k, dtype=bool)]
        np.testing.assert_allclose(off, -1 / (k - 1), atol=1e-12)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: m.le_matrix(1.0, 0.0, 1), ValueError, "n_classes"),
        (lambda: m.drift_matrix(1.0, 0.0, np.ones((2, 3, 1, 1))), ValueError, "h"),
        (
            lambda: m.drift_matrix(1.0, 0.0, np.ones((2, 2, 1, 1)), class_probs=[0.2, 0.2]),
            ValueError,
            "class_probs",
        ),
        (lambda: m.as_rate(np.nan, "alpha"), ValueError, "alpha"),
        (lambda: m.as_rate([0.1, np.inf], "beta"), ValueError, "beta"),
        (lambda: m.L_model_means([0.0, 1.0], np.ones((3, 2)), 1.0, 0.0), ValueError, "x0"),
        (lambda: m.LEParams.make(1.0, 0.0, m.h_isotropic(2, 1), sigma=-1.0), ValueError, "sigma"),
    ],
)
def test_bad_input_is_rejected(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
