"""Oracles O6-O8: the limits of the flow for E = 0 (Theorem 5.2, App. B.4)
and for E negative (App. B.3), with the corrected theta."""

import numpy as np
import pytest
from ntk_collapse_helpers import P

from ncdynamics.probes.collapse import collapse_metrics
from ncdynamics.theories.labels import class_major_labels
from ncdynamics.theories.ntk_collapse.decomposition import (
    compose_features,
    within_class_gram,
)
from ncdynamics.theories.ntk_collapse.initial import (
    init_equal_bias,
    init_negative_invariant,
    init_zero_invariant,
)
from ncdynamics.theories.ntk_collapse.invariants import (
    invariant,
    invariant_tilde,
)
from ncdynamics.theories.ntk_collapse.limits import (
    equal_bias_coefficients,
    predict_limits,
    psd_sqrt,
)
from ncdynamics.theories.ntk_collapse.model import (
    BlockParams,
    State,
    loss,
)
from ncdynamics.theories.ntk_collapse.simulate import simulate_flow


@pytest.fixture(scope="module")
def collapsed():
    rng = np.random.default_rng(7)
    s0 = init_zero_invariant(P, rng=rng)
    ts = np.concatenate([[0.0], np.logspace(-2, np.log10(2e4), 30)])
    return s0, simulate_flow(s0, ts, P)


def test_zero_invariant_flow_keeps_mean_and_bias_and_reaches_etf_o6(collapsed):
    s0, tr = collapsed
    assert np.abs(invariant(s0, P)).max() < 1e-12
    C, m = 4, 5
    path = State.unpack(tr.ys, P)  # time-first H (T, n, N), W (T, C, n), b (T, C)
    means = path.H.reshape(tr.ts.size, 12, C, m).mean(axis=(2, 3))
    np.testing.assert_allclose(means, 0.0, atol=1e-10)
    np.testing.assert_allclose(path.b, 0.25, atol=1e-10)
    s = State.unpack(tr.ys[-1], P)
    Pc = np.eye(C) - 1.0 / C
    H1 = s.H.reshape(12, C, m).mean(axis=2)
    assert np.linalg.norm(H1.T @ H1 - np.sqrt(P.mu_class / m) * Pc) < 1e-8
    assert np.linalg.norm(s.W @ s.W.T - np.sqrt(m / P.mu_class) * Pc) < 1e-3


def test_zero_invariant_within_class_decays_like_one_over_2mt_o6(collapsed):
    _, tr = collapsed
    t = tr.ts[-1]
    path = State.unpack(tr.ys, P)
    S = within_class_gram(path.H[-1], 4)
    assert np.linalg.norm(S) * 2 * 5 * t == pytest.approx(1.0, rel=0.05)
    # duality gap decays like t^(-1/2): compare t and t/10 (factor sqrt(10) within 20%)
    H1 = path.H.reshape(tr.ts.size, 12, 4, 5).mean(axis=3)
    gap = [np.linalg.norm(path.W[k].T - np.sqrt(5 / P.mu_class) * H1[k]) for k in (-1, -4)]
    ratio = gap[1] / gap[0] / np.sqrt(tr.ts[-1] / tr.ts[-4])
    assert ratio == pytest.approx(1.0, rel=0.2)


def test_zero_invariant_flow_shows_nc2_nc3_nc4_o6(collapsed):
    _, tr = collapsed
    s = State.unpack(tr.ys[-1], P)
    nc = collapse_metrics(s.H.T, class_major_labels(4, 5), s.W, s.b)
    s0 = State.unpack(tr.ys[0], P)
    nc0 = collapse_metrics(s0.H.T, class_major_labels(4, 5), s0.W, s0.b)
    assert nc["nc2_etf"] < 1e-8 < nc0["nc2_etf"]
    assert nc["nc3"] < 1e-2 < nc0["nc3"]
    assert nc["nc4"] == 0.0


def test_negative_invariant_reaches_zero_loss_without_nc1_o7(rng):
    p = BlockParams(n_classes=3, n_per_class=3, n_features=6, kappa_d=3.0, kappa_c=1.0, kappa_n=0.2)
    s0 = init_negative_invariant(p, rng=rng, feature_scale=1.0)
    assert np.linalg.eigvalsh(invariant(s0, p)).max() < 0
    tr = simulate_flow(s0, np.array([0.0, 1e3]), p)
    s = State.unpack(tr.ys[1], p)
    assert loss(s, p) < 1e-20
    S = within_class_gram(s.H, 3)
    assert np.linalg.norm(S) > 1.0
    # the within-class Gram settles at the negative part of E~ divided by m
    w, V = np.linalg.eigh(invariant_tilde(s, p))
    np.testing.assert_allclose(S, (V * np.clip(-w, 0, None)) @ V.T / 3, atol=1e-8 * np.abs(S).max())


def test_equal_bias_limits_match_corrected_theta_not_paper_o8(rng):
    p = BlockParams(n_classes=4, n_per_class=3, n_features=8, kappa_d=3.0, kappa_c=1.0, kappa_n=0.6)
    s0 = init_equal_bias(p, rng=rng, beta=0.6)
    assert np.abs(invariant(s0, p)).max() < 1e-12
    s = State.unpack(simulate_flow(s0, np.array([0.0, 2e3]), p).ys[1], p)
    beta = s.b[0]
    np.testing.assert_allclose(s.b, beta, atol=1e-12)
    C, m = 4, 3
    H1 = s.H.reshape(8, C, m).mean(axis=2)
    lim = predict_limits(p, s.b)
    np.testing.assert_allclose(s.W @ s.W.T, lim.WWt, atol=1e-8)  # (60)
    np.testing.assert_allclose(H1.T @ H1, lim.H1tH1, atol=1e-8)  # (63)
    Pc = np.eye(C) - 1.0 / C
    Mc = H1 - H1.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(Mc.T @ Mc, np.sqrt(p.mu_class / m) * Pc, atol=1e-8)  # (67)
    co = equal_bias_coefficients(p.alpha, beta, C)
    np.testing.assert_allclose(
        s.W @ s.W.T, np.sqrt(m / p.mu_class) * (np.eye(C) - co.gamma), atol=1e-8
    )  # (62)
    err = lambda th: np.linalg.norm(H1.T @ H1 - np.sqrt(p.mu_class / m) * (np.eye(C) - th))
    assert err(co.theta) < 1e-8
    assert err(co.theta_paper) > 0.05
    noisy = s.H.T + 1e-9 * rng.standard_normal((C * m, 8))
    nc = collapse_metrics(noisy, class_major_labels(C, m), s.W, s.b)
    assert nc["nc2_etf"] < 1e-6
    assert nc["nc3"] > 0.1


def test_general_bias_limits_eq60_eq63(rng):
    """E = 0 with uncentred class means and unequal biases: (60) and (63) at the limit."""
    p = BlockParams(n_classes=3, n_per_class=2, n_features=5, kappa_d=2.5, kappa_c=1.0, kappa_n=0.4)
    C, m, n = 3, 2, 5
    U, _ = np.linalg.qr(rng.standard_normal((n, C)))
    H1 = U @ rng.standard_normal((C, C))  # H1 1 != 0: nonzero global mean
    one = np.ones((C, 1))
    G = (m / p.mu_class) * H1 @ (np.eye(C) - p.alpha * one @ one.T) @ H1.T
    W = psd_sqrt(U.T @ G @ U) @ U.T
    s0 = State(compose_features(H1, np.zeros((n, C * (m - 1)))), W, 0.3 * rng.standard_normal(C))
    assert np.abs(invariant(s0, p)).max() < 1e-12
    s = State.unpack(simulate_flow(s0, np.array([0.0, 3e3]), p).ys[1], p)
    assert loss(s, p) < 1e-18
    lim = predict_limits(p, s.b)
    H1_end = s.H.reshape(n, C, m).mean(axis=2)
    np.testing.assert_allclose(s.W @ s.W.T, lim.WWt, atol=1e-8)
    np.testing.assert_allclose(H1_end.T @ H1_end, lim.H1tH1, atol=1e-8)
    assert np.ptp(s.b) > 1e-3  # the biases really are unequal
