"""Oracle O4: E (26), E_eot (27) and E~ (45) are conserved by their flows."""

import numpy as np
import pytest
from ntk_collapse_helpers import P, _random_state, _rel

from ncdynamics.theories.ntk_collapse.invariants import (
    invariant,
    invariant_end_of_training,
    invariant_tilde,
)
from ncdynamics.theories.ntk_collapse.model import (
    State,
    loss,
)
from ncdynamics.theories.ntk_collapse.simulate import simulate_flow, simulate_gd


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


def test_bad_state_is_rejected(rng):
    s = _random_state(rng)
    with pytest.raises(ValueError, match="`H` must have shape"):
        invariant(State(s.H.T, s.W, s.b), P)
    with pytest.raises(ValueError, match="finite"):
        invariant(State(s.H * np.nan, s.W, s.b), P)
