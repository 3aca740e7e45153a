"""Oracles 6, 7 and 10 (docs/theories/lesde.md): Theorems 2.1, 3.1 and Prop. 3.4, and the tests."""

import numpy as np
import pytest
from scipy.linalg import expm

from ncdynamics.theories.geometry import simplex_etf
from ncdynamics.theories.lesde import model as m
from ncdynamics.theories.lesde import separation as sep


def test_binary_separable_both_orders():
    assert sep.binary_separable(np.array([3.0, 4.0]), np.array([1.0, 2.0]))
    assert sep.binary_separable(np.array([1.0, 2.0]), np.array([3.0, 4.0]))
    assert not sep.binary_separable(np.array([1.0, 3.0]), np.array([2.0, 4.0]))
    batch = sep.binary_separable(
        np.array([[3.0, 4.0], [1.0, 3.0]]), np.array([[1.0, 2.0], [2.0, 4.0]])
    )
    np.testing.assert_array_equal(batch, [True, False])


def test_linear_separability_lp_on_known_sets(rng):
    a = rng.normal(size=(50, 3)) + np.array([4.0, 0, 0])
    b = rng.normal(size=(60, 3)) - np.array([4.0, 0, 0])
    a, b = a[a[:, 0] > 0.5], b[b[:, 0] < -0.5]
    assert sep.linearly_separable(a, b)
    # XOR-like sets in 2-D are not linearly separable
    xa = np.array([[1.0, 1.0], [-1.0, -1.0]])
    xb = np.array([[1.0, -1.0], [-1.0, 1.0]])
    assert not sep.linearly_separable(xa, xb)
    # separable, but not along the difference of means: LP says yes, meandiff says no
    a2 = np.array([[0.0, 1.0], [10.0, 1.2]])
    b2 = np.array([[0.0, -1.0], [-10.0, -0.8]])
    x = np.stack([a2, b2])
    assert sep.pairwise_separable(x, method="lp")[0, 1]


def test_projection_direction_is_unit_mean_difference():
    means = np.zeros((5, 3, 3))
    means[-2:, 0] = [1.0, 0, 0]
    means[-2:, 1] = [0, 1.0, 0]
    nu = sep.projection_direction(means, 0, 1)
    np.testing.assert_allclose(nu, np.array([1.0, -1.0, 0]) / np.sqrt(2))


@pytest.mark.parametrize(
    "alpha, beta, t_end, bound",
    [(0.5, -0.3, 40, 0.95), (0.15, -0.1, 60, 0.95), (0.3, 0.2, 150, 0.9)],
)
def test_theorem21_separable_when_alpha_exceeds_beta(alpha, beta, t_end, bound):
    est = sep.theorem21_probability(
        alpha, beta, t_end=t_end, n_reps=100, rng=np.random.default_rng(1)
    )
    assert est.probability >= bound


@pytest.mark.parametrize("alpha, beta", [(0.2, 0.2), (0.0, 0.0), (0.1, 0.3), (-0.1, 0.1)])
def test_theorem21_not_separable_when_alpha_at_most_beta(alpha, beta):
    est = sep.theorem21_probability(alpha, beta, t_end=60, n_reps=100, rng=np.random.default_rng(2))
    assert est.probability <= 0.05


def test_theorem31_phase_transition_in_decay_exponent():
    kw = dict(t_end=400, n_reps=50, rng=np.random.default_rng(3), method="meandiff")
    assert sep.theorem31_probability(0.5, **kw).probability >= 0.95
    assert sep.theorem31_probability(1.5, **kw).probability <= 0.05


def test_theorem31_exact_lp_agrees_on_a_few_reps():
    kw = dict(t_end=400, n_reps=8, rng=np.random.default_rng(4), method="lp")
    assert sep.theorem31_probability(0.5, **kw).probability == 1.0
    assert sep.theorem31_probability(1.5, **kw).probability == 0.0


def _L_means_at(t, alpha, beta, x0):
    k = x0.shape[0]
    mat = m.drift_matrix(alpha, beta, m.h_logits(k))
    return (expm(mat * t) @ x0.ravel()).reshape(k, k)


def test_neural_collapse_when_B_to_minus_infinity(rng):
    errs = [
        sep.etf_gram_error(_L_means_at(60.0, 1.0, -0.2, rng.normal(size=(3, 3))))
        for _ in range(200)
    ]
    assert np.median(errs) <= 0.01
    # the error decays like exp(B/(K-1)): compare t = 30 and t = 60
    x0s = [rng.normal(size=(3, 3)) for _ in range(50)]
    e30 = np.median([sep.etf_gram_error(_L_means_at(30.0, 1.0, -0.2, x)) for x in x0s])
    e60 = np.median([sep.etf_gram_error(_L_means_at(60.0, 1.0, -0.2, x)) for x in x0s])
    ratio = e60 / e30
    assert 0.5 * np.exp(-0.2 * 30 / 2) < ratio < 2 * np.exp(-0.2 * 30 / 2)


@pytest.mark.parametrize("beta", [0.0, 0.3])
def test_no_neural_collapse_without_B_to_minus_infinity(rng, beta):
    errs = [
        sep.etf_gram_error(_L_means_at(60.0, 1.0, beta, rng.normal(size=(3, 3))))
        for _ in range(200)
    ]
    assert np.median(errs) > 0.3


def test_etf_gram_error_zero_on_etf():
    assert sep.etf_gram_error(simplex_etf(4, 6).T) < 1e-12


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: sep.binary_separable(np.ones((2, 3)), np.ones((3, 3))), "leading"),
        (lambda: sep.linearly_separable(np.ones((2, 3)), np.ones((3, 2))), "dimension"),
        (lambda: sep.pairwise_separable(np.ones((2, 3, 1)), method="svm"), "method"),
        (lambda: sep.projection_direction(np.ones((4, 3, 2)), 1, 1), "differ"),
        (lambda: sep.etf_gram_error(np.zeros((3, 2))), "non-zero"),
        (
            lambda: sep.theorem21_probability(0.1, np.nan, t_end=1.0, rng=np.random.default_rng(0)),
            "beta",
        ),
    ],
)
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
