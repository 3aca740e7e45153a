"""Oracles for the real network by autograd, its descent, and the fit helpers."""

import numpy as np
import pytest

from ncdynamics.theories import truncation as tr
from ncdynamics.theories.integrate import Trajectory
from ncdynamics.theories.truncation.design import random_config
from ncdynamics.theories.truncation.estimate import (
    fit_log_rate,
    layer_descent,
    network_descent,
    network_gradients,
    output_descent,
    trajectory_gap,
)
from ncdynamics.theories.truncation.integrators import FlowResult, pack_state
from ncdynamics.theories.truncation.model import general_gradients
from ncdynamics.theories.truncation.network import (
    AdaptedParams,
    ClusterData,
    cumulative_to_layers,
    euclidean_cost,
    standard_cost,
)
from ncdynamics.theories.truncation.output_layer import LinearRegressionParams, linreg_limit


def _config(rng, q=3, counts=(4, 5, 3), wstar=False):
    data, params = random_config(q, counts, rng=rng)
    if wstar:
        params = AdaptedParams(params.R, params.beta, rng.uniform(0.5, 2.0, (q, q)))
    return data, params


def test_autograd_through_layered_network_matches_backprop(rng):
    data, params = _config(rng, q=4, counts=(3, 6, 4, 5), wstar=True)
    net = network_gradients(params, data)
    g = general_gradients(params, data)
    np.testing.assert_allclose(net.grad_beta, g.grad_beta, atol=1e-10)
    np.testing.assert_allclose(net.omega, g.omega, atol=1e-10)
    W_out, y = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    net = network_gradients(params, data, W_out=W_out, y=y)
    g = general_gradients(params, data, W_out=W_out, y=y)
    np.testing.assert_allclose(net.grad_beta, g.grad_beta, atol=1e-10)
    np.testing.assert_allclose(net.omega, g.omega, atol=1e-10)
    assert net.cost == pytest.approx(standard_cost(params, data, W_out, y), abs=1e-12)


def test_layer_descent_starts_at_the_euclidean_cost_with_zero_defect(rng):
    design = tr.simplex_design(3, n_per=6, wstar=True, rng=rng)
    res = layer_descent(design.params, design.data, eta=1e-3, n_steps=2)
    assert res.cost[0] == pytest.approx(euclidean_cost(design.params, design.data), abs=1e-12)
    assert np.all(res.defect[0] < 1e-12)
    assert res.cost[-1] < res.cost[0]
    assert isinstance(res, Trajectory)
    np.testing.assert_array_equal(res.ts, [0.0, 1e-3, 2e-3])
    W0, b0 = cumulative_to_layers(design.params.cumulative_weights(), design.params.beta)
    np.testing.assert_array_equal(res.ys[0], pack_state(W0, b0))
    assert np.abs(res.ys[-1] - res.ys[0]).max() > 0


def test_network_descent_follows_the_separated_flow(rng):
    design = tr.simplex_design(3, n_per=6, wstar=True, rng=rng)
    eff = tr.separated_flow(design.params, design.data, eta=2e-3, n_steps=20, record_every=5)
    net = network_descent(design.params, design.data, eta=2e-3, n_steps=20, record_every=10)
    gap = trajectory_gap(eff, net)
    np.testing.assert_array_equal(gap.s, net.ts)
    assert max(gap.beta, gap.R) < 1e-10 and gap.cost < 1e-10


def test_fit_log_rate_recovers_an_exponential_rate():
    s = np.linspace(0.0, 3.0, 31)
    assert fit_log_rate(s, 2.0 * np.exp(-0.7 * s)) == pytest.approx(0.7, rel=1e-12)
    with pytest.raises(ValueError, match="`values`"):
        fit_log_rate(s, np.zeros_like(s))


def test_trajectory_gap_needs_a_common_time(rng):
    design = tr.simplex_design(2, n_per=4, rng=rng)
    a = tr.separated_flow(design.params, design.data, eta=0.1, n_steps=1, record_every=1)
    b = tr.separated_flow(design.params, design.data, eta=0.03, n_steps=3, record_every=3)
    with pytest.raises(ValueError, match="share no recorded time"):
        trajectory_gap(FlowResult(**{**a.__dict__, "ts": a.ts[1:], "ys": a.ys[1:]}), b)


def test_output_descent_on_untruncated_data_is_discrete_linear_regression(rng):
    q, eta, n_steps = 3, 0.05, 12
    labels = np.repeat(np.arange(q), 4)
    x, y = rng.standard_normal((labels.size, q)), rng.standard_normal((q, q))
    data = ClusterData(x, labels, y)
    far = AdaptedParams(np.stack([np.eye(q)] * q), np.full((q, q), 10.0))  # nothing truncated
    W0 = rng.standard_normal((q, q))
    res = output_descent(
        far, data, W0, y, eta=eta, n_steps=n_steps, train_hidden=False, weighting="global"
    )
    assert isinstance(res, Trajectory) and res.ys.shape == (n_steps + 1, q, q)
    par = LinearRegressionParams(x.T, y[labels].T, np.full(labels.size, 1 / labels.size))
    w_inf = linreg_limit(par)
    A = x.T @ x / labels.size
    for k, W in enumerate(res.ys):
        expected = w_inf + (W0 - w_inf) @ np.linalg.matrix_power(np.eye(q) - eta * A, k)
        np.testing.assert_allclose(W, expected, atol=1e-12)
    assert np.all(res.hidden == res.hidden[0])
    assert res.max_abs_omega.max() < 1e-12 and res.max_abs_grad_beta.max() < 1e-12
    assert res.cost[0] == pytest.approx(
        standard_cost(far, data, W0, y, weighting="global"), abs=1e-12
    )


def test_output_descent_trains_the_hidden_parameters_when_asked(rng):
    design = tr.simplex_design(2, n_per=4, rng=rng)
    res = output_descent(
        design.params, design.data, design.W_out, design.y + 1.0, eta=1e-2, n_steps=3
    )
    assert np.abs(res.hidden[-1] - res.hidden[0]).max() > 0
    assert res.cost[-1] < res.cost[0]
    with pytest.raises(ValueError, match="`eta`"):
        output_descent(design.params, design.data, design.W_out, design.y, eta=0.0, n_steps=1)
