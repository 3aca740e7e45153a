"""Oracles for the truncation flows and integrators (spec §4, items 7, 8, 10-16)."""

import numpy as np
import pytest

from ncdynamics.theories import integrate
from ncdynamics.theories import truncation as tr


@pytest.fixture
def design(rng):
    return tr.simplex_design(3, rng=rng)


# ---------------------------------------------------------------- 7. bias contraction
@pytest.mark.parametrize("variant", ["corrected", "paper"])
def test_lie_euler_btilde_update_is_exact_contraction(design, variant):
    eta = 0.01
    packed = tr.pack_clusters(design.data)
    params = design.params
    for _ in range(30):
        r = tr.separated_rates(params, packed, variant=variant)
        nxt = tr.separated_flow(params, packed, eta=eta, n_steps=1, variant=variant).final
        bt_next = np.einsum("lab,lb->la", nxt.R, nxt.beta + design.data.ytilde)
        rot = tr.expm_antisymmetric(eta * r.omega)
        expected = np.einsum("lab,lb->la", rot, (1 - eta * r.j0perp) * r.btilde)
        np.testing.assert_allclose(bt_next, expected, atol=1e-12)
        assert np.all(
            np.linalg.norm(bt_next, axis=1) <= np.linalg.norm(r.btilde, axis=1) * (1 + 1e-12)
        )
        params = nxt


def test_btilde_norm_derivative_identity(design):
    """d_s |btilde|^2 = -2 btilde^T J0perp btilde for any antisymmetric Omega (spec §1.7)."""
    eta = 1e-7
    r = tr.separated_rates(design.params, design.data)
    nxt = tr.separated_flow(design.params, design.data, eta=eta, n_steps=1).final
    bt_next = np.einsum("lab,lb->la", nxt.R, nxt.beta + design.data.ytilde)
    lhs = (np.sum(bt_next**2, axis=1) - np.sum(r.btilde**2, axis=1)) / eta
    rhs = -2 * np.sum(r.j0perp * r.btilde**2, axis=1)
    np.testing.assert_allclose(lhs, rhs, rtol=1e-5, atol=1e-8)


# ---------------------------------------------------------------- 8. fully truncated
def test_fully_truncated_cluster_relaxes_at_rate_one_with_frozen_rotation(design):
    data = design.data
    # apex far above every point in every rotated coordinate: all z <= 0
    beta = np.stack(
        [-data.cluster(l).mean(0) - 5 * design.params.R[l].T @ np.ones(3) for l in range(3)]
    )
    params = tr.AdaptedParams(design.params.R, beta)
    assert np.all(tr.separated_rates(params, data).j0perp == 1.0)
    eta, k = 0.01, 40
    flow = tr.separated_flow(params, data, eta=eta, n_steps=k)
    assert np.array_equal(flow.R[-1], params.R)
    np.testing.assert_allclose(
        flow.final.beta + data.ytilde, (1 - eta) ** k * (beta + data.ytilde), rtol=1e-12, atol=1e-12
    )


# ---------------------------------------------------------------- 10. staircase
def test_staircase_event_times_match_formula_4_49(rng):
    x = np.sort(rng.uniform(0, 1, 8))
    y = 1.5
    st = tr.staircase(x, y, x[0])
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
    cont = tr.staircase(x, y, x[0])
    disc = tr.staircase(x, y, x[0], eta=eta)
    n = int(round(4.0 / eta))
    gd = tr.staircase_gd(x, y, x[0], eta=eta, n_steps=n)
    np.testing.assert_allclose(disc(np.arange(n + 1) * eta), gd, atol=1e-12)
    assert np.all(np.abs(disc.starts - cont.starts) <= 10 * eta * (1 + cont.starts))


def test_staircase_edge_cases(rng):
    x = np.sort(rng.uniform(0, 1, 8))
    # label between x_4 and x_5: final rate 4/8, never collapses
    mid = tr.staircase(x, 0.5 * (x[3] + x[4]), x[0])
    assert mid.final_rate == 0.5 and mid.limit == pytest.approx(0.5 * (x[3] + x[4]))
    # nothing truncated: static
    b0 = x[0] - 0.1
    static = tr.staircase(x, 1.5, b0)
    assert static.final_rate == 0.0 and static(np.array([10.0]))[0] == b0
    # label below the cluster: b decreases and stops at x_1 (Filippov stop)
    down = tr.staircase(x, -1.0, x[-1] + 0.2)
    assert down.stopped and down.limit == x[0]
    gd = tr.staircase_gd(x, -1.0, x[-1] + 0.2, eta=1e-3, n_steps=20000)
    assert gd[-1] < x[0] and gd[-1] > x[0] - 2e-3
    # b(0) above y above the cluster bulk: rate drops as points un-truncate
    above = tr.staircase(x, 0.5 * (x[3] + x[4]), x[-1] + 0.2)
    np.testing.assert_allclose(above.rates, [1, 7 / 8, 6 / 8, 5 / 8, 4 / 8])


# ---------------------------------------------------------------- 11, 15, 16. coupled flow
def test_coupled_flow_collapses_with_exact_post_s1_rate(design):
    eta = 2e-3
    flow = tr.separated_flow(design.params, design.data, eta=eta, n_steps=5000, record_every=10)
    assert np.all(np.isfinite(flow.s1))
    l = int(np.argmin(flow.s1))  # noqa: E741
    after = flow.s > flow.s1[l] + 0.05
    rate = tr.fit_log_rate(flow.s[after], flow.btilde_norm[after, l])
    assert rate == pytest.approx(-np.log(1 - eta) / eta, rel=1e-8)
    # R frozen after s1 (Omega exactly zero)
    frozen = flow.R[after, l]
    assert np.all(frozen == frozen[0])
    mon = tr.monitor_clusters(flow.final, design.data)
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


# ---------------------------------------------------------------- 12. energy identity
def test_cost_decrease_matches_squared_gradient(rng):
    design = tr.simplex_design(3, rng=rng)
    packed = tr.pack_clusters(design.data)
    errors = {}
    for eta in (1e-4, 1e-5):
        r = tr.separated_rates(design.params, packed)
        nxt = tr.separated_flow(design.params, packed, eta=eta, n_steps=1).final
        c1 = tr.separated_rates(nxt, packed).cost
        predicted = -(np.sum(r.dbeta**2) + np.sum(r.omega**2))
        errors[eta] = abs((c1 - r.cost) / eta - predicted)
    assert errors[1e-5] < 0.2 * errors[1e-4] + 1e-9  # O(eta)


# ---------------------------------------------------------------- 13. Section 8
def test_bilinear_flow_conserves_invariant_and_obeys_cost_bound(rng):
    q = 3
    Y = rng.standard_normal((q, q))
    B0 = 2 * tr.random_orthogonal(q, rng=rng) + 0.3 * rng.standard_normal((q, q))
    W0 = 0.3 * rng.standard_normal((q, q))
    inv0 = tr.bilinear_invariant(W0, B0)
    lam0 = np.linalg.eigvalsh(inv0).min()
    assert lam0 > 0
    ts = np.linspace(0, 5, 51)
    traj = integrate.solve_ode(
        tr.bilinear_drift,
        np.stack([W0, B0]),
        ts,
        tr.BilinearParams(Y),
        method="DOP853",
        rtol=1e-11,
        atol=1e-13,
    )
    assert traj.success
    drift = max(np.abs(tr.bilinear_invariant(w, b) - inv0).max() for w, b in traj.ys)
    assert drift <= 1e-8
    costs = np.array([tr.bilinear_cost(w, b, Y) for w, b in traj.ys])
    assert np.all(costs <= np.exp(-2 * lam0 * ts) * costs[0] * (1 + 1e-8))


def test_bilinear_gradient_descent_invariant_changes_by_eta_squared(rng):
    q = 3
    Y, W, B = (rng.standard_normal((q, q)) for _ in range(3))
    eta = 0.05
    E = W @ B + Y
    W1, B1 = W - eta * E @ B.T, B - eta * W.T @ E
    jump = tr.bilinear_invariant(W1, B1) - tr.bilinear_invariant(W, B)
    np.testing.assert_allclose(jump, eta**2 * (W.T @ E @ E.T @ W - B @ E.T @ E @ B.T), atol=1e-12)


def test_bilinear_propagators_reproduce_residual(rng):
    q = 3
    Y = rng.standard_normal((q, q))
    W0, B0 = rng.standard_normal((q, q)), rng.standard_normal((q, q)) + 2 * np.eye(q)
    y0 = np.stack([W0, B0, np.eye(q), np.eye(q)])
    ts = np.linspace(0, 1, 11)
    traj = integrate.solve_ode(
        tr.bilinear_propagator_drift,
        y0,
        ts,
        tr.BilinearParams(Y),
        method="DOP853",
        rtol=1e-11,
        atol=1e-13,
    )
    e0 = W0 @ B0 + Y
    for w, b, ul, ur in traj.ys:
        np.testing.assert_allclose(w @ b + Y, ul @ e0 @ ur, atol=1e-8)


# ---------------------------------------------------------------- 14. Section 9
@pytest.mark.parametrize("weighting", ["global", "per_cluster"])
def test_linear_regression_closed_form(rng, weighting):
    q, counts = 3, np.array([4, 4, 4])
    X = rng.standard_normal((q, counts.sum()))
    labels = np.repeat(np.arange(q), counts)
    Y_ext = rng.standard_normal((q, q))[:, labels]
    w = np.full(12, 1 / 12) if weighting == "global" else 1.0 / counts[labels]
    par = tr.LinearRegressionParams(X, Y_ext, w)
    W0 = rng.standard_normal((q, q))
    ts = np.linspace(0, 6, 31)
    traj = integrate.solve_ode(
        tr.linreg_drift, W0, ts, par, method="DOP853", rtol=1e-12, atol=1e-14
    )
    np.testing.assert_allclose(tr.linreg_closed_form(W0, ts, par), traj.ys, atol=1e-10)
    w_inf = Y_ext @ np.diag(w) @ X.T @ np.linalg.inv(X @ np.diag(w) @ X.T)
    np.testing.assert_allclose(tr.linreg_limit(par), w_inf, atol=1e-10)
    np.testing.assert_allclose(
        tr.linreg_closed_form(W0, np.array([1e4]), par)[0], w_inf, atol=1e-10
    )


def test_paper_propagator_generators_do_not_reproduce_residual(rng):
    """[1] (8.9) as printed (-U B B^T, -W^T W U) does not give E(s) = U_W E(0) U_B."""
    q = 3
    Y = rng.standard_normal((q, q))
    W0, B0 = rng.standard_normal((q, q)), rng.standard_normal((q, q)) + 2 * np.eye(q)
    par = tr.BilinearParams(Y)

    def printed(t, y, params):
        W, B, UW, UB = y
        head = tr.bilinear_drift(t, y[:2], params)
        return np.concatenate([head, np.stack([-W.T @ W @ UW, -UB @ B @ B.T])])

    y0 = np.stack([W0, B0, np.eye(q), np.eye(q)])
    traj = integrate.solve_ode(
        printed, y0, np.array([0.0, 0.5]), par, method="DOP853", rtol=1e-11, atol=1e-13
    )
    w, b, uw, ub = traj.ys[-1]
    assert np.abs(w @ b + Y - uw @ (W0 @ B0 + Y) @ ub).max() > 1e-3


def test_rotation_flow_sign_plus_omega_decreases_cost(design):
    """d_s R = +Omega R ([1] (3.21)) descends; the sign printed in (1.14)/(4.1) ascends."""
    packed = tr.pack_clusters(design.data)
    r = tr.separated_rates(design.params, packed)
    eps = 1e-6
    costs = {}
    for sign in (+1, -1):
        R = tr.expm_antisymmetric(sign * eps * r.omega) @ design.params.R
        costs[sign] = tr.separated_rates(tr.AdaptedParams(R, design.params.beta), packed).cost
    assert costs[+1] < r.cost < costs[-1]
