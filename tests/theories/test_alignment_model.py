"""Oracles of the alignment theory's closed forms ([1] Sec. 2, App. A; float64)."""

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from ncdynamics.theories.alignment import closed_form as cf
from ncdynamics.theories.alignment import model
from ncdynamics.theories.alignment.estimate import simulate

TIGHT = {"rtol": 1e-11, "atol": 1e-15}


def _solve(y0, ts, p):
    traj = simulate(y0, ts, p, **TIGHT)
    assert traj.success, traj.message
    return traj.ys


def _one_d_start(a0, s0, d=1.0):
    # consistent start for 1-D outputs: b = s^2, w = s^2 - s d
    return np.array([a0, s0**2, s0**2 - s0 * d])


@pytest.mark.parametrize("variant", model.VARIANTS)
def test_jacobian_matches_finite_differences(variant, rng):
    p = model.AlignmentParams(0.7, 1.3, 0.25, 1.0, variant)
    y = np.array([0.3, 0.2, -0.15])
    J = model.jacobian(0.0, y, p)
    eps = 1e-6
    fd = np.stack(
        [
            (model.drift(0, y + eps * e, p) - model.drift(0, y - eps * e, p)) / (2 * eps)
            for e in np.eye(3)
        ],
        axis=1,
    )
    np.testing.assert_allclose(J, fd, rtol=1e-6, atol=1e-9)


def test_alternatives_change_exactly_one_line():
    y = np.array([0.3, 0.2, -0.15])
    base = model.drift(0, y, model.AlignmentParams(0.7, 1.3, 0.25, 1.0))
    changed = {"factor-two": 1, "square": 0, "minus-sign": 2, "term-removed": 1}
    for v, line in changed.items():
        alt = model.drift(0, y, model.AlignmentParams(0.7, 1.3, 0.25, 1.0, v))
        diff = np.flatnonzero(~np.isclose(alt, base, rtol=1e-14, atol=0))
        assert diff.tolist() == [line], v


@pytest.mark.parametrize("case", ["dH1", "aligned"])
def test_matrix_model_reduces_to_three_variable_system(case, rng):
    # O1: eq. (17) integrated literally gives (a, b, w) that solve eq. (7).
    d_in = 3
    d_out, d_H = (2, 1) if case == "dH1" else (1, 4)
    x1, x2 = rng.normal(size=d_in), rng.normal(size=d_in)
    y1, y2 = rng.normal(size=d_out), rng.normal(size=d_out)
    Dh0 = 0.1 * rng.normal(size=(d_H, d_in))
    if case == "dH1":
        Dy0 = 0.1 * rng.normal(size=(d_out, d_H))
    else:
        Dy0 = 0.3 * (Dh0 @ (x2 - x1))[None, :]  # D_y^T parallel to dh
    ts = np.linspace(0, 20, 201)
    rh, ry = 0.8, 1.5
    mt = model.simulate_matrix(
        Dh0, Dy0, np.zeros(d_out), x1, x2, y1, y2, ts, inv_tau_ybar=1.0, inv_tau_h=rh, inv_tau_y=ry
    )
    assert mt.success and mt.ys.shape == (ts.size, 3 + d_out)
    np.testing.assert_array_equal(mt.ts, ts)
    X, Y = float(np.sum((x2 - x1) ** 2)), float(np.sum((y2 - y1) ** 2))
    ys = _solve(mt.ys[0, :3], ts, model.AlignmentParams(rh, ry, X, Y))
    scale = np.max(np.abs(ys), axis=0)
    err = np.max(np.abs(mt.ys[:, :3] - ys), axis=0) / scale
    assert np.all(err < 1e-6)
    # the output mean follows eq. (18)
    m = 0.5 * (y1 + y2)
    np.testing.assert_allclose(mt.ys[:, 3:], m - m * np.exp(-ts)[:, None], rtol=1e-7, atol=1e-9)


def test_matrix_model_deviates_without_restriction(rng):
    # O1 negative control: generic d_H = 5, d_out = 2 breaks restriction (19).
    d_in, d_H, d_out = 3, 5, 2
    x1, x2 = rng.normal(size=d_in), rng.normal(size=d_in)
    y1, y2 = rng.normal(size=d_out), rng.normal(size=d_out)
    Dh0, Dy0 = 0.3 * rng.normal(size=(d_H, d_in)), 0.3 * rng.normal(size=(d_out, d_H))
    ts = np.linspace(0, 20, 201)
    mt = model.simulate_matrix(
        Dh0,
        Dy0,
        np.zeros(d_out),
        x1,
        x2,
        y1,
        y2,
        ts,
        inv_tau_ybar=1.0,
        inv_tau_h=0.8,
        inv_tau_y=1.5,
    )
    X, Y = float(np.sum((x2 - x1) ** 2)), float(np.sum((y2 - y1) ** 2))
    ys = _solve(mt.ys[0, :3], ts, model.AlignmentParams(0.8, 1.5, X, Y))
    err = np.max(np.abs(mt.ys[:, :3] - ys) / np.max(np.abs(ys), axis=0))
    assert err > 1e-3


def test_vector_form_reproduces_three_variable_system(rng):
    d = rng.normal(size=3)
    dy0 = 0.05 * rng.normal(size=3)
    vp = model.VectorParams(0.6, 1.1, 0.5, d)
    ts = np.linspace(0, 30, 301)
    sol = solve_ivp(
        model.drift_vector,
        (0, 30),
        np.concatenate([[0.02], dy0]),
        args=(vp,),
        t_eval=ts,
        method="LSODA",
        **TIGHT,
    )
    dy = sol.y[1:].T
    b, w = np.sum(dy**2, 1), np.sum(dy**2, 1) - dy @ d
    ys = _solve([0.02, b[0], w[0]], ts, model.AlignmentParams(0.6, 1.1, 0.5, float(d @ d)))
    np.testing.assert_allclose(np.stack([sol.y[0], b, w], 1), ys, rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("y0", [[1e-3, 1e-6, -1e-3], [0.5, 0.3, 0.1], [2.0, 4.0, 1.0]])
def test_a_high_is_conserved(y0):
    # O2
    p = model.AlignmentParams(0.01, 0.05, 0.25, 1.0)
    ts = np.linspace(0, 2000, 401)
    ys = _solve(y0, ts, p)
    ah = cf.a_high(ys[:, 0], ys[:, 1], p.X, p.rho)
    assert np.max(np.abs(ah - ah[0])) <= 1e-8 * max(1.0, abs(ah[0]))
    np.testing.assert_allclose(
        ys[:, 1], cf.b_of_a(ys[:, 0], y0[0], y0[1], p.X, p.rho), rtol=1e-7, atol=1e-12
    )


def test_reduced_system_matches_three_variable_system():
    # eq. (25) with b eliminated by eq. (24) gives the same (a, w) as eq. (7)
    p = model.AlignmentParams(0.4, 0.9, 0.3, 1.2)
    y0 = np.array([0.05, 0.01, -0.02])
    c = y0[1] / y0[0] - y0[0] / (p.rho * p.X)
    ts = np.linspace(0, 40, 201)
    sol = solve_ivp(
        model.drift_reduced, (0, 40), y0[[0, 2]], args=(p, c), t_eval=ts, method="LSODA", **TIGHT
    )
    ys = _solve(y0, ts, p)
    np.testing.assert_allclose(sol.y.T, ys[:, [0, 2]], rtol=1e-6, atol=1e-10)


@pytest.mark.parametrize("a0", [1e-3, 1e-2, 0.5, 2.0])
@pytest.mark.parametrize("s0", [0.01, -0.02, 1.5])
def test_long_run_reaches_final_distance(a0, s0):
    # O3: a -> eq. (10), b -> Y, w -> 0
    p = model.AlignmentParams(0.5, 1.0, 0.25, 1.0)
    y0 = _one_d_start(a0, s0)
    ys = _solve(y0, np.array([0.0, 5000.0]), p)
    a_inf = cf.final_distance(y0[0], y0[1], p.X, p.Y, p.rho)
    np.testing.assert_allclose(ys[-1, 0], a_inf, rtol=1e-6)
    np.testing.assert_allclose(ys[-1, 1], p.Y, rtol=1e-6)
    assert abs(ys[-1, 2]) < 1e-6


def test_final_distance_is_root_of_fixed_point_polynomial(rng):
    # O4
    a0, b0 = rng.uniform(0.01, 2, 50), rng.uniform(0.001, 3, 50)
    X, Y, rho = rng.uniform(0.1, 2, 50), rng.uniform(0, 2, 50), rng.uniform(0.05, 5, 50)
    a = cf.final_distance(a0, b0, X, Y, rho)
    ah, al2 = cf.a_high(a0, b0, X, rho), cf.a_low(X, Y, rho) ** 2
    np.testing.assert_allclose(a**2 - ah * a, al2, rtol=1e-12, atol=1e-14)
    other = 0.5 * ah - np.sqrt(0.25 * ah**2 + al2)
    assert np.all(other <= 1e-15)
    # eq. (27)'s cubic -(1/(rho X)) a^3 - C a^2 + Y a vanishes at 0 and both roots
    C = -ah / (rho * X)
    for r in (a, other):
        cubic = -(r**3) / (rho * X) - C * r**2 + Y * r
        assert np.max(np.abs(cubic)) < 1e-10


def test_fixed_point_jacobian_matches_finite_differences():
    # O5: eq. (29)-(31)
    for a0, b0 in [(0.01, 1e-4), (1.0, 0.5), (2.0, 8.0)]:
        p = model.AlignmentParams(0.3, 1.7, 0.5, 0.8)
        ah = float(cf.a_high(a0, b0, p.X, p.rho))
        c = b0 / a0 - a0 / (p.rho * p.X)
        fp = cf.fixed_point_stability(ah, p)
        y = np.array([fp.a_inf, 0.0])
        np.testing.assert_allclose(model.drift_reduced(0, y, p, c), 0.0, atol=1e-12)
        eps = 1e-7 * max(fp.a_inf, 1e-3)
        fd = np.stack(
            [
                (
                    model.drift_reduced(0, y + eps * e, p, c)
                    - model.drift_reduced(0, y - eps * e, p, c)
                )
                / (2 * eps)
                for e in np.eye(2)
            ],
            axis=1,
        )
        np.testing.assert_allclose(fp.jacobian, fd, rtol=1e-5, atol=1e-9)
        np.testing.assert_allclose(fp.jacobian, model.jacobian_reduced(y, p, c), rtol=1e-10)
        assert fp.stable


def test_origin_is_a_saddle_with_printed_eigenpairs():
    # O5: eq. (33)-(35)
    p = model.AlignmentParams(0.3, 1.7, 0.5, 0.8)
    for ah in (-0.4, 0.0, 0.7):
        sad = cf.origin_saddle(ah, p)
        lp, lm = sad.eigenvalues
        al2 = p.rho * p.X * p.Y
        np.testing.assert_allclose(lp * lm, -al2 * p.inv_tau_y**2, rtol=1e-10)
        assert lp > 0 > lm
        for lam, v in zip(sad.eigenvalues, sad.eigenvectors, strict=True):
            J = cf.origin_jacobian(v[1] / v[0], ah, p)
            np.testing.assert_allclose(J @ v, lam * v, rtol=1e-10, atol=1e-14)


def test_identical_outputs_corrected_solution_beats_printed():
    # O6 and erratum of eqs. (39)-(40)
    p = model.AlignmentParams(1.0, 0.5, 0.3, 0.0)  # rho = 2, A_high = 0.4
    a0, b0 = 1.0, 1.0
    ts = np.linspace(0, 100, 401)
    ys = _solve([a0, b0, b0], ts, p)
    exact = cf.identical_outputs_solution(ts, a0, b0, p).ys
    assert np.max(np.abs(exact - ys)) < 1e-9
    printed = cf._identical_outputs_printed(ts, a0, b0, p)
    assert np.max(np.abs(printed - ys[:, 0])) > 1e-2
    ah = cf.a_high(a0, b0, p.X, p.rho)
    np.testing.assert_allclose(ys[-1, 0], max(ah, 0.0), rtol=1e-6, atol=1e-9)


def test_identical_outputs_with_zero_a_high_is_finite():
    p = model.AlignmentParams(1.0, 1.0, 1.0, 0.0)
    a0 = 0.5
    b0 = a0**2 / (p.rho * p.X)  # A_high = 0
    ts = np.linspace(0, 10, 11)
    ys = _solve([a0, b0, b0], ts, p)
    np.testing.assert_allclose(cf.identical_outputs_solution(ts, a0, b0, p).ys, ys, atol=1e-9)


def test_lazy_rescaling_maps_onto_rescaled_system():
    # O7: the corrected map a'=a/G, b'=b/G^2, w'=w/G^2, t'=Gt solves eq. (43)
    p = model.AlignmentParams(0.05, 0.2, 0.25, 1.0)
    G = 3.0
    y0 = np.array([0.6, 0.5, 0.2])
    ts = np.linspace(0, 100, 201)
    from ncdynamics.theories.integrate import Trajectory

    mapped = cf.lazy_rescale(Trajectory(ts, _solve(y0, ts, p)), G)
    direct = _solve(mapped.ys[0], mapped.ts, cf.lazy_params(p, G))
    np.testing.assert_allclose(mapped.ys, direct, rtol=1e-8, atol=1e-12)
    # the printed eq. (42) (the inverse map) does not solve eq. (43)
    inv = Trajectory(ts / G, _solve(y0, ts, p) * np.array([G, G**2, G**2]))
    other = _solve(inv.ys[0], inv.ts, cf.lazy_params(p, G))
    assert np.max(np.abs(other - inv.ys) / np.max(np.abs(inv.ys), axis=0)) > 1e-3


def test_final_distance_limits_and_stable_form():
    # O8
    np.testing.assert_allclose(cf._positive_root(0.0, 0.49), 0.7, rtol=1e-14)
    assert cf._positive_root(0.3, 0.0) == pytest.approx(0.3)
    assert cf._positive_root(-0.3, 0.0) == 0.0
    assert cf._positive_root(0.0, 0.0) == 0.0
    al = 1e-3
    np.testing.assert_allclose(cf._positive_root(1e6 * al, al**2), 1e6 * al, rtol=1e-6)
    np.testing.assert_allclose(cf._positive_root(-1e6 * al, al**2), al / 1e6, rtol=1e-6)
    np.testing.assert_allclose(cf._positive_root(-1e8 * al, al**2), al / 1e8, rtol=1e-6)
    naive = 0.5 * (-1e8 * al) + np.sqrt(0.25 * (1e8 * al) ** 2 + al**2)
    assert abs(naive - al / 1e8) / (al / 1e8) > 1e-2  # the printed form cancels


def test_final_distance_depends_on_rates_only_through_rho():
    # O8 invariance and the time rescaling of eq. (7)
    y0 = _one_d_start(0.01, 0.02)
    p = model.AlignmentParams(0.3, 0.9, 0.25, 1.0)
    p2 = model.AlignmentParams(0.6, 1.8, 0.25, 1.0)
    ts = np.linspace(0, 50, 101)
    np.testing.assert_allclose(_solve(y0, ts, p2), _solve(y0, 2 * ts, p), rtol=1e-7, atol=1e-12)
    assert cf.final_distance(0.01, 4e-4, 0.25, 1.0, p.rho) == cf.final_distance(
        0.01, 4e-4, 0.25, 1.0, p2.rho
    )


def test_one_d_output_manifold_is_invariant():
    # O10: (b - w)^2 = b Y on solutions with 1-D outputs
    p = model.AlignmentParams(0.01, 0.05, 0.25, 1.0)
    ys = _solve(_one_d_start(6e-4, 9e-5), np.linspace(0, 3000, 301), p)
    np.testing.assert_allclose((ys[:, 1] - ys[:, 2]) ** 2, ys[:, 1] * p.Y, rtol=1e-7, atol=1e-12)


def test_random_init_distribution_matches_samples(rng):
    # O11: eq. (47) against samples of eq. (10) with A_high ~ N(0, 2 X^2 G^2)
    from scipy.integrate import quad
    from scipy.stats import kstest

    A_low, X, G = 0.4, 0.5, 0.3
    h = cf.sample_final_distance(100_000, A_low, X, G, rng=rng)
    ks = kstest(h, lambda v: cf.final_distance_cdf(v, A_low, X, G))
    assert ks.statistic < 0.01
    total, _ = quad(lambda v: cf.final_distance_pdf(v, A_low, X, G), 0, np.inf, limit=200)
    assert total == pytest.approx(1.0, abs=1e-6)
    tight = cf.sample_final_distance(10_000, A_low, X, 1e-4, rng=rng)
    assert np.max(np.abs(tight - A_low)) < 1e-3


def test_exponential_weighting_equals_double_sum(rng):
    # O12
    Z = rng.normal(size=(7, 3))
    T = np.sum((Z[:, None] - Z[None]) ** 2, -1)
    P = cf.exponential_weighting(T)
    E = np.exp(-T)
    loop = np.array(
        [
            [sum(E[i, k] * E[l, j] * T[k, l] for k in range(7) for l in range(7)) for j in range(7)]
            for i in range(7)
        ]
    )
    np.testing.assert_allclose(P, loop, rtol=1e-12)
    np.testing.assert_allclose(P, P.T, rtol=1e-12)
    np.testing.assert_array_equal(cf.exponential_weighting(np.zeros((4, 4))), 0.0)


def test_pairwise_theory_has_zero_diagonal_and_matches_scalar(rng):
    n = 5
    Z = rng.normal(size=(n, 2))
    X2 = np.sum((Z[:, None] - Z[None]) ** 2, -1)
    Y2 = (np.arange(n)[:, None] % 2 != np.arange(n)[None] % 2).astype(float)
    a0, b0 = 0.01 * X2, 1e-4 * X2
    T = cf.pairwise_theory(X2, Y2, a0, b0, 0.5)
    assert np.all(np.diag(T) == 0)
    assert T[0, 1] == pytest.approx(cf.final_distance(a0[0, 1], b0[0, 1], X2[0, 1], 1.0, 0.5))


def test_loss_curve_plateau_value():
    ts = np.arange(5.0)
    L = cf.loss_curve(ts, np.zeros(5), np.zeros(5), [0.6], [0.0], [1.0], 1e3)
    np.testing.assert_allclose(L[1:], 1.0 / 8.0)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"inv_tau_h": 0.0}, ValueError, "inv_tau_h"),
        ({"inv_tau_y": -1.0}, ValueError, "inv_tau_y"),
        ({"X": 0.0}, ValueError, "`X`"),
        ({"Y": np.nan}, ValueError, "`Y`"),
        ({"variant": "cube"}, ValueError, "variant"),
        ({"inv_tau_h": "fast"}, TypeError, "inv_tau_h"),
    ],
)
def test_params_reject_bad_values(kwargs, exc, match):
    base = {"inv_tau_h": 1.0, "inv_tau_y": 1.0, "X": 1.0, "Y": 1.0}
    with pytest.raises(exc, match=match):
        model.AlignmentParams(**{**base, **kwargs})


def test_simulate_rejects_bad_start():
    p = model.AlignmentParams(1.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="a0"):
        simulate([0.0, 1.0, 1.0], [0.0, 1.0], p)
    with pytest.raises(ValueError, match="y0"):
        simulate([1.0, 1.0], [0.0, 1.0], p)


def test_matrix_model_observables_read_the_state_with_its_own_shapes(rng):
    """``a, b, w`` of the matrix model at t = 0 are those of the initial matrices, with
    d_in, d_H and d_out all different (d_H = 1 or d_out = 1 would hide a transposed
    reading of D_h or D_y)."""
    d_in, d_H, d_out = 3, 4, 2
    x1, x2 = rng.normal(size=d_in), rng.normal(size=d_in)
    y1, y2 = rng.normal(size=d_out), rng.normal(size=d_out)
    Dh0, Dy0 = rng.normal(size=(d_H, d_in)), rng.normal(size=(d_out, d_H))
    ts = np.linspace(0, 1, 3)
    mt = model.simulate_matrix(
        Dh0,
        Dy0,
        np.zeros(d_out),
        x1,
        x2,
        y1,
        y2,
        ts,
        inv_tau_ybar=1.0,
        inv_tau_h=0.8,
        inv_tau_y=1.5,
    )
    dh = Dh0 @ (x2 - x1)
    dy = Dy0 @ dh
    want = [dh @ dh, dy @ dy, dy @ dy - dy @ (y2 - y1)]
    np.testing.assert_allclose(mt.ys[0, :3], want, rtol=1e-12)
