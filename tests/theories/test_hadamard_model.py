"""Oracles of the reduced dynamics ([1] §3.3-§4 and App. B, and the derivative formulas)."""

import numpy as np
import pytest

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.hadamard.counterexamples import COUNTEREXAMPLES
from ncdynamics.theories.hadamard.metrics import (
    dfrobenius_dt,
    dkl_dt,
    dkl_dt_closed,
    dlog_ratio_dt,
    dm_dt,
    dm_dt_logit,
    dreverse_kl_dt,
    frobenius_metric,
    frobenius_sum,
    kl_uniform,
    log_ratio_metric,
    metric_m,
    reverse_kl,
    thm7_threshold,
)
from ncdynamics.theories.hadamard.model import (
    SingularValueParams,
    discrete_gd_map,
    drift,
    drift_alpha_beta,
    drift_log,
    drift_logit,
    drift_normalized,
    drift_normalized_naive,
    energy,
    growth_rates,
    iterations_to_time,
    jacobian_log,
    linearized_solution,
    payoffs,
    replicator_drift,
    to_reduced,
)
from ncdynamics.theories.hadamard.structure import softmax_eigenvalues


def params(K):
    return hd.ReducedParams(K)


def rand_a(rng, K, size, low=-3, high=1):
    return 10 ** rng.uniform(low, high, size=(size, K - 1))


def fd_directional(f, a, v, h=1e-6):
    """Central difference of f along direction v at a (relative step)."""
    return (f(a + h * v) - f(a - h * v)) / (2 * h)


# ----------------------------------------------------------------------------- right-hand sides
@pytest.mark.parametrize("K", [4, 8, 16])
def test_growth_rates_equal_b_over_d_and_one_minus_softmax_eigenvalues(K, rng):
    p = params(K)
    a = rand_a(rng, K, 20)
    b, D = payoffs(a, p)
    np.testing.assert_allclose(growth_rates(a, p), b / D[:, None], rtol=1e-13)
    nu = softmax_eigenvalues(np.hstack([np.zeros((20, 1)), K * a]))
    np.testing.assert_allclose(growth_rates(a, p), 1 - nu[:, 1:], rtol=1e-10, atol=1e-14)


def test_growth_rates_are_finite_at_huge_margins():
    p = params(8)
    g = growth_rates(np.full(7, 1e4), p)
    assert np.all(np.isfinite(g)) and np.all(g >= 0)
    g2 = growth_rates(np.full(7, -50.0), p)  # negative margins: no overflow
    assert np.all(np.isfinite(g2))


@pytest.mark.parametrize("K", [4, 8])
def test_drift_is_mirror_flow_of_energy(K, rng):
    p = params(K)
    for a in rand_a(rng, K, 5):
        grad = np.array(
            [(energy(a + h, p) - energy(a - h, p)) / (2e-6) for h in 1e-6 * np.eye(K - 1)]
        )
        np.testing.assert_allclose(drift(0, a, p), -a * grad, rtol=1e-6, atol=1e-9)
        np.testing.assert_allclose(drift_log(0, np.log(a), p), -grad, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("K", [4, 8])
def test_jacobian_log_matches_finite_differences(K, rng):
    p = params(K)
    y = np.log(rand_a(rng, K, 1)[0])
    J = jacobian_log(0, y, p)
    fd = np.stack(
        [(drift_log(0, y + h, p) - drift_log(0, y - h, p)) / 2e-6 for h in 1e-6 * np.eye(K - 1)],
        axis=1,
    )
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("K", [4, 8, 16])
def test_replicator_form_is_derivative_of_normalised_values(K, rng):
    p = params(K)
    a = rand_a(rng, K, 10)
    da = drift(0, a, p)
    l1 = a.sum(axis=1, keepdims=True)
    expected = da / l1 - a * da.sum(axis=1, keepdims=True) / l1**2
    np.testing.assert_allclose(replicator_drift(a, p), expected, rtol=1e-10, atol=1e-16)


# ----------------------------------------------------------------------------- metric derivatives
DERIVATIVES = [
    (metric_m, dm_dt, drift),
    (kl_uniform, dkl_dt, drift),
    (kl_uniform, dkl_dt_closed, drift),
    (reverse_kl, dreverse_kl_dt, drift),
    (frobenius_metric, dfrobenius_dt, drift),
    (log_ratio_metric, dlog_ratio_dt, drift),
    (metric_m, dm_dt_logit, drift_logit),
]


@pytest.mark.parametrize("metric, deriv, flow", DERIVATIVES)
@pytest.mark.parametrize("K", [4, 8, 16])
def test_closed_form_derivatives_match_finite_differences(metric, deriv, flow, K, rng):
    p = params(K)
    for a in rand_a(rng, K, 5, low=-1, high=0.5):
        v = flow(0, a, p)
        h = 1e-5 / np.max(np.abs(v) / a)  # relative step 1e-5 in every coordinate
        fd = fd_directional(metric, a, v, h=h)
        np.testing.assert_allclose(deriv(a, p), fd, rtol=1e-5, atol=1e-13)


# ----------------------------------------------------------------------------- Theorem 3
@pytest.mark.parametrize("K", [4, 8, 16])
def test_kl_derivative_closed_form_equals_eq15_and_is_nonpositive(K, rng):
    p = params(K)
    a = rand_a(rng, K, 10_000 // 3, low=-3, high=1.3)
    closed = dkl_dt_closed(a, p)
    eq15 = dkl_dt(a, p)
    np.testing.assert_allclose(closed, eq15, rtol=1e-10, atol=1e-300)
    assert np.all(closed <= 0)


@pytest.mark.parametrize("K", [4, 8, 16])
def test_kl_is_nonincreasing_along_the_flow(K, rng):
    ts = np.geomspace(1e-3, 1e5, 300)
    for _ in range(3):
        a0 = rand_a(rng, K, 1, low=-3, high=0)[0]
        traj = hd.solve_reduced(a0, ts, n_classes=K)
        assert traj.success
        kl = kl_uniform(traj.ys)
        assert np.diff(kl).max() <= 1e-12
        # T12: energy decreasing, every a_i increasing
        assert np.diff(energy(traj.ys, params(K))).max() <= 1e-12
        assert np.diff(traj.ys, axis=0).min() >= -1e-12 * traj.ys.max()


def test_kl_strictly_decreases_under_exact_gd_map(rng):
    a0 = rand_a(rng, 8, 1, low=-3, high=-1)[0]
    traj = discrete_gd_map(a0, np.arange(0, 3001, 10), n_classes=8, learning_rate=0.01)
    assert traj.ys.shape == (301, 7)
    assert np.all(np.diff(kl_uniform(traj.ys)) < 0)


# ----------------------------------------------------------------------------- Theorem 4 / App. B.3
def test_metric_m_is_monotone_for_k4(rng):
    p = params(4)
    a = 10 ** rng.uniform(-3, np.log10(30), size=(10_000, 3))
    assert dm_dt(a, p).max() <= 1e-15


@pytest.mark.parametrize("K", [8, 16])
def test_random_search_finds_increasing_m(K, rng):
    a = 10 ** rng.uniform(-3, 0.5, size=(20_000, K - 1))
    assert dm_dt(a, params(K)).max() > 0


def test_log_ratio_is_monotone_for_k8(rng):
    a = 10 ** rng.uniform(-2, 0.7, size=(10_000, 7))
    assert dlog_ratio_dt(a, params(8)).max() <= 1e-15


@pytest.mark.parametrize("K", [4, 8, 16])
def test_theorem6_logit_flow_has_monotone_m(K, rng):
    a = 10 ** rng.uniform(-3, 1, size=(10_000, K - 1))
    assert dm_dt_logit(a, params(K)).max() <= 1e-15


@pytest.mark.parametrize("K", [4, 8, 16])
def test_theorem7_small_m_implies_decrease(K, rng):
    p = params(K)
    found = 0
    for _ in range(2000):
        l1 = 10 ** rng.uniform(-2, 1)
        eps = rng.normal(size=K - 1)
        eps -= eps.mean()
        ahat = (1 + 1e-2 * rng.uniform() * eps / np.abs(eps).max()) / (K - 1)
        a = l1 * ahat / ahat.sum()
        if metric_m(a) <= thm7_threshold(K, l1):
            found += 1
            assert dm_dt(a, p) <= 0
    assert found > 50


# ----------------------------------------------------------------------------- stationary points
@pytest.mark.parametrize("K", [4, 8, 16])
def test_uniform_direction_is_the_only_full_rank_stationary_point(K, rng):
    p = params(K)
    for scale in (0.01, 1.0, 10.0):
        np.testing.assert_allclose(replicator_drift(np.full(K - 1, scale), p), 0, atol=1e-15)
    a = rand_a(rng, K, 200)
    assert np.abs(replicator_drift(a, p)).max(axis=1).min() > 0


# ----------------------------------------------------------------------------- Theorem 5
def test_theorem5_linearised_solution_while_norm_small(rng):
    a0 = rng.uniform(0.5, 1.5, size=3) * 1e-6 / 3
    ts = np.linspace(0, 14, 400)
    exact = hd.solve_reduced(a0, ts, n_classes=4).ys
    lin = linearized_solution(a0, ts)
    small = exact.sum(axis=1) <= 0.01
    assert small.sum() > 100
    assert np.abs(lin[small] / exact[small] - 1).max() <= 1e-4
    assert np.abs(lin[-1] / exact[-1] - 1).max() > 1e-3  # the regime is left


# ----------------------------------------------------------------------------- Figures 1 and 10
def test_figure1_trajectory_regression():
    ts = np.concatenate([[0.0], np.geomspace(1e-3, 1e7, 400)])
    traj = hd.solve_reduced(COUNTEREXAMPLES["fig1"], ts, n_classes=8)
    M = metric_m(traj.ys)
    kl = kl_uniform(traj.ys)
    assert M[0] == pytest.approx(0.053384, abs=1e-6)
    assert kl[0] == pytest.approx(2.4016, abs=1e-4)
    assert np.diff(kl).max() <= 1e-12
    i_min = np.argmin(M)
    assert 0.005 < ts[i_min] < 0.1 and M[i_min] < M[0]
    window = (ts > 0.2) & (ts < 5e6)
    assert np.all(np.diff(M[window]) > 0)  # increasing until the maximum near t ~ 8e6
    assert M[np.searchsorted(ts, 1e3)] == pytest.approx(0.0642, abs=1e-3)
    assert M.max() == pytest.approx(0.0651, abs=1e-3)


def test_normalised_flow_reaches_collapse_without_overflow():
    ts = np.geomspace(1e-3, 1e4, 500)
    traj = hd.solve_reduced(COUNTEREXAMPLES["fig1"], ts, n_classes=8, flow="normalized")
    assert traj.success and np.all(np.isfinite(traj.ys))
    M = metric_m(traj.ys)
    kl = kl_uniform(traj.ys)
    assert np.diff(kl).max() <= 1e-10
    assert M[np.searchsorted(ts, 1e3)] < 1e-2
    assert M[np.searchsorted(ts, 5e3)] < 1e-10
    assert M.max() == pytest.approx(0.0651, abs=1e-3)
    assert 5 < ts[np.argmax(M)] < 25
    # arc length: ‖da/dτ‖ = 1
    np.testing.assert_allclose(np.linalg.norm(drift_normalized(0, traj.ys[100], params(8))), 1.0)


def test_naive_normalised_flow_breaks_down_at_large_margins():
    a = np.full(7, 200.0)  # margins 800: exp(-800) underflows
    p = params(8)
    assert np.all(np.isnan(drift_normalized_naive(0, a, p)))
    stable = drift_normalized(0, a, p)
    np.testing.assert_allclose(stable, np.full(7, 1 / np.sqrt(7)))
    small = np.array([1.0, 1.0, 1.0, 1.25, 0.1, 0.1, 0.1])
    np.testing.assert_allclose(
        drift_normalized_naive(0, small, p), drift_normalized(0, small, p), rtol=1e-12
    )


def test_logit_flow_solution_matches_its_drift():
    ts = np.linspace(0, 5, 11)
    traj = hd.solve_reduced(np.array([0.01, 0.02, 0.03]), ts, n_classes=4, flow="logit")
    assert traj.success and np.all(np.diff(traj.ys, axis=0) > 0)


# ----------------------------------------------------------------------------- Theorem 2 (α, β)
def test_alpha_beta_flow_conserves_differences_and_reduces_to_eq9(rng):
    K, n = 8, 2
    sp = SingularValueParams(K, n)
    alpha = rng.uniform(0.5, 2.0, size=K - 1)
    beta = alpha * rng.uniform(0.5, 1.5, size=K - 1)
    from ncdynamics.theories.integrate import solve_ode

    ts = np.linspace(0, 20, 50)
    traj = solve_ode(drift_alpha_beta, np.stack([alpha, beta]), ts, sp, rtol=1e-11, atol=1e-13)
    C = traj.ys[:, 0] ** 2 - traj.ys[:, 1] ** 2
    np.testing.assert_allclose(C, C[0][None].repeat(50, 0), atol=1e-8)
    # C = 0: a = α² follows Eq. (9) under a' = a/(K√n), τ = 2√n t
    traj0 = solve_ode(drift_alpha_beta, np.stack([alpha, alpha]), ts, sp, rtol=1e-11, atol=1e-13)
    a_red = to_reduced(traj0.ys[:, 0] ** 2, n_classes=K, n=n)
    ode = hd.solve_reduced(a_red[0], iterations_to_time(ts, learning_rate=1.0, n=n), n_classes=K)
    np.testing.assert_allclose(ode.ys, a_red, rtol=1e-7)


# ----------------------------------------------------------------------------- input checks
@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(a0=np.ones(3), ts=[0, 1], n_classes=8), ValueError, "shape"),
        (dict(a0=np.ones(7), ts=[1, 0.5], n_classes=8), ValueError, "increasing"),
        (dict(a0=np.zeros(7), ts=[0, 1], n_classes=8), ValueError, "positive"),
        (dict(a0=np.ones(7), ts=[0, 1], n_classes=8, flow="fast"), ValueError, "one of"),
        (dict(a0=np.ones(5), ts=[0, 1], n_classes=6), ValueError, "power of 2"),
        (dict(a0=[1, np.nan, 1], ts=[0, 1], n_classes=4), ValueError, "finite"),
    ],
)
def test_solve_reduced_rejects_bad_input(kwargs, exc, match):
    a0 = kwargs.pop("a0")
    ts = kwargs.pop("ts")
    with pytest.raises(exc, match=match):
        hd.solve_reduced(a0, ts, **kwargs)


def test_frobenius_derivative_needs_the_two_norm(rng):
    """Erratum 9: with ‖Z‖_F = √(Σ a_j) (as printed) the derivative formula is wrong."""
    p = params(8)
    a = rand_a(rng, 8, 1, low=-1, high=0.5)[0]
    v = drift(0, a, p)
    h = 1e-5 / np.max(np.abs(v) / a)
    fd = fd_directional(frobenius_metric, a, v, h=h)
    b_over_d = growth_rates(a, p)
    s = frobenius_sum(a, b_over_d)
    printed = 2 * s / (np.sqrt(a.sum()) ** 3 * np.sqrt(7))
    assert dfrobenius_dt(a, p) == pytest.approx(fd, rel=1e-5)
    assert abs(printed / fd - 1) > 1e-2


@pytest.mark.parametrize(
    "x",
    [
        [0.5, 2.0, 7.0],  # every margin positive: shift m = 0 (the log1p branch)
        [-0.7, 0.3, 2.0],  # one negative margin: shift m > 0
        [-3.0, -1.5, -0.2],  # every margin negative: m > 0, each term shifted
        [-800.0, -20.0, 5.0],  # exp(800) overflows: only the shifted branch is finite
        [40.0, 700.0, 30.0],  # D - 1 below rounding of 1: log1p keeps it
    ],
)
def test_log_d_is_log_one_plus_sum_exp_on_both_branches(x):
    """``log D = log(1 + Σ exp(-x_j))`` against ``logaddexp`` over ``[0, -x]`` (an
    independent stable evaluation), on inputs that take each branch of the shift."""
    from ncdynamics.theories.hadamard.model import _log_d

    x = np.asarray(x, dtype=np.float64)
    want = np.logaddexp.reduce(np.concatenate([[0.0], -x]))
    got = _log_d(x[None, :])[0]
    np.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-300)
    # the same through the public energy, where Ψ a = x (Ψ is invertible)
    K = x.size + 1
    p = params(K)
    a = np.linalg.solve(p.psi, x)
    np.testing.assert_allclose(energy(a, p), want, rtol=1e-12)
