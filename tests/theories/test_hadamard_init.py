"""Initialisations: the Hadamard construction (erratum 4), matched Hadamard, random scale."""

import numpy as np
import pytest

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.hadamard.init import haar_orthogonal, matched_hadamard_init
from ncdynamics.theories.hadamard.metrics import mode_values, top_singular_values
from ncdynamics.theories.hadamard.structure import hadamard_basis


def hadamard_pair(rng, K, d, n, scale=1.0, R=1):
    alpha = scale * rng.uniform(0.2, 1.0, size=(R, K - 1))
    rot = haar_orthogonal(d, rng=rng, size=R)
    W, H = hd.hadamard_init(alpha, alpha, d=d, n=n, rotation=rot)
    return W, H, alpha, rot


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("K, d", [(4, 4), (8, 8), (8, 40), (4, 3)])
def test_hadamard_construction_has_prescribed_singular_values(K, d, n, rng):
    W, H, alpha, _ = hadamard_pair(rng, K, d, n)
    Z = (W @ H)[0]
    a = alpha[0] ** 2
    U = hadamard_basis(K)
    expected = np.kron(U @ np.diag(np.r_[0.0, a / np.sqrt(n)]) @ U.T, np.ones((1, n)))
    np.testing.assert_allclose(Z, expected, atol=1e-12)
    sv = np.linalg.svd(Z, compute_uv=False)[: K - 1]
    np.testing.assert_allclose(sv, np.sort(a)[::-1], rtol=1e-12)
    np.testing.assert_allclose(mode_values(Z, n=n), a, rtol=1e-12)


def test_matched_hadamard_init_copies_random_singular_values(rng):
    W, H = hd.random_init(8, 16, delta=2.0, n_realizations=3, rng=rng)
    init = matched_hadamard_init(W, H, rng=rng)
    np.testing.assert_allclose(
        top_singular_values(init.W @ init.H), top_singular_values(W @ H), rtol=1e-12
    )
    np.testing.assert_allclose(mode_values(init.W @ init.H), init.sigma0, rtol=1e-12)


def test_random_init_scale_and_reproducibility():
    W, H = hd.random_init(4, 1000, delta=6.0, rng=np.random.default_rng(0))
    assert W.std() == pytest.approx(np.exp(-6) / 2, rel=0.05)
    W2, _ = hd.random_init(4, 1000, delta=6.0, rng=np.random.default_rng(0))
    np.testing.assert_array_equal(W, W2)
