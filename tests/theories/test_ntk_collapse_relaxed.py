"""Oracle O10: relaxed block structure of App. D, corrected signs."""

import numpy as np
import pytest

from ncdynamics.theories.ntk_collapse.decomposition import decompose_features
from ncdynamics.theories.ntk_collapse.model import (
    BlockParams,
    DecomposedState,
    State,
    drift_decomposed,
    drift_full,
)
from ncdynamics.theories.ntk_collapse.relaxed import (
    RelaxedParams,
    drift_relaxed,
    drift_relaxed_decomposed,
    relaxed_invariant,
    relaxed_invariant_derivative,
)

C, M, N_FEAT = 3, 4, 5


def _psd(rng, n):
    A = rng.standard_normal((n, n))
    return A @ A.T / n


def _centred_state(rng):
    H1 = rng.standard_normal((N_FEAT, C))
    H1 -= H1.mean(axis=1, keepdims=True)
    return DecomposedState(
        H1,
        rng.standard_normal((N_FEAT, C * (M - 1))),
        rng.standard_normal((C, N_FEAT)),
        rng.standard_normal(C),
    )


def _edot_fd(state, params, c1, c2, h=1e-6):
    y = state.pack()
    v = drift_relaxed_decomposed(0.0, y, params)
    E = lambda yy: relaxed_invariant(DecomposedState.unpack(yy, params), c1, c2)
    return (E(y + h * v) - E(y - h * v)) / (2 * h)


def test_edot_formula_matches_finite_difference_for_random_psd_kernels(rng):
    p = RelaxedParams(C, M, _psd(rng, N_FEAT), _psd(rng, N_FEAT), _psd(rng, N_FEAT))
    s = _centred_state(rng)
    c1, c2 = 0.7, 1.3
    fd = _edot_fd(s, p, c1, c2)
    an = relaxed_invariant_derivative(s, p, c1, c2)
    np.testing.assert_allclose(an, fd, rtol=1e-5, atol=1e-7 * np.abs(fd).max())
    # the paper's printed signs ('-' between the paired terms) do not match
    I = np.eye(N_FEAT)
    R1 = s.W @ s.H1 + s.b[:, None] - np.eye(C)
    B = p.A_d + M * p.A_c
    t1 = (c1 * B - M * I) @ s.W.T @ R1 @ s.H1.T
    t2 = (c2 * p.A_d - M * I) @ s.W.T @ s.W @ s.H2 @ s.H2.T
    printed = t1 - t1.T + t2 - t2.T
    assert np.linalg.norm(printed - fd) > 0.1 * np.linalg.norm(fd)


def test_edot_vanishes_for_scalar_kernels_with_matching_constants(rng):
    kd, kc = 1.7, 0.4
    p = RelaxedParams(C, M, kd * np.eye(N_FEAT), kc * np.eye(N_FEAT), _psd(rng, N_FEAT))
    s = _centred_state(rng)
    c1, c2 = M / (kd + M * kc), M / kd
    assert np.abs(relaxed_invariant_derivative(s, p, c1, c2)).max() < 1e-12
    assert np.abs(_edot_fd(s, p, c1, c2)).max() < 1e-7


def test_relaxed_flows_reduce_to_assumption_3_2(rng):
    bp = BlockParams(C, M, N_FEAT, kappa_d=3.0, kappa_c=1.0, kappa_n=0.2)
    I = np.eye(N_FEAT)
    p = RelaxedParams(C, M, bp.mu_single * I, (bp.kappa_c - bp.kappa_n) * I, bp.kappa_n * I)
    s = State(
        rng.standard_normal((N_FEAT, C * M)),
        rng.standard_normal((C, N_FEAT)),
        rng.standard_normal(C),
    )
    np.testing.assert_allclose(
        drift_relaxed(0.0, s.pack(), p), drift_full(0.0, s.pack(), bp), rtol=1e-12, atol=1e-12
    )
    H1, H2 = decompose_features(s.H, C)
    y = DecomposedState(H1, H2, s.W, s.b).pack()
    np.testing.assert_allclose(
        drift_relaxed_decomposed(0.0, y, p), drift_decomposed(0.0, y, bp), rtol=1e-12, atol=1e-12
    )


def test_relaxed_full_flow_projects_to_decomposed_flow(rng):
    p = RelaxedParams(C, M, _psd(rng, N_FEAT), _psd(rng, N_FEAT), _psd(rng, N_FEAT))
    s = State(
        rng.standard_normal((N_FEAT, C * M)),
        rng.standard_normal((C, N_FEAT)),
        rng.standard_normal(C),
    )
    d = State.unpack(drift_relaxed(0.0, s.pack(), p), p)
    H1, H2 = decompose_features(s.H, C)
    dd = DecomposedState.unpack(
        drift_relaxed_decomposed(0.0, DecomposedState(H1, H2, s.W, s.b).pack(), p), p
    )
    dH1, dH2 = decompose_features(d.H, C)
    np.testing.assert_allclose(dH1, dd.H1, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(dH2, dd.H2, rtol=1e-10, atol=1e-12)


def test_relaxed_rejects_uncentred_state_and_bad_shapes(rng):
    p = RelaxedParams(C, M, np.eye(N_FEAT), np.eye(N_FEAT), np.eye(N_FEAT))
    s = _centred_state(rng)
    bad = DecomposedState(s.H1 + 1.0, s.H2, s.W, s.b)
    with pytest.raises(ValueError, match="H1 1 = 0"):
        relaxed_invariant_derivative(bad, p, 1.0, 1.0)
    with pytest.raises(ValueError, match="A_c"):
        RelaxedParams(C, M, np.eye(3), np.eye(4), np.eye(3))
