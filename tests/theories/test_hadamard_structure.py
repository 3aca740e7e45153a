"""Oracles of the Hadamard structure: Sylvester structure, Ψ identities, Theorem 1 (corrected)."""

import numpy as np
import pytest
import scipy.linalg

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.hadamard import structure
from ncdynamics.theories.hadamard.structure import (
    hadamard_basis,
    psi_matrix,
    softmax_eigenvalues,
    sylvester,
    xor_permutation,
)
from ncdynamics.theories.ufm import softmax_columns

POWERS = [2, 4, 8, 16, 32, 64]


def paley_12() -> np.ndarray:
    """Paley type-I Hadamard matrix of order 12 (q = 11): not of Sylvester type."""
    q = 11
    residues = {(i * i) % q for i in range(1, q)}
    chi = np.array([0] + [1 if i in residues else -1 for i in range(1, q)])
    Q = np.array([[chi[(j - i) % q] for j in range(q)] for i in range(q)], dtype=float)
    S = np.zeros((12, 12))
    S[0, 1:] = 1.0
    S[1:, 0] = -1.0
    S[1:, 1:] = Q
    H = np.eye(12) + S
    # normalise: first row and column all ones
    H = H * H[0][None, :]
    return H * H[:, 0][:, None]


@pytest.mark.parametrize("K", POWERS)
def test_sylvester_is_symmetric_orthogonal_and_matches_scipy(K):
    phi = sylvester(K)
    np.testing.assert_array_equal(phi, phi.T)
    np.testing.assert_array_equal(phi @ phi.T, K * np.eye(K))
    np.testing.assert_array_equal(phi[0], np.ones(K))
    np.testing.assert_array_equal(phi[:, 0], np.ones(K))
    np.testing.assert_array_equal(phi, scipy.linalg.hadamard(K).astype(float))
    i, j = np.meshgrid(np.arange(K), np.arange(K), indexing="ij")
    popcount = np.vectorize(lambda v: bin(v).count("1"))(i & j)
    np.testing.assert_array_equal(phi, (-1.0) ** popcount)


@pytest.mark.parametrize("K", [4, 8, 16])
def test_rows_form_xor_group_and_diag_is_permutation(K):
    phi = sylvester(K)
    for i in range(K):
        for j in range(K):
            np.testing.assert_array_equal(phi[i] * phi[j], phi[i ^ j])
        np.testing.assert_array_equal(phi @ np.diag(phi[i]), xor_permutation(i, K) @ phi)


@pytest.mark.parametrize("K", POWERS)
def test_psi_identities_hold_exactly(K):
    psi = psi_matrix(K)
    X = sylvester(K)[1:, 1:]
    one = np.ones(K - 1)
    np.testing.assert_array_equal(psi, psi.T)
    assert set(np.unique(psi)) <= {0.0, 2.0}
    np.testing.assert_array_equal((psi == 2).sum(axis=1), np.full(K - 1, K // 2))
    np.testing.assert_array_equal(psi @ one, K * one)
    np.testing.assert_array_equal(psi @ psi, K * (np.eye(K - 1) + np.outer(one, one)))
    np.testing.assert_array_equal(psi @ (-X / K), np.eye(K - 1))
    np.testing.assert_allclose(np.linalg.norm(psi, axis=0), np.sqrt(2 * K), rtol=1e-15)
    np.testing.assert_array_equal(X @ X, K * np.eye(K - 1) - np.outer(one, one))


def test_psi_examples_match_paper():
    np.testing.assert_array_equal(psi_matrix(4), [[2, 0, 2], [0, 2, 2], [2, 2, 0]])
    assert psi_matrix(8)[3].tolist() == [0, 0, 0, 2, 2, 2, 2]


def test_softmax_is_permutation_equivariant(rng):
    v = rng.normal(size=16) * 5
    for i in range(16):
        P = xor_permutation(i, 16)
        np.testing.assert_allclose(
            softmax_columns(P @ v), P @ softmax_columns(v), rtol=0, atol=1e-15
        )


@pytest.mark.parametrize("K", [2, 4, 8, 16, 32])
def test_theorem1_softmax_is_diagonal_with_corrected_eigenvalues(K, rng):
    U = hadamard_basis(K)
    for _ in range(5):
        a = rng.uniform(-50, 50, size=K)
        P = softmax_columns(U @ np.diag(a) @ U.T)
        D = U.T @ P @ U
        diag = np.diag(D).copy()
        off = np.abs(D - np.diag(diag)).max()
        assert off <= 1e-12 * np.abs(diag).max()
        np.testing.assert_allclose(diag, softmax_eigenvalues(a), rtol=0, atol=1e-12)


@pytest.mark.parametrize("K", [4, 8, 16])
def test_eq6_as_printed_is_wrong(K, rng):
    """Erratum 1: U diag(U P(U a)) U^T is not the softmax; Φ softmax(Φa/K) is."""
    U = hadamard_basis(K)
    a = rng.uniform(0, 5, size=K)
    true = np.diag(U.T @ softmax_columns(U @ np.diag(a) @ U.T) @ U)
    literal = U @ softmax_columns(U @ a)
    assert np.abs(literal - true).max() > 0.1
    np.testing.assert_allclose(true, softmax_eigenvalues(a), atol=1e-13)


def test_negative_control_random_orthogonal_basis_fails(rng):
    Q, _ = np.linalg.qr(rng.normal(size=(8, 8)))
    a = rng.uniform(0, 5, size=8)
    D = Q.T @ softmax_columns(Q @ np.diag(a) @ Q.T) @ Q
    assert np.abs(D - np.diag(np.diag(D))).max() > 1e-3


def test_negative_control_paley_hadamard_12_fails(rng):
    H = paley_12()
    np.testing.assert_array_equal(H @ H.T, 12 * np.eye(12))
    U = H / np.sqrt(12)
    a = rng.uniform(0, 5, size=12)
    D = U.T @ softmax_columns(U @ np.diag(a) @ U.T) @ U
    assert np.abs(D - np.diag(np.diag(D))).max() > 1e-3


@pytest.mark.parametrize(
    "bad, exc, match",
    [
        (12, ValueError, "power of 2"),
        (3, ValueError, "power of 2"),
        (1, ValueError, ">= 2"),
        (6.5, TypeError, "integer"),
        ("8", TypeError, "real number"),
    ],
)
def test_non_powers_of_two_are_rejected_with_reason(bad, exc, match):
    with pytest.raises(exc, match=match):
        sylvester(bad)


def test_softmax_eigenvalues_reject_bad_length():
    with pytest.raises(ValueError, match="power of 2"):
        softmax_eigenvalues(np.ones(6))
    with pytest.raises(ValueError, match="finite"):
        softmax_eigenvalues(np.array([0.0, np.nan]))


def test_is_power_of_two():
    assert [k for k in range(20) if structure.is_power_of_two(k)] == [2, 4, 8, 16]


def test_every_public_name_resolves():
    for name in hd.__all__:
        assert hasattr(hd, name), name
    assert "[1]" in hd.__doc__ and "Garrod" in hd.__doc__
