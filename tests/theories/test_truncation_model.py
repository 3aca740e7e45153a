"""Oracles for the truncation network and its effective gradients (spec §4, items 1-6, 9)."""

import numpy as np
import pytest
from scipy.linalg import expm

from ncdynamics.theories import truncation as tr


def _config(rng, q=3, counts=(4, 5, 3), wstar=False):
    data, params = tr.random_config(q, counts, rng=rng)
    if wstar:
        params = tr.AdaptedParams(params.R, params.beta, rng.uniform(0.5, 2.0, (q, q)))
    return data, params


def _fd_gradients(params, data, h=1e-6):
    """Central differences: Euclidean in beta, along exp(t (E_ab - E_ba)) R for Omega."""
    n_layers, q = params.beta.shape
    g_beta = np.zeros((n_layers, q))
    omega = np.zeros((n_layers, q, q))
    cost = lambda R, b: tr.euclidean_cost(tr.AdaptedParams(R, b, params.wstar), data)  # noqa: E731
    for l in range(n_layers):  # noqa: E741
        for a in range(q):
            bp, bm = params.beta.copy(), params.beta.copy()
            bp[l, a] += h
            bm[l, a] -= h
            g_beta[l, a] = (cost(params.R, bp) - cost(params.R, bm)) / (2 * h)
            for b in range(a + 1, q):
                gen = np.zeros((q, q))
                gen[a, b], gen[b, a] = 1.0, -1.0
                rp, rm = params.R.copy(), params.R.copy()
                rp[l] = expm(h * gen) @ params.R[l]
                rm[l] = expm(-h * gen) @ params.R[l]
                d = (cost(rp, params.beta) - cost(rm, params.beta)) / (2 * h)
                omega[l, a, b], omega[l, b, a] = -0.5 * d, 0.5 * d
    return g_beta, omega


# ---------------------------------------------------------------- 1. truncation maps
def test_truncation_fixes_cone_and_collapses_negative_sector(rng):
    q = 4
    R = tr.random_orthogonal(q, rng=rng)
    beta = rng.standard_normal(q)
    inside = rng.uniform(0.1, 2.0, (50, q)) @ R - beta  # R (x + beta) > 0
    below = -rng.uniform(0.0, 2.0, (50, q)) @ R - beta  # R (x + beta) <= 0
    np.testing.assert_allclose(tr.truncate(inside, R, beta), inside, atol=1e-12)
    np.testing.assert_allclose(tr.truncate(below, R, beta), np.tile(-beta, (50, 1)), atol=1e-12)


def test_truncation_is_idempotent_nearest_point_projection(rng):
    q = 3
    R = tr.random_orthogonal(q, rng=rng)
    beta = rng.standard_normal(q)
    x = 2 * rng.standard_normal((200, q))
    t = tr.truncate(x, R, beta)
    np.testing.assert_allclose(tr.truncate(t, R, beta), t, atol=1e-12)
    cone = rng.uniform(0, 3, (200, q)) @ R - beta
    d_tau = np.linalg.norm(x - t, axis=1)
    d_any = np.linalg.norm(x[:, None, :] - cone[None, :, :], axis=2).min(axis=1)
    assert np.all(d_tau <= d_any + 1e-12)


def test_truncation_is_independent_of_wstar(rng):
    q = 3
    R = tr.random_orthogonal(q, rng=rng)
    beta = rng.standard_normal(q)
    x = rng.standard_normal((40, q))
    W = np.diag(rng.uniform(0.2, 5.0, q)) @ R
    np.testing.assert_allclose(tr.truncate_general(x, W, beta), tr.truncate(x, R, beta), atol=1e-12)


def test_relu_derivative_is_zero_at_kink():
    assert tr.heaviside(np.array([0.0]))[0] == 0.0
    pos, neg, mixed = tr.sector_masks(np.array([[1.0, 2.0], [0.0, -1.0], [1.0, 0.0]]))
    assert pos.tolist() == [True, False, False]
    assert neg.tolist() == [False, True, False]
    assert mixed.tolist() == [False, False, True]
    assert tr.sector_codes(np.array([[1.0, 0.0, 2.0]]))[0] == 5


# ---------------------------------------------------------------- 2-3. network identities
def test_hidden_layers_equal_cumulative_map_of_composition(rng):
    """x^(l) = W^(l)(I^(l)(x) + beta^(l)): the bias-corrected [1] (2.17)."""
    data, params = _config(rng, q=4, counts=(5, 5, 5, 5), wstar=True)
    W_cum = params.cumulative_weights()
    W_layers, b_layers = tr.cumulative_to_layers(W_cum, params.beta)
    hidden = tr.forward_layers(data.x, W_layers, b_layers)
    p, _ = tr.truncation_path(data.x, params)
    for l in range(params.n_layers):  # noqa: E741
        expected = (p[l + 1] + params.beta[l]) @ W_cum[l].T
        np.testing.assert_allclose(hidden[l + 1], expected, atol=1e-12)
    # the paper's (2.17) without the bias is wrong here
    assert np.abs(hidden[-1] - p[-1] @ W_cum[-1].T).max() > 1e-3


def test_cumulative_layer_round_trip(rng):
    q, n_layers = 4, 5
    W_layers = rng.standard_normal((n_layers, q, q)) + 2 * np.eye(q)
    b_layers = rng.standard_normal((n_layers, q))
    W_cum, beta = tr.layers_to_cumulative(W_layers, b_layers)
    W2, b2 = tr.cumulative_to_layers(W_cum, beta)
    np.testing.assert_allclose(W2, W_layers, atol=1e-12)
    np.testing.assert_allclose(b2, b_layers, atol=1e-12)


# ---------------------------------------------------------------- 4. gradients
def test_general_gradients_match_finite_differences(rng):
    data, params = _config(rng, wstar=True)
    g = tr.general_gradients(params, data)
    fd_beta, fd_omega = _fd_gradients(params, data)
    np.testing.assert_allclose(g.grad_beta, fd_beta, atol=1e-6 * max(1, np.abs(fd_beta).max()))
    np.testing.assert_allclose(g.omega, fd_omega, atol=1e-6 * max(1, np.abs(fd_omega).max()))


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


def test_theorem51_corrected_equals_gradient_flow_and_paper_sign_is_flipped(rng):
    data, params = _config(rng, q=3, counts=(4, 5, 3))
    g = tr.general_gradients(params, data)
    dbeta, omega = tr.theorem51_rates(params, data)
    np.testing.assert_allclose(dbeta, -g.grad_beta, atol=1e-12)
    np.testing.assert_allclose(omega, g.omega, atol=1e-12)
    dbeta_paper, _ = tr.theorem51_rates(params, data, variant="paper")
    np.testing.assert_allclose(dbeta_paper, g.grad_beta, atol=1e-12)  # ascent, not descent


@pytest.mark.parametrize("q", [2, 3, 4])
def test_separated_flow_equals_general_gradient_on_simplex_design(rng, q):
    design = tr.simplex_design(q, rng=rng)
    rates = tr.separated_rates(design.params, design.data)
    g = tr.general_gradients(design.params, design.data)
    np.testing.assert_allclose(rates.dbeta, -g.grad_beta, atol=1e-12)
    np.testing.assert_allclose(rates.omega, g.omega, atol=1e-12)
    assert rates.cost == pytest.approx(g.cost, abs=1e-12)
    np.testing.assert_allclose(rates.omega, -np.swapaxes(rates.omega, 1, 2), atol=1e-15)


def test_paper_omega_misses_exactly_the_second_moment_term(rng):
    """[1] (3.22) is off by (1/2N) sum [H, z z^T]; the corrected form matches FD."""
    design = tr.simplex_design(3, rng=rng)
    params, data = design.params, design.data
    corrected = tr.separated_rates(params, data)
    paper = tr.separated_rates(params, data, variant="paper")
    _, fd_omega = _fd_gradients(params, data)
    err_corrected = np.abs(corrected.omega - fd_omega).max()
    err_paper = np.abs(paper.omega - fd_omega).max()
    assert err_corrected < 1e-6
    assert err_paper > 1e3 * err_corrected
    for l in range(3):  # noqa: E741
        z = (data.cluster(l) + params.beta[l]) @ params.R[l].T
        h = (z > 0).astype(float)
        zz = z[:, :, None] * z[:, None, :]
        comm = h[:, :, None] * zz - zz * h[:, None, :]
        np.testing.assert_allclose(
            paper.omega[l] - corrected.omega[l], comm.mean(axis=0) / 2, atol=1e-13
        )


# ---------------------------------------------------------------- 5-6. moments, J0perp
def test_moment_form_equals_per_point_form(rng):
    design = tr.simplex_design(4, rng=rng)
    corrected = tr.separated_rates(design.params, design.data)
    moments = tr.separated_rates(design.params, design.data, variant="moments")
    np.testing.assert_allclose(moments.omega, corrected.omega, atol=1e-13)
    paper = tr.separated_rates(design.params, design.data, variant="paper")
    for l in range(4):  # noqa: E741
        z = (design.data.cluster(l) + design.params.beta[l]) @ design.params.R[l].T
        first_only = tr.omega_from_moments(z, corrected.btilde[l], corrected=False)
        np.testing.assert_allclose(first_only, paper.omega[l], atol=1e-13)


def test_j0perp_is_exact_fraction_of_truncated_points(rng):
    design = tr.simplex_design(3, n_per=7, rng=rng)
    rates = tr.separated_rates(design.params, design.data)
    for l in range(3):  # noqa: E741
        z = (design.data.cluster(l) + design.params.beta[l]) @ design.params.R[l].T
        counts = np.sum(z <= 0, axis=0)
        assert np.array_equal(rates.j0perp[l], counts / 7)


# ---------------------------------------------------------------- 9. untruncated
def test_untruncated_clusters_have_exactly_zero_gradient(rng):
    design = tr.simplex_design(3, rng=rng)
    far = tr.AdaptedParams(np.stack([np.eye(3)] * 3), np.full((3, 3), 10.0))
    rates = tr.separated_rates(far, design.data)
    assert np.all(rates.dbeta == 0.0) and np.all(rates.omega == 0.0)
    flow = tr.separated_flow(far, design.data, eta=0.1, n_steps=20)
    assert np.array_equal(flow.final.R, far.R) and np.array_equal(flow.final.beta, far.beta)


# ---------------------------------------------------------------- validation tables
@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: tr.AdaptedParams(np.eye(3)[None], np.zeros((2, 3))), ValueError, "`beta`"),
        (
            lambda: tr.AdaptedParams(np.eye(3)[None], np.zeros((1, 3)), -np.ones((1, 3))),
            ValueError,
            "`wstar`",
        ),
        (
            lambda: tr.AdaptedParams(np.full((1, 2, 2), np.nan), np.zeros((1, 2))),
            ValueError,
            "finite",
        ),
        (
            lambda: tr.ClusterData(np.zeros((3, 2)), np.array([0, 0, 0]), np.zeros((2, 2))),
            ValueError,
            "`labels`",
        ),
        (
            lambda: tr.ClusterData(np.zeros((3, 2)), np.array([0, 1, 1]), np.zeros((2, 3))),
            ValueError,
            "`ytilde`",
        ),
        (lambda: tr.simplex_design(1, rng=np.random.default_rng(0)), ValueError, "`q`"),
        (lambda: tr.staircase(np.array([0.1]), 1.0, 0.0, eta=2.0), ValueError, "`eta`"),
        (
            lambda: tr.separated_flow(
                tr.AdaptedParams(np.stack([np.eye(2)] * 2), np.zeros((2, 2))),
                tr.ClusterData(np.ones((2, 2)), np.array([0, 1]), np.zeros((2, 2))),
                eta=0.1,
                n_steps=1,
                variant="bogus",
            ),
            ValueError,
            "`variant`",
        ),
    ],
)
def test_bad_inputs_raise_named_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_separated_rates_rejects_wrong_layer_count(rng):
    design = tr.simplex_design(3, rng=rng)
    params = tr.AdaptedParams(design.params.R[:2], design.params.beta[:2])
    with pytest.raises(ValueError, match="`params` must have L = 3"):
        tr.separated_rates(params, design.data)


def test_layer_descent_starts_at_the_euclidean_cost_with_zero_defect(rng):
    design = tr.simplex_design(3, n_per=6, wstar=True, rng=rng)
    res = tr.layer_descent(design.params, design.data, eta=1e-3, n_steps=2)
    assert res.cost[0] == pytest.approx(tr.euclidean_cost(design.params, design.data), abs=1e-12)
    assert np.all(res.defect[0] < 1e-12)
    assert res.cost[-1] < res.cost[0]
