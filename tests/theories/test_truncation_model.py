"""Oracles for the effective gradients of the truncation theory (against finite
differences and autograd; corrections 3-5 of docs/theories/truncation.md)."""

import numpy as np
import pytest
from scipy.linalg import expm

from ncdynamics.theories import truncation as tr
from ncdynamics.theories.truncation.design import random_config
from ncdynamics.theories.truncation.integrators import expm_antisymmetric
from ncdynamics.theories.truncation.model import (
    general_gradients,
    omega_from_moments,
    pack_clusters,
    separated_rates,
    theorem51_rates,
)
from ncdynamics.theories.truncation.network import AdaptedParams, euclidean_cost


def _config(rng, q=3, counts=(4, 5, 3), wstar=False):
    data, params = random_config(q, counts, rng=rng)
    if wstar:
        params = AdaptedParams(params.R, params.beta, rng.uniform(0.5, 2.0, (q, q)))
    return data, params


def _fd_gradients(params, data, h=1e-6):
    """Central differences: Euclidean in beta, along exp(t (E_ab - E_ba)) R for Omega."""
    n_layers, q = params.beta.shape
    g_beta = np.zeros((n_layers, q))
    omega = np.zeros((n_layers, q, q))
    cost = lambda R, b: euclidean_cost(AdaptedParams(R, b, params.wstar), data)  # noqa: E731
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


def test_general_gradients_match_finite_differences(rng):
    data, params = _config(rng, wstar=True)
    g = general_gradients(params, data)
    fd_beta, fd_omega = _fd_gradients(params, data)
    np.testing.assert_allclose(g.grad_beta, fd_beta, atol=1e-6 * max(1, np.abs(fd_beta).max()))
    np.testing.assert_allclose(g.omega, fd_omega, atol=1e-6 * max(1, np.abs(fd_omega).max()))


def test_theorem51_corrected_equals_gradient_flow_and_paper_sign_is_flipped(rng):
    data, params = _config(rng, q=3, counts=(4, 5, 3))
    g = general_gradients(params, data)
    dbeta, omega = theorem51_rates(params, data)
    np.testing.assert_allclose(dbeta, -g.grad_beta, atol=1e-12)
    np.testing.assert_allclose(omega, g.omega, atol=1e-12)
    dbeta_paper, _ = theorem51_rates(params, data, variant="paper")
    np.testing.assert_allclose(dbeta_paper, g.grad_beta, atol=1e-12)  # ascent, not descent


@pytest.mark.parametrize("q", [2, 3, 4])
def test_separated_flow_equals_general_gradient_on_simplex_design(rng, q):
    design = tr.simplex_design(q, rng=rng)
    rates = separated_rates(design.params, design.data)
    g = general_gradients(design.params, design.data)
    np.testing.assert_allclose(rates.dbeta, -g.grad_beta, atol=1e-12)
    np.testing.assert_allclose(rates.omega, g.omega, atol=1e-12)
    assert rates.cost == pytest.approx(g.cost, abs=1e-12)
    np.testing.assert_allclose(rates.omega, -np.swapaxes(rates.omega, 1, 2), atol=1e-15)


def test_paper_omega_misses_exactly_the_second_moment_term(rng):
    """[1] (3.22) is off by (1/2N) sum [H, z z^T]; the corrected form matches FD."""
    design = tr.simplex_design(3, rng=rng)
    params, data = design.params, design.data
    corrected = separated_rates(params, data)
    paper = separated_rates(params, data, variant="paper")
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


def test_moment_form_equals_per_point_form(rng):
    design = tr.simplex_design(4, rng=rng)
    corrected = separated_rates(design.params, design.data)
    moments = separated_rates(design.params, design.data, variant="moments")
    np.testing.assert_allclose(moments.omega, corrected.omega, atol=1e-13)
    paper = separated_rates(design.params, design.data, variant="paper")
    for l in range(4):  # noqa: E741
        z = (design.data.cluster(l) + design.params.beta[l]) @ design.params.R[l].T
        first_only = omega_from_moments(z, corrected.btilde[l], corrected=False)
        np.testing.assert_allclose(first_only, paper.omega[l], atol=1e-13)


def test_j0perp_is_exact_fraction_of_truncated_points(rng):
    design = tr.simplex_design(3, n_per=7, rng=rng)
    rates = separated_rates(design.params, design.data)
    for l in range(3):  # noqa: E741
        z = (design.data.cluster(l) + design.params.beta[l]) @ design.params.R[l].T
        counts = np.sum(z <= 0, axis=0)
        assert np.array_equal(rates.j0perp[l], counts / 7)


def test_untruncated_clusters_have_exactly_zero_gradient(rng):
    design = tr.simplex_design(3, rng=rng)
    far = AdaptedParams(np.stack([np.eye(3)] * 3), np.full((3, 3), 10.0))
    rates = separated_rates(far, design.data)
    assert np.all(rates.dbeta == 0.0) and np.all(rates.omega == 0.0)
    flow = tr.separated_flow(far, design.data, eta=0.1, n_steps=20)
    assert np.array_equal(flow.final.R, far.R) and np.array_equal(flow.final.beta, far.beta)


def test_rotation_flow_sign_plus_omega_decreases_cost(rng):
    """d_s R = +Omega R ([1] (3.21)) descends; the sign printed in (1.14)/(4.1) ascends."""
    design = tr.simplex_design(3, rng=rng)
    packed = pack_clusters(design.data)
    r = separated_rates(design.params, packed)
    eps = 1e-6
    costs = {}
    for sign in (+1, -1):
        R = expm_antisymmetric(sign * eps * r.omega) @ design.params.R
        costs[sign] = separated_rates(AdaptedParams(R, design.params.beta), packed).cost
    assert costs[+1] < r.cost < costs[-1]


def test_separated_rates_rejects_wrong_layer_count(rng):
    design = tr.simplex_design(3, rng=rng)
    params = AdaptedParams(design.params.R[:2], design.params.beta[:2])
    with pytest.raises(ValueError, match="`params` must have L = 3"):
        separated_rates(params, design.data)


def test_unknown_variant_is_rejected(rng):
    design = tr.simplex_design(2, rng=rng)
    with pytest.raises(ValueError, match="`variant`"):
        separated_rates(design.params, design.data, variant="bogus")
    with pytest.raises(ValueError, match="`variant`"):
        theorem51_rates(design.params, design.data, variant="moments")
