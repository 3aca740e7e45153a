"""The fast drift and Jacobian of the fit against the reference ``model.drift``."""

import numpy as np
import pytest

from ncdynamics.theories.alignment import fast_drift, model
from ncdynamics.theories.alignment.estimate import simulate
from ncdynamics.theories.integrate import solve_ode

N_DRAWS = 40


def _draws(rng, variant):
    """Random parameters and states: rates over four decades, ``a`` away from 0, ``b`` and
    ``w`` of either sign and different sizes, so that no entry of the Jacobian vanishes and
    it is far from symmetric."""
    for _ in range(N_DRAWS):
        rh, ry = np.exp(rng.uniform(np.log(1e-3), np.log(10.0), size=2))
        X, Y = rng.uniform(0.1, 3.0), rng.uniform(0.0, 3.0)
        p = model.AlignmentParams(float(rh), float(ry), float(X), float(Y), variant)
        y = np.array([rng.uniform(0.05, 3.0), rng.uniform(0.01, 3.0), rng.uniform(-2.0, 2.0)])
        yield p, y


def _fd_jacobian(p, y):
    cols = []
    for k in range(3):
        h = 1e-6 * max(abs(y[k]), 1e-2)
        e = np.zeros(3)
        e[k] = h
        cols.append((model.drift(0.0, y + e, p) - model.drift(0.0, y - e, p)) / (2 * h))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("variant", model.VARIANTS)
def test_fast_drift_equals_reference_drift(variant, rng):
    for p, y in _draws(rng, variant):
        fast = fast_drift.drift(y, 0.0, *fast_drift.odeint_args(p))
        np.testing.assert_allclose(fast, model.drift(0.0, y, p), rtol=1e-13, atol=0)


@pytest.mark.parametrize("variant", model.VARIANTS)
def test_fast_jacobian_equals_reference_and_finite_differences(variant, rng):
    for p, y in _draws(rng, variant):
        J = np.array(fast_drift.jacobian(y, 0.0, *fast_drift.odeint_args(p)))
        np.testing.assert_allclose(J, model.jacobian(0.0, y, p), rtol=1e-13, atol=0)
        fd = _fd_jacobian(p, y)
        scale = np.max(np.abs(fd))
        np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-8 * scale)
        assert np.max(np.abs(J - J.T)) > 1e-3 * scale  # a transposed kernel would fail


def test_fast_path_solution_equals_reference_solution():
    # estimate.simulate (odeint on the fast kernels) against solve_ode on model.drift
    p = model.AlignmentParams(0.031, 0.47, 0.8, 1.3, "eq7")
    y0 = np.array([0.4, 0.05, -0.12])
    ts = np.linspace(0.0, 40.0, 81)
    fast = simulate(y0, ts, p, rtol=1e-11, atol=1e-14)
    ref = solve_ode(model.drift, y0, ts, p, rtol=1e-11, atol=1e-14)
    assert fast.success and ref.success
    np.testing.assert_allclose(fast.ys, ref.ys, rtol=1e-7, atol=1e-10)
