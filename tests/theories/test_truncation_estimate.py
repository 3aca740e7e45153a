"""Oracles for the real network by autograd, its descent, and the fit helpers."""

import numpy as np
import pytest

from ncdynamics.theories import truncation as tr
from ncdynamics.theories.integrate import Trajectory


def _config(rng, q=3, counts=(4, 5, 3), wstar=False):
    data, params = tr.random_config(q, counts, rng=rng)
    if wstar:
        params = tr.AdaptedParams(params.R, params.beta, rng.uniform(0.5, 2.0, (q, q)))
    return data, params


def test_autograd_through_layered_network_matches_backprop(rng):
    data, params = _config(rng, q=4, counts=(3, 6, 4, 5), wstar=True)
    net = tr.network_gradients(params, data)
    g = tr.general_gradients(params, data)
    np.testing.assert_allclose(net.grad_beta, g.grad_beta, atol=1e-10)
    np.testing.assert_allclose(net.omega, g.omega, atol=1e-10)
    W_out, y = rng.standard_normal((4, 4)), rng.standard_normal((4, 4))
    net = tr.network_gradients(params, data, W_out=W_out, y=y)
    g = tr.general_gradients(params, data, W_out=W_out, y=y)
    np.testing.assert_allclose(net.grad_beta, g.grad_beta, atol=1e-10)
    np.testing.assert_allclose(net.omega, g.omega, atol=1e-10)
    assert net.cost == pytest.approx(tr.standard_cost(params, data, W_out, y), abs=1e-12)


def test_layer_descent_starts_at_the_euclidean_cost_with_zero_defect(rng):
    design = tr.simplex_design(3, n_per=6, wstar=True, rng=rng)
    res = tr.layer_descent(design.params, design.data, eta=1e-3, n_steps=2)
    assert res.cost[0] == pytest.approx(tr.euclidean_cost(design.params, design.data), abs=1e-12)
    assert np.all(res.defect[0] < 1e-12)
    assert res.cost[-1] < res.cost[0]
    assert isinstance(res, Trajectory)
    np.testing.assert_array_equal(res.ts, [0.0, 1e-3, 2e-3])
    W0, b0 = tr.cumulative_to_layers(design.params.cumulative_weights(), design.params.beta)
    np.testing.assert_array_equal(res.ys[0], tr.pack_state(W0, b0))
    assert np.abs(res.ys[-1] - res.ys[0]).max() > 0


def test_network_descent_follows_the_separated_flow(rng):
    design = tr.simplex_design(3, n_per=6, wstar=True, rng=rng)
    eff = tr.separated_flow(design.params, design.data, eta=2e-3, n_steps=20, record_every=5)
    net = tr.network_descent(design.params, design.data, eta=2e-3, n_steps=20, record_every=10)
    gap = tr.trajectory_gap(eff, net)
    np.testing.assert_array_equal(gap.s, net.ts)
    assert max(gap.beta, gap.R) < 1e-10 and gap.cost < 1e-10


def test_fit_log_rate_recovers_an_exponential_rate():
    s = np.linspace(0.0, 3.0, 31)
    assert tr.fit_log_rate(s, 2.0 * np.exp(-0.7 * s)) == pytest.approx(0.7, rel=1e-12)
    with pytest.raises(ValueError, match="`values`"):
        tr.fit_log_rate(s, np.zeros_like(s))


def test_trajectory_gap_needs_a_common_time(rng):
    design = tr.simplex_design(2, n_per=4, rng=rng)
    a = tr.separated_flow(design.params, design.data, eta=0.1, n_steps=1, record_every=1)
    b = tr.separated_flow(design.params, design.data, eta=0.03, n_steps=3, record_every=3)
    with pytest.raises(ValueError, match="share no recorded time"):
        tr.trajectory_gap(tr.FlowResult(**{**a.__dict__, "ts": a.ts[1:], "ys": a.ys[1:]}), b)


def test_output_descent_on_untruncated_data_is_discrete_linear_regression(rng):
    q, eta, n_steps = 3, 0.05, 12
    labels = np.repeat(np.arange(q), 4)
    x, y = rng.standard_normal((labels.size, q)), rng.standard_normal((q, q))
    data = tr.ClusterData(x, labels, y)
    far = tr.AdaptedParams(np.stack([np.eye(q)] * q), np.full((q, q), 10.0))  # nothing truncated
    W0 = rng.standard_normal((q, q))
    res = tr.output_descent(
        far, data, W0, y, eta=eta, n_steps=n_steps, train_hidden=False, weighting="global"
    )
    assert isinstance(res, Trajectory) and res.ys.shape == (n_steps + 1, q, q)
    par = tr.LinearRegressionParams(x.T, y[labels].T, np.full(labels.size, 1 / labels.size))
    w_inf = tr.linreg_limit(par)
    A = x.T @ x / labels.size
    for k, W in enumerate(res.ys):
        expected = w_inf + (W0 - w_inf) @ np.linalg.matrix_power(np.eye(q) - eta * A, k)
        np.testing.assert_allclose(W, expected, atol=1e-12)
    assert np.all(res.hidden == res.hidden[0])
    assert res.max_abs_omega.max() < 1e-12 and res.max_abs_grad_beta.max() < 1e-12
    assert res.cost[0] == pytest.approx(
        tr.standard_cost(far, data, W0, y, weighting="global"), abs=1e-12
    )


def test_output_descent_trains_the_hidden_parameters_when_asked(rng):
    design = tr.simplex_design(2, n_per=4, rng=rng)
    res = tr.output_descent(
        design.params, design.data, design.W_out, design.y + 1.0, eta=1e-2, n_steps=3
    )
    assert np.abs(res.hidden[-1] - res.hidden[0]).max() > 0
    assert res.cost[-1] < res.cost[0]
    with pytest.raises(ValueError, match="`eta`"):
        tr.output_descent(design.params, design.data, design.W_out, design.y, eta=0.0, n_steps=1)
