"""simulate.py: the flows integrated by the ODE solver and by GD, as the shared Trajectory."""

import numpy as np
import pytest
from ntk_collapse_helpers import P, _random_state, _rel

from ncdynamics.theories.ntk_collapse.model import (
    State,
    drift_full,
)
from ncdynamics.theories.ntk_collapse.simulate import simulate_flow, simulate_gd


def test_flow_trajectory_is_time_first_packed_full_states(rng):
    s0 = _random_state(rng)
    ts = np.array([0.0, 0.5, 2.0])
    tr = simulate_flow(s0, ts, P)
    n, N, C = P.n_features, P.n_samples, P.n_classes
    assert tr.success
    np.testing.assert_array_equal(tr.ts, ts)
    assert tr.ys.shape == (3, n * N + C * n + C)
    assert tr.n_evals > 0
    path = State.unpack(tr.ys, P)
    assert (path.H.shape, path.W.shape, path.b.shape) == ((3, n, N), (3, C, n), (3, C))
    np.testing.assert_allclose(tr.ys[0], s0.pack(), atol=1e-12)  # recomposed from (H1, H2)
    k1 = State.unpack(tr.ys[1], P)
    np.testing.assert_array_equal(k1.H, path.H[1])


def test_decomposed_and_full_systems_give_the_same_flow(rng):
    s0 = _random_state(rng)
    ts = np.array([0.0, 0.3, 1.5])
    full = simulate_flow(s0, ts, P, system="full")
    dec = simulate_flow(s0, ts, P, system="decomposed")
    np.testing.assert_allclose(dec.ys, full.ys, rtol=1e-7, atol=1e-9)
    assert _rel(dec.ys[-1], dec.ys[0]) > 1e-2  # the state really moved


@pytest.mark.parametrize("system", ["full", "decomposed"])
def test_gd_is_euler_on_the_drift_and_records_every_kth_step(rng, system):
    s0 = _random_state(rng)
    eta = 1e-3
    tr = simulate_gd(s0, P, learning_rate=eta, n_steps=7, record_every=3, system=system)
    np.testing.assert_allclose(tr.ts, eta * np.array([0, 3, 6, 7]))
    y = s0.pack()
    for _ in range(3):  # three explicit Euler steps of the full flow (19)
        y = y + eta * drift_full(0.0, y, P)
    np.testing.assert_allclose(tr.ys[1], y, rtol=1e-10, atol=1e-12)


def test_gd_reports_divergence_instead_of_raising(rng):
    s0 = _random_state(rng)
    with np.errstate(over="ignore", invalid="ignore"):  # the overflow is the point
        tr = simulate_gd(s0, P, learning_rate=50.0, n_steps=200)
    assert not tr.success
    assert "diverged" in tr.message
    assert np.all(np.isfinite(tr.ys))  # only the finite states are kept


def test_bad_system_is_rejected(rng):
    s = _random_state(rng)
    with pytest.raises(ValueError, match="system"):
        simulate_flow(s, np.array([0.0, 1.0]), P, system="gd")
    with pytest.raises(ValueError, match="system"):
        simulate_gd(s, P, learning_rate=0.1, n_steps=1, system="sgd")
