"""Oracles O3-O9 (spec ntk_collapse §4): flows (19), (25), (20), (44), invariants and limits."""

import numpy as np
import pytest

from ncdynamics.probes.collapse import collapse_metrics
from ncdynamics.theories.labels import label_matrix
from ncdynamics.theories.ntk_collapse.blocks import feature_basis
from ncdynamics.theories.ntk_collapse.decomposition import (
    compose_features,
    decompose_features,
    within_class_gram,
)
from ncdynamics.theories.ntk_collapse.initial import (
    init_equal_bias,
    init_negative_invariant,
    init_random,
    init_zero_invariant,
)
from ncdynamics.theories.ntk_collapse.invariants import (
    invariant,
    invariant_end_of_training,
    invariant_tilde,
)
from ncdynamics.theories.ntk_collapse.limits import (
    equal_bias_coefficients,
    predict_limits,
    psd_sqrt,
)
from ncdynamics.theories.ntk_collapse.model import (
    BlockParams,
    DecomposedState,
    State,
    drift_decomposed,
    drift_end_of_training_decomposed,
    drift_full,
    loss,
)
from ncdynamics.theories.ntk_collapse.simulate import simulate_flow, simulate_gd

P = BlockParams(n_classes=4, n_per_class=5, n_features=12, kappa_d=3.0, kappa_c=1.0, kappa_n=0.2)


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _random_state(rng, p=P, bias=0.3):
    return init_random(p, rng=rng, feature_scale=0.7, weight_scale=1.0, bias_scale=bias)


def test_full_flow_projected_with_q_equals_decomposed_flow_o3(rng):
    s = _random_state(rng)
    d = State.unpack(drift_full(0.0, s.pack(), P), P)
    m = P.n_per_class
    Q1, Q2 = feature_basis(P.n_classes, m)
    H1, H2 = decompose_features(s.H, P.n_classes)
    y = DecomposedState(H1, H2, s.W, s.b).pack()
    dd = DecomposedState.unpack(drift_decomposed(0.0, y, P), P)
    np.testing.assert_allclose(d.H @ Q1 / np.sqrt(m), dd.H1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d.H @ Q2 / np.sqrt(m), dd.H2, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d.W, dd.W, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(d.b, dd.b, rtol=1e-10, atol=1e-12)


def test_full_flow_equals_kernel_form_of_theorem_4_1(rng):
    s = _random_state(rng)
    d = State.unpack(drift_full(0.0, s.pack(), P), P)
    Y = label_matrix(4, 5)
    R = s.W @ s.H + s.b[:, None] - Y
    np.testing.assert_allclose(d.H, -s.W.T @ R @ P.feature_kernel(), rtol=1e-12)
    np.testing.assert_allclose(d.W, -R @ s.H.T, rtol=1e-12)


def test_h2_gram_via_basis_equals_within_scatter_over_m_o3(rng):
    H = rng.standard_normal((7, 20))
    _, H2 = decompose_features(H, 4)
    np.testing.assert_allclose(H2 @ H2.T, within_class_gram(H, 4), atol=1e-12)
    H1, _ = decompose_features(H, 4)
    np.testing.assert_allclose(H1, H.reshape(7, 4, 5).mean(axis=2), atol=1e-12)


def test_invariant_is_conserved_along_gradient_flow_o4(rng):
    s0 = _random_state(rng)
    E0 = invariant(s0, P)
    for system in ("full", "decomposed"):
        tr = simulate_flow(s0, np.array([0.0, 0.5, 3.0]), P, system=system)
        assert tr.success
        for k in range(tr.ts.size):
            assert _rel(invariant(State.unpack(tr.ys[k], P), P), E0) < 1e-8
    # and the loss really moved
    assert loss(State.unpack(tr.ys[-1], P), P) < 0.5 * loss(s0, P)


def test_end_of_training_invariants_are_conserved_o4(rng):
    s0 = _random_state(rng)
    tr = simulate_flow(s0, np.array([0.0, 2.0]), P, system="end-of-training")
    assert (
        _rel(
            invariant_end_of_training(State.unpack(tr.ys[1], P), P),
            invariant_end_of_training(s0, P),
        )
        < 1e-8
    )
    tr = simulate_flow(s0, np.array([0.0, 2.0]), P, system="end-of-training-decomposed")
    assert _rel(invariant_tilde(State.unpack(tr.ys[1], P), P), invariant_tilde(s0, P)) < 1e-8
    # E itself is not conserved by (20): the invariants differ
    tr = simulate_flow(s0, np.array([0.0, 2.0]), P, system="end-of-training")
    assert _rel(invariant(State.unpack(tr.ys[1], P), P), invariant(s0, P)) > 1e-3


def test_invariant_drift_under_gd_is_first_order_in_step_o4(rng):
    s0 = _random_state(rng)
    E0 = invariant(s0, P)
    drifts = []
    for eta in (4e-3, 2e-3, 1e-3):
        tr = simulate_gd(
            s0, P, learning_rate=eta, n_steps=int(round(2.0 / eta)), record_every=10**9
        )
        drifts.append(np.linalg.norm(invariant(State.unpack(tr.ys[-1], P), P) - E0))
    ratios = np.array(drifts[:-1]) / np.array(drifts[1:])
    np.testing.assert_allclose(ratios, 2.0, rtol=0.2)


def test_loss_is_non_increasing_along_flow_o5(rng):
    s0 = _random_state(rng)
    tr = simulate_flow(s0, np.linspace(0, 5, 60), P, system="full")
    L = np.array([loss(State.unpack(tr.ys[k], P), P) for k in range(tr.ts.size)])
    assert np.all(np.diff(L) <= 1e-10 * L[0])


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
    nc = collapse_metrics(s.H.T, np.repeat(np.arange(4), 5), s.W, s.b)
    s0 = State.unpack(tr.ys[0], P)
    nc0 = collapse_metrics(s0.H.T, np.repeat(np.arange(4), 5), s0.W, s0.b)
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
    nc = collapse_metrics(noisy, np.repeat(np.arange(C), m), s.W, s.b)
    assert nc["nc2_etf"] < 1e-6
    assert nc["nc3"] > 0.1


def test_alpha_identities_o9():
    p = P
    m, C = p.n_per_class, p.n_classes
    from_69 = 1.0 / ((p.kappa_c / p.kappa_n) * (1 - 1 / m) + (p.kappa_d / p.kappa_n) / m + C - 1)
    assert p.alpha == pytest.approx(from_69, rel=1e-12)
    one = np.ones((C, 1))
    inv = np.linalg.inv(np.eye(C) + (p.kappa_n * m / p.mu_class) * one @ one.T)
    np.testing.assert_allclose(inv, np.eye(C) - p.alpha * one @ one.T, atol=1e-12)
    assert p.alpha < 1.0 / C


def test_paper_sign_of_eq40_breaks_conservation(rng):
    s = _random_state(rng)
    H1, H2 = decompose_features(s.H, 4)
    y = DecomposedState(H1, H2, s.W, s.b).pack()

    def edot(drift):
        h = 1e-6

        def E_at(yy):
            d = DecomposedState.unpack(yy, P)
            g = d.H1.mean(axis=1)
            return (
                d.W.T @ d.W / 5
                - (d.H1 @ d.H1.T - P.alpha * 16 * np.outer(g, g)) / P.mu_class
                - d.H2 @ d.H2.T / P.mu_single
            )

        return (E_at(y + h * drift(y)) - E_at(y - h * drift(y))) / (2 * h)

    right = edot(lambda yy: drift_decomposed(0.0, yy, P))

    def paper(yy):
        d = DecomposedState.unpack(drift_decomposed(0.0, yy, P), P)
        s_ = DecomposedState.unpack(yy, P)
        dW = d.W + 2 * 5 * s_.W @ s_.H2 @ s_.H2.T  # flip the sign of the W H2 H2^T term
        return DecomposedState(d.H1, d.H2, dW, d.b).pack()

    wrong = edot(paper)
    assert np.abs(right).max() < 1e-7
    assert np.abs(wrong).max() > 1e-2


def test_eq46_without_extra_mu_single_matches_eq44(rng):
    p = BlockParams(
        n_classes=3, n_per_class=4, n_features=6, kappa_d=4.0, kappa_c=1.5, kappa_n=0.5
    )  # mu_single = 2.5 != 1
    s = init_random(p, rng=rng)
    H1, H2 = decompose_features(s.H, 3)
    d = DecomposedState.unpack(
        drift_end_of_training_decomposed(0.0, DecomposedState(H1, H2, s.W, s.b).pack(), p), p
    )
    Et = invariant_tilde(s, p)
    S = H2 @ H2.T
    np.testing.assert_allclose(d.H2, -(Et + 4 * S) @ H2, atol=1e-12)
    assert np.abs(d.H2 + p.mu_single * (Et + 4 * S) @ H2).max() > 1e-3
    np.testing.assert_allclose(d.W, -s.W @ (p.mu_single * s.W.T @ s.W - Et), atol=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(kappa_d=1.0, kappa_c=1.0, kappa_n=0.1), "kappa_d"),
        (dict(kappa_d=2.0, kappa_c=0.1, kappa_n=0.5), "kappa_c"),
        (dict(kappa_d=2.0, kappa_c=1.0, kappa_n=-0.1), "kappa_n"),
        (dict(kappa_d=np.inf, kappa_c=1.0, kappa_n=0.1), "kappa_d"),
    ],
)
def test_bad_block_params_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        BlockParams(n_classes=3, n_per_class=2, n_features=4, **kwargs)


def test_bad_state_and_system_are_rejected(rng):
    s = _random_state(rng)
    with pytest.raises(ValueError, match="system"):
        simulate_flow(s, np.array([0.0, 1.0]), P, system="gd")
    with pytest.raises(ValueError, match="`H` must have shape"):
        invariant(State(s.H.T, s.W, s.b), P)
    with pytest.raises(ValueError, match="finite"):
        invariant(State(s.H * np.nan, s.W, s.b), P)


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
