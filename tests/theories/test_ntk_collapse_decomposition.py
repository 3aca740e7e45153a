"""decomposition.py: the split H Q = sqrt(m) [H1, H2] of eqs. (21)-(24) (oracle O3)."""

import numpy as np
import pytest

from ncdynamics.theories.ntk_collapse.decomposition import (
    compose_features,
    decompose_features,
    within_class_gram,
)


def test_h2_gram_via_basis_equals_within_scatter_over_m_o3(rng):
    H = rng.standard_normal((7, 20))
    _, H2 = decompose_features(H, 4)
    np.testing.assert_allclose(H2 @ H2.T, within_class_gram(H, 4), atol=1e-12)
    H1, _ = decompose_features(H, 4)
    np.testing.assert_allclose(H1, H.reshape(7, 4, 5).mean(axis=2), atol=1e-12)


@pytest.mark.parametrize("kind", ["householder", "helmert"])
def test_compose_inverts_decompose(rng, kind):
    H = rng.standard_normal((7, 20))
    H1, H2 = decompose_features(H, 4, kind=kind)
    assert (H1.shape, H2.shape) == ((7, 4), (7, 16))
    np.testing.assert_allclose(compose_features(H1, H2, kind=kind), H, atol=1e-12)


def test_h2_vanishes_exactly_at_nc1(rng):
    means = rng.standard_normal((6, 3))
    H = np.repeat(means, 4, axis=1)  # every sample at its class mean
    _, H2 = decompose_features(H, 3)
    np.testing.assert_allclose(H2, 0.0, atol=1e-12)
    np.testing.assert_allclose(within_class_gram(H, 3), 0.0, atol=1e-12)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: decompose_features(np.ones((3, 7)), 2), "multiple of n_classes"),
        (lambda: decompose_features(np.ones((3, 8)), 1), "n_classes"),
        (lambda: compose_features(np.ones((3, 2)), np.ones((4, 2))), "H2"),
    ],
)
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
