"""Theorem 8 (spec T22) and the estimate module (projection and reduced-ODE fit)."""

import numpy as np
import pytest

from ncdynamics.theories import hadamard as hd


def thm8_error(eps, rng, K=4, d=4, draws=3):
    errs = []
    for _ in range(draws):
        init = hd.theorem8_init(K, d, eps=eps, rng=rng)
        flow = hd.solve_gradient_flow(init.W[0], init.H[0], [0.0, hd.thm8_time(eps)])
        assert flow.success
        Z = flow.W[-1] @ flow.H[-1]
        pred = hd.thm8_prediction(init.A1[0], init.A0[0], eps)
        errs.append(np.linalg.norm(Z - pred) / np.linalg.norm(pred))
    return float(np.mean(errs))


def test_theorem8_prediction_error_shrinks_with_eps(rng):
    errs = [thm8_error(eps, rng) for eps in (1e-4, 1e-6, 1e-8)]
    assert errs[0] < 2e-2
    assert errs[2] < 1e-3
    assert errs[0] > errs[1] > errs[2]


def test_theorem8_etf_distance_shrinks_with_width(rng):
    K, eps, eta = 8, 1e-4, 0.01
    k = int(round(hd.thm8_time(eps) / eta))
    dist = []
    for d in (8, 80, 800):
        init = hd.theorem8_init(K, d, eps=eps, n_realizations=4, rng=rng)
        res = hd.run_gd(init.W, init.H, steps=[k], learning_rate=eta)
        dist.append(hd.etf_distance(res.Z[-1]).mean())
    assert dist[0] > dist[1] > dist[2]
    np.testing.assert_allclose(dist[1:], np.sqrt(K / np.array([80, 800])), rtol=0.35)


def test_theorem8_large_width_limit_is_simplex_etf(rng):
    K, d, eps = 4, 4000, 1e-4
    init = hd.theorem8_init(K, d, eps=eps, rng=rng)
    pred = hd.thm8_prediction(init.A1[0], init.A0[0], eps)
    limit = hd.thm8_limit(K, eps)
    assert np.linalg.norm(pred - limit) / np.linalg.norm(limit) < 0.1


def test_theorem8_time_and_bad_eps():
    assert hd.thm8_time(np.exp(-6.0), n=4) == pytest.approx(6.0 / 4)
    with pytest.raises(ValueError, match="eps"):
        hd.thm8_time(0.0)


def test_projection_separates_hadamard_and_random_runs(rng):
    W, H = hd.random_init(8, 8, delta=0.0, n_realizations=2, rng=rng)
    init = hd.matched_hadamard_init(W, H, rng=rng)
    proj_h = hd.project_onto_hadamard(init.W @ init.H)
    proj_r = hd.project_onto_hadamard(W @ H)
    assert proj_h.residual.max() < 1e-13
    assert proj_r.residual.min() > 0.1
    np.testing.assert_allclose(proj_h.modes, init.sigma0, rtol=1e-12)
    np.testing.assert_allclose(proj_h.reduced, init.sigma0 / 8, rtol=1e-12)
    with pytest.raises(ValueError, match="power of 2"):
        hd.project_onto_hadamard(np.ones((6, 6)))


def test_fit_recovers_time_scale_and_initial_values_from_hadamard_gd(rng):
    K, eta = 4, 0.01
    sigma0 = np.array([[0.02, 0.05, 0.1]])
    W, H = hd.hadamard_init(np.sqrt(sigma0), d=K, rotation=hd.haar_orthogonal(K, rng=rng))
    steps = np.unique(np.geomspace(1, 1500, 30).astype(int))
    res = hd.run_gd(W, H, steps=steps, learning_rate=eta)
    sigma = hd.top_singular_values(res.Z[:, 0])
    fit = hd.fit_reduced(steps, sigma, learning_rate=eta)
    assert fit.success
    assert fit.params.time_scale == pytest.approx(2 * eta, rel=1e-2)
    assert fit.extra["time_scale_theory"] == pytest.approx(2 * eta)
    np.testing.assert_allclose(fit.params.predict(steps), sigma, rtol=2e-2)
    assert fit.loss < 1e-4


def test_fit_flags_a_wrong_learning_rate(rng):
    K, eta = 4, 0.01
    W, H = hd.hadamard_init(np.sqrt([[0.02, 0.05, 0.1]]), d=K)
    steps = np.unique(np.geomspace(1, 1500, 30).astype(int))
    sigma = hd.top_singular_values(hd.run_gd(W, H, steps=steps, learning_rate=eta).Z[:, 0])
    fixed = hd.fit_reduced(steps, sigma, learning_rate=2 * eta, fit_time_scale=False)
    free = hd.fit_reduced(steps, sigma, learning_rate=2 * eta)
    assert fixed.loss > 100 * free.loss
    assert free.params.time_scale == pytest.approx(2 * eta, rel=1e-2)


def test_fit_without_learning_rate_starts_from_the_best_candidate_scale(rng):
    K, eta = 4, 0.01
    W, H = hd.hadamard_init(np.sqrt([[0.02, 0.05, 0.1]]), d=K)
    steps = np.unique(np.geomspace(1, 1500, 30).astype(int))
    sigma = hd.top_singular_values(hd.run_gd(W, H, steps=steps, learning_rate=eta).Z[:, 0])
    fit = hd.fit_reduced(steps, sigma, learning_rate=None, start_scales=[1e-4, 1e-2, 1.0])
    assert fit.params.time_scale == pytest.approx(2 * eta, rel=1e-2)
    assert np.isnan(fit.extra["time_scale_theory"])
    with pytest.raises(ValueError, match="learning_rate"):
        hd.fit_reduced(steps, sigma, learning_rate=None)
    with pytest.raises(ValueError, match="start_scales"):
        hd.fit_reduced(steps, sigma, learning_rate=None, start_scales=[0.1, -1.0])


def test_fit_rejects_bad_input():
    with pytest.raises(ValueError, match="power of 2"):
        hd.fit_reduced([0, 1, 2], np.ones((3, 4)), learning_rate=0.1)
    with pytest.raises(ValueError, match="positive"):
        hd.fit_reduced([0, 1], np.zeros((2, 3)), learning_rate=0.1)
    with pytest.raises(ValueError, match="shape"):
        hd.fit_reduced([0, 1], np.ones((3, 3)), learning_rate=0.1)
