"""Theorem 8 ([1] §5, App. D.6): small Gaussian initialisation and the prediction of Z(t*)."""

import numpy as np
import pytest

from ncdynamics.theories.hadamard.fast_batched_gd import run_gd
from ncdynamics.theories.hadamard.init import theorem8_init
from ncdynamics.theories.hadamard.theorem8 import (
    etf_distance,
    thm8_limit,
    thm8_prediction,
    thm8_time,
)
from ncdynamics.theories.ufm import solve_gradient_flow, state_matrices, unpack_state


def thm8_error(eps, rng, K=4, d=4, draws=3):
    errs = []
    for _ in range(draws):
        init = theorem8_init(K, d, eps=eps, rng=rng)
        flow = solve_gradient_flow(init.W[0], init.H[0], [0.0, thm8_time(eps)])
        assert flow.success
        W_end, H_end = unpack_state(flow.ys[-1], K)
        Z = W_end @ H_end
        pred = thm8_prediction(init.A1[0], init.A0[0], eps)
        errs.append(np.linalg.norm(Z - pred) / np.linalg.norm(pred))
    return float(np.mean(errs))


def test_theorem8_prediction_error_shrinks_with_eps(rng):
    errs = [thm8_error(eps, rng) for eps in (1e-4, 1e-6, 1e-8)]
    assert errs[0] < 2e-2
    assert errs[2] < 1e-3
    assert errs[0] > errs[1] > errs[2]


def test_theorem8_etf_distance_shrinks_with_width(rng):
    K, eps, eta = 8, 1e-4, 0.01
    k = int(round(thm8_time(eps) / eta))
    dist = []
    for d in (8, 80, 800):
        init = theorem8_init(K, d, eps=eps, n_realizations=4, rng=rng)
        res = run_gd(init.W, init.H, steps=[k], learning_rate=eta)
        Z, _, _ = state_matrices(res.ys[:, -1], K)  # (R, K, K)
        dist.append(etf_distance(Z).mean())
    assert dist[0] > dist[1] > dist[2]
    np.testing.assert_allclose(dist[1:], np.sqrt(K / np.array([80, 800])), rtol=0.35)


def test_theorem8_large_width_limit_is_simplex_etf(rng):
    K, d, eps = 4, 4000, 1e-4
    init = theorem8_init(K, d, eps=eps, rng=rng)
    pred = thm8_prediction(init.A1[0], init.A0[0], eps)
    limit = thm8_limit(K, eps)
    assert np.linalg.norm(pred - limit) / np.linalg.norm(limit) < 0.1


def test_theorem8_time_and_bad_eps():
    assert thm8_time(np.exp(-6.0), n=4) == pytest.approx(6.0 / 4)
    with pytest.raises(ValueError, match="eps"):
        thm8_time(0.0)
