"""Oracles for the standard-cost flows with a trained output map ([1] Secs. 8, 9;
corrections 9 and 10 of docs/theories/truncation.md)."""

import numpy as np
import pytest

from ncdynamics.theories.integrate import solve_ode
from ncdynamics.theories.truncation.network import random_orthogonal
from ncdynamics.theories.truncation.output_layer import (
    BilinearParams,
    LinearRegressionParams,
    bilinear_cost,
    bilinear_drift,
    bilinear_gd,
    bilinear_invariant,
    bilinear_propagator_drift,
    linreg_closed_form,
    linreg_drift,
    linreg_limit,
)


def test_bilinear_flow_conserves_invariant_and_obeys_cost_bound(rng):
    q = 3
    Y = rng.standard_normal((q, q))
    B0 = 2 * random_orthogonal(q, rng=rng) + 0.3 * rng.standard_normal((q, q))
    W0 = 0.3 * rng.standard_normal((q, q))
    inv0 = bilinear_invariant(W0, B0)
    lam0 = np.linalg.eigvalsh(inv0).min()
    assert lam0 > 0
    ts = np.linspace(0, 5, 51)
    traj = solve_ode(
        bilinear_drift,
        np.stack([W0, B0]),
        ts,
        BilinearParams(Y),
        method="DOP853",
        rtol=1e-11,
        atol=1e-13,
    )
    assert traj.success
    drift = max(np.abs(bilinear_invariant(w, b) - inv0).max() for w, b in traj.ys)
    assert drift <= 1e-8
    costs = np.array([bilinear_cost(w, b, Y) for w, b in traj.ys])
    assert np.all(costs <= np.exp(-2 * lam0 * ts) * costs[0] * (1 + 1e-8))


def test_bilinear_gradient_descent_invariant_changes_by_eta_squared(rng):
    q = 3
    Y, W, B = (rng.standard_normal((q, q)) for _ in range(3))
    eta = 0.05
    E = W @ B + Y
    W1, B1 = W - eta * E @ B.T, B - eta * W.T @ E
    jump = bilinear_invariant(W1, B1) - bilinear_invariant(W, B)
    np.testing.assert_allclose(jump, eta**2 * (W.T @ E @ E.T @ W - B @ E.T @ E @ B.T), atol=1e-12)


def test_bilinear_propagators_reproduce_residual(rng):
    q = 3
    Y = rng.standard_normal((q, q))
    W0, B0 = rng.standard_normal((q, q)), rng.standard_normal((q, q)) + 2 * np.eye(q)
    y0 = np.stack([W0, B0, np.eye(q), np.eye(q)])
    ts = np.linspace(0, 1, 11)
    traj = solve_ode(
        bilinear_propagator_drift,
        y0,
        ts,
        BilinearParams(Y),
        method="DOP853",
        rtol=1e-11,
        atol=1e-13,
    )
    e0 = W0 @ B0 + Y
    for w, b, ul, ur in traj.ys:
        np.testing.assert_allclose(w @ b + Y, ul @ e0 @ ur, atol=1e-8)


@pytest.mark.parametrize("weighting", ["global", "per_cluster"])
def test_linear_regression_closed_form(rng, weighting):
    q, counts = 3, np.array([4, 4, 4])
    X = rng.standard_normal((q, counts.sum()))
    labels = np.repeat(np.arange(q), counts)
    Y_ext = rng.standard_normal((q, q))[:, labels]
    w = np.full(12, 1 / 12) if weighting == "global" else 1.0 / counts[labels]
    par = LinearRegressionParams(X, Y_ext, w)
    W0 = rng.standard_normal((q, q))
    ts = np.linspace(0, 6, 31)
    traj = solve_ode(linreg_drift, W0, ts, par, method="DOP853", rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(linreg_closed_form(W0, ts, par), traj.ys, atol=1e-10)
    w_inf = Y_ext @ np.diag(w) @ X.T @ np.linalg.inv(X @ np.diag(w) @ X.T)
    np.testing.assert_allclose(linreg_limit(par), w_inf, atol=1e-10)
    np.testing.assert_allclose(linreg_closed_form(W0, np.array([1e4]), par)[0], w_inf, atol=1e-10)


def test_paper_propagator_generators_do_not_reproduce_residual(rng):
    """[1] (8.9) as printed (-U B B^T, -W^T W U) does not give E(s) = U_W E(0) U_B."""
    q = 3
    Y = rng.standard_normal((q, q))
    W0, B0 = rng.standard_normal((q, q)), rng.standard_normal((q, q)) + 2 * np.eye(q)
    par = BilinearParams(Y)

    def printed(t, y, params):
        W, B, UW, UB = y
        head = bilinear_drift(t, y[:2], params)
        return np.concatenate([head, np.stack([-W.T @ W @ UW, -UB @ B @ B.T])])

    y0 = np.stack([W0, B0, np.eye(q), np.eye(q)])
    traj = solve_ode(
        printed, y0, np.array([0.0, 0.5]), par, method="DOP853", rtol=1e-11, atol=1e-13
    )
    w, b, uw, ub = traj.ys[-1]
    assert np.abs(w @ b + Y - uw @ (W0 @ B0 + Y) @ ub).max() > 1e-3


def test_linear_regression_params_reject_non_positive_weights():
    with pytest.raises(ValueError, match="`weights`"):
        LinearRegressionParams(np.eye(2), np.eye(2), np.array([1.0, 0.0]))


def test_bilinear_gd_invariant_jump_at_every_step(rng):
    q, eta = 3, 0.02
    Y, W0, B0 = (rng.standard_normal((q, q)) for _ in range(3))
    traj = bilinear_gd(W0, B0, BilinearParams(Y), eta=eta, n_steps=5)
    np.testing.assert_allclose(traj.ts, eta * np.arange(6), rtol=0, atol=1e-15)
    np.testing.assert_array_equal(traj.ys[0], np.stack([W0, B0]))
    for (W, B), (W1, B1) in zip(traj.ys[:-1], traj.ys[1:], strict=True):
        E = W @ B + Y
        jump = bilinear_invariant(W1, B1) - bilinear_invariant(W, B)
        expected = eta**2 * (W.T @ E @ E.T @ W - B @ E.T @ E @ B.T)
        np.testing.assert_allclose(jump, expected, atol=1e-12)
    costs = [bilinear_cost(W, B, Y) for W, B in traj.ys]
    assert costs[-1] < costs[0]
