"""The estimate module: projection onto the Hadamard modes and the reduced-ODE fit."""

import numpy as np
import pytest

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.hadamard.estimate import fit_reduced, project_onto_hadamard
from ncdynamics.theories.hadamard.fast_batched_gd import run_gd
from ncdynamics.theories.hadamard.init import haar_orthogonal, matched_hadamard_init
from ncdynamics.theories.hadamard.metrics import top_singular_values
from ncdynamics.theories.ufm import state_matrices


def singular_values(traj, K):
    """Top K-1 singular values of Z at each record of a one-realisation GD trajectory."""
    return top_singular_values(state_matrices(traj.ys, K)[0])


def test_projection_separates_hadamard_and_random_runs(rng):
    W, H = hd.random_init(8, 8, delta=0.0, n_realizations=2, rng=rng)
    init = matched_hadamard_init(W, H, rng=rng)
    proj_h = project_onto_hadamard(init.W @ init.H)
    proj_r = project_onto_hadamard(W @ H)
    assert proj_h.residual.max() < 1e-13
    assert proj_r.residual.min() > 0.1
    np.testing.assert_allclose(proj_h.modes, init.sigma0, rtol=1e-12)
    np.testing.assert_allclose(proj_h.reduced, init.sigma0 / 8, rtol=1e-12)
    with pytest.raises(ValueError, match="power of 2"):
        project_onto_hadamard(np.ones((6, 6)))


def test_fit_recovers_time_scale_and_initial_values_from_hadamard_gd(rng):
    K, eta = 4, 0.01
    sigma0 = np.array([[0.02, 0.05, 0.1]])
    W, H = hd.hadamard_init(np.sqrt(sigma0), d=K, rotation=haar_orthogonal(K, rng=rng))
    steps = np.unique(np.geomspace(1, 1500, 30).astype(int))
    sigma = singular_values(run_gd(W[0], H[0], steps=steps, learning_rate=eta), K)
    fit = fit_reduced(steps, sigma, learning_rate=eta)
    assert fit.success
    assert fit.params.time_scale == pytest.approx(2 * eta, rel=1e-2)
    assert fit.extra["time_scale_theory"] == pytest.approx(2 * eta)
    np.testing.assert_allclose(fit.params.predict(steps), sigma, rtol=2e-2)
    assert fit.loss < 1e-4


def test_fit_flags_a_wrong_learning_rate(rng):
    K, eta = 4, 0.01
    W, H = hd.hadamard_init(np.sqrt([[0.02, 0.05, 0.1]]), d=K)
    steps = np.unique(np.geomspace(1, 1500, 30).astype(int))
    sigma = singular_values(run_gd(W[0], H[0], steps=steps, learning_rate=eta), K)
    fixed = fit_reduced(steps, sigma, learning_rate=2 * eta, fit_time_scale=False)
    free = fit_reduced(steps, sigma, learning_rate=2 * eta)
    assert fixed.loss > 100 * free.loss
    assert free.params.time_scale == pytest.approx(2 * eta, rel=1e-2)


def test_fit_without_learning_rate_starts_from_the_best_candidate_scale(rng):
    K, eta = 4, 0.01
    W, H = hd.hadamard_init(np.sqrt([[0.02, 0.05, 0.1]]), d=K)
    steps = np.unique(np.geomspace(1, 1500, 30).astype(int))
    sigma = singular_values(run_gd(W[0], H[0], steps=steps, learning_rate=eta), K)
    fit = fit_reduced(steps, sigma, learning_rate=None, start_scales=[1e-4, 1e-2, 1.0])
    assert fit.params.time_scale == pytest.approx(2 * eta, rel=1e-2)
    assert np.isnan(fit.extra["time_scale_theory"])
    with pytest.raises(ValueError, match="learning_rate"):
        fit_reduced(steps, sigma, learning_rate=None)
    with pytest.raises(ValueError, match="start_scales"):
        fit_reduced(steps, sigma, learning_rate=None, start_scales=[0.1, -1.0])


def test_fit_rejects_bad_input():
    with pytest.raises(ValueError, match="power of 2"):
        fit_reduced([0, 1, 2], np.ones((3, 4)), learning_rate=0.1)
    with pytest.raises(ValueError, match="positive"):
        fit_reduced([0, 1], np.zeros((2, 3)), learning_rate=0.1)
    with pytest.raises(ValueError, match="shape"):
        fit_reduced([0, 1], np.ones((3, 3)), learning_rate=0.1)
