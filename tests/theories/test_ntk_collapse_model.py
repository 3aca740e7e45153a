"""Oracles O3, O5, O9: the flows (19), (25), (20), (44), the loss, alpha
and the errata of eqs. (40), (46)."""

import numpy as np
import pytest
from ntk_collapse_helpers import P, _random_state

from ncdynamics.theories.labels import label_matrix
from ncdynamics.theories.ntk_collapse.blocks import feature_basis
from ncdynamics.theories.ntk_collapse.decomposition import (
    decompose_features,
)
from ncdynamics.theories.ntk_collapse.initial import (
    init_random,
)
from ncdynamics.theories.ntk_collapse.invariants import (
    invariant_tilde,
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
from ncdynamics.theories.ntk_collapse.simulate import simulate_flow


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


def test_loss_is_non_increasing_along_flow_o5(rng):
    s0 = _random_state(rng)
    tr = simulate_flow(s0, np.linspace(0, 5, 60), P, system="full")
    L = np.array([loss(State.unpack(tr.ys[k], P), P) for k in range(tr.ts.size)])
    assert np.all(np.diff(L) <= 1e-10 * L[0])


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
