"""Oracles for the truncation integrators: Lie-Euler on O(Q) and the exact staircase.

Monotone ``|btilde|`` and its exact discrete contraction, the fully truncated phase at rate
one with ``R`` frozen, the event times (4.49) of [1], the rate after full truncation, the
energy identity of a step, orthogonality drift and exact collapse of a truncated cluster.
"""

import numpy as np
import pytest

from ncdynamics.theories import truncation as tr
from ncdynamics.theories.integrate import Trajectory
from ncdynamics.theories.truncation.design import monitor_clusters
from ncdynamics.theories.truncation.estimate import fit_log_rate
from ncdynamics.theories.truncation.integrators import (
    expm_antisymmetric,
    pack_state,
    staircase,
    staircase_gd,
)
from ncdynamics.theories.truncation.model import pack_clusters, separated_rates
from ncdynamics.theories.truncation.network import AdaptedParams, ClusterData


@pytest.fixture
def design(rng):
    return tr.simplex_design(3, rng=rng)


@pytest.mark.parametrize("variant", ["corrected", "paper"])
def test_lie_euler_btilde_update_is_exact_contraction(design, variant):
    eta = 0.01
    packed = pack_clusters(design.data)
    params = design.params
    for _ in range(30):
        r = separated_rates(params, packed, variant=variant)
        nxt = tr.separated_flow(params, packed, eta=eta, n_steps=1, variant=variant).final
        bt_next = np.einsum("lab,lb->la", nxt.R, nxt.beta + design.data.ytilde)
        rot = expm_antisymmetric(eta * r.omega)
        expected = np.einsum("lab,lb->la", rot, (1 - eta * r.j0perp) * r.btilde)
        np.testing.assert_allclose(bt_next, expected, atol=1e-12)
        assert np.all(
            np.linalg.norm(bt_next, axis=1) <= np.linalg.norm(r.btilde, axis=1) * (1 + 1e-12)
        )
        params = nxt


def test_btilde_norm_derivative_identity(design):
    """d_s |btilde|^2 = -2 btilde^T J0perp btilde for any antisymmetric Omega."""
    eta = 1e-7
    r = separated_rates(design.params, design.data)
    nxt = tr.separated_flow(design.params, design.data, eta=eta, n_steps=1).final
    bt_next = np.einsum("lab,lb->la", nxt.R, nxt.beta + design.data.ytilde)
    lhs = (np.sum(bt_next**2, axis=1) - np.sum(r.btilde**2, axis=1)) / eta
    rhs = -2 * np.sum(r.j0perp * r.btilde**2, axis=1)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-5, atol=1e-8)


def test_fully_truncated_cluster_relaxes_at_rate_one_with_frozen_rotation(design):
    data = design.data
    # apex far above every point in every rotated coordinate: all z <= 0
    beta = np.stack(
        [-data.cluster(l).mean(0) - 5 * design.params.R[l].T @ np.ones(3) for l in range(3)]
    )
    params = AdaptedParams(design.params.R, beta)
    assert np.all(separated_rates(params, data).j0perp == 1.0)
    eta, k = 0.01, 40
    flow = tr.separated_flow(params, data, eta=eta, n_steps=k)
    assert np.array_equal(flow.R[-1], params.R)
    np.testing.assert_allclose(
        flow.final.beta + data.ytilde, (1 - eta) ** k * (beta + data.ytilde), rtol=1e-12, atol=1e-12
    )


def test_staircase_event_times_match_formula_4_49(rng):
    x = np.sort(rng.uniform(0, 1, 8))
    y = 1.5
    st = staircase(x, y, x[0])
    s = [0.0]
    for n in range(1, 8):
        s.append(s[-1] + 8 / n * np.log((y - x[n - 1]) / (y - x[n])))
    np.testing.assert_allclose(st.starts, s, atol=1e-9)
    np.testing.assert_allclose(st.rates, np.arange(1, 9) / 8)
    # piecewise exponential: log-slope -n/N inside a segment, -1 after s_N
    for k in range(8):
        t0 = st.starts[k] + 1e-3
        t1 = (st.starts[k + 1] - 1e-3) if k < 7 else st.starts[k] + 2.0
        slope = -np.log((y - st(t1)) / (y - st(t0))) / (t1 - t0)
        assert slope == pytest.approx((k + 1) / 8, rel=1e-9)


@pytest.mark.parametrize("eta", [1e-3, 1e-4])
def test_staircase_gradient_descent_events(rng, eta):
    x = np.sort(rng.uniform(0, 1, 8))
    y = 1.5
    cont = staircase(x, y, x[0])
    disc = staircase(x, y, x[0], eta=eta)
    n = int(round(4.0 / eta))
    gd = staircase_gd(x, y, x[0], eta=eta, n_steps=n)
    assert isinstance(gd, Trajectory) and gd.ts.shape == gd.ys.shape == (n + 1,)
    np.testing.assert_allclose(gd.ts, np.arange(n + 1) * eta, rtol=0, atol=0)
    np.testing.assert_allclose(disc(gd.ts), gd.ys, atol=1e-12)
    np.testing.assert_allclose(disc.sample(gd.ts).ys, gd.ys, atol=1e-12)
    assert np.all(np.abs(disc.starts - cont.starts) <= 10 * eta * (1 + cont.starts))


def test_staircase_edge_cases(rng):
    x = np.sort(rng.uniform(0, 1, 8))
    # label between x_4 and x_5: final rate 4/8, never collapses
    mid = staircase(x, 0.5 * (x[3] + x[4]), x[0])
    assert mid.final_rate == 0.5 and mid.limit == pytest.approx(0.5 * (x[3] + x[4]))
    # nothing truncated: static
    b0 = x[0] - 0.1
    static = staircase(x, 1.5, b0)
    assert static.final_rate == 0.0 and static(np.array([10.0]))[0] == b0
    # label below the cluster: b decreases and stops at x_1 (Filippov stop)
    down = staircase(x, -1.0, x[-1] + 0.2)
    assert down.stopped and down.limit == x[0]
    gd = staircase_gd(x, -1.0, x[-1] + 0.2, eta=1e-3, n_steps=20000).ys
    assert gd[-1] < x[0] and gd[-1] > x[0] - 2e-3
    # b(0) above y above the cluster bulk: rate drops as points un-truncate
    above = staircase(x, 0.5 * (x[3] + x[4]), x[-1] + 0.2)
    np.testing.assert_allclose(above.rates, [1, 7 / 8, 6 / 8, 5 / 8, 4 / 8])


def test_coupled_flow_collapses_with_exact_post_s1_rate(design):
    eta = 2e-3
    flow = tr.separated_flow(design.params, design.data, eta=eta, n_steps=5000, record_every=10)
    assert np.all(np.isfinite(flow.s1))
    l = int(np.argmin(flow.s1))  # noqa: E741
    after = flow.s > flow.s1[l] + 0.05
    rate = fit_log_rate(flow.s[after], flow.btilde_norm[after, l])
    assert rate == pytest.approx(-np.log(1 - eta) / eta, rel=1e-8)
    # R frozen after s1 (Omega exactly zero)
    frozen = flow.R[after, l]
    assert np.all(frozen == frozen[0])
    mon = monitor_clusters(flow.final, design.data)
    assert np.all(mon.diameter == 0.0)
    assert mon.separation > 0
    assert flow.final.orthogonality_error() <= 1e-11


def test_orthogonality_is_kept_over_ten_thousand_steps(design):
    flow = tr.separated_flow(
        design.params,
        design.data,
        eta=1e-3,
        n_steps=10_000,
        record_every=10_000,
        retraction="cayley",
    )
    assert flow.final.orthogonality_error() <= 1e-11


def test_cost_decrease_matches_squared_gradient(rng):
    design = tr.simplex_design(3, rng=rng)
    packed = pack_clusters(design.data)
    errors = {}
    for eta in (1e-4, 1e-5):
        r = separated_rates(design.params, packed)
        nxt = tr.separated_flow(design.params, packed, eta=eta, n_steps=1).final
        c1 = separated_rates(nxt, packed).cost
        predicted = -(np.sum(r.dbeta**2) + np.sum(r.omega**2))
        errors[eta] = abs((c1 - r.cost) / eta - predicted)
    assert errors[1e-5] < 0.2 * errors[1e-4] + 1e-9  # O(eta)


def test_flow_result_is_a_trajectory_of_the_packed_state(design):
    eta, n_steps = 2e-3, 25
    flow = tr.separated_flow(design.params, design.data, eta=eta, n_steps=n_steps, record_every=10)
    assert isinstance(flow, Trajectory)
    np.testing.assert_array_equal(flow.ts, np.array([0, 10, 20, 25]) * eta)
    assert flow.ys.shape == (4, 3, 4, 3) and flow.n_evals == n_steps + 1
    np.testing.assert_array_equal(flow.ys, pack_state(flow.R, flow.beta))
    np.testing.assert_array_equal(flow.R[0], design.params.R)
    np.testing.assert_array_equal(flow.beta[0], design.params.beta)
    # the recorded monitors are those of the recorded states
    for i in (0, -1):
        r = separated_rates(AdaptedParams(flow.R[i], flow.beta[i]), design.data)
        assert flow.cost[i] == r.cost
        np.testing.assert_array_equal(flow.j0perp[i], r.j0perp)
    # the last state, one step at a time, and the wstar carried along
    step = design.params
    for _ in range(n_steps):
        step = tr.separated_flow(step, design.data, eta=eta, n_steps=1).final
    np.testing.assert_array_equal(flow.final.R, step.R)
    np.testing.assert_array_equal(flow.final.beta, step.beta)
    np.testing.assert_array_equal(flow.final.wstar, design.params.wstar)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: staircase(np.array([0.1]), 1.0, 0.0, eta=2.0), "`eta`"),
        (lambda: staircase(np.array([]), 1.0, 0.0), "`x`"),
        (
            lambda: tr.separated_flow(
                AdaptedParams(np.stack([np.eye(2)] * 2), np.zeros((2, 2))),
                ClusterData(np.ones((2, 2)), np.array([0, 1]), np.zeros((2, 2))),
                eta=0.1,
                n_steps=1,
                variant="bogus",
            ),
            "`variant`",
        ),
        (
            lambda: tr.separated_flow(
                AdaptedParams(np.stack([np.eye(2)] * 2), np.zeros((2, 2))),
                ClusterData(np.ones((2, 2)), np.array([0, 1]), np.zeros((2, 2))),
                eta=0.1,
                n_steps=1,
                retraction="qr",
            ),
            "`retraction`",
        ),
    ],
)
def test_bad_inputs_raise_named_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
