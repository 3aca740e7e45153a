"""Oracle O1: block kernel eigenstructure, Table 1 and the bases (22)."""

import numpy as np
import pytest

from ncdynamics.theories.labels import label_matrix
from ncdynamics.theories.ntk_collapse.blocks import (
    block_eigenvalues,
    block_kernel,
    block_kernel_matrix,
    eigenspace_bases,
    feature_basis,
    table1_vectors,
    within_class_basis,
)

C, M = 4, 5
VALS = dict(diag=3.0, intra=1.2, inter=0.3)


def test_block_kernel_has_three_eigenvalues_with_table1_multiplicities():
    K = block_kernel(C, M, 3.0, 1.2, 0.3)
    lam = block_eigenvalues(C, M, 3.0, 1.2, 0.3)
    w = np.linalg.eigvalsh(K)
    N = C * M
    expected = np.sort([lam.single] * (N - C) + [lam.class_] * (C - 1) + [lam.global_])
    np.testing.assert_allclose(w, expected, rtol=1e-10)
    assert lam.multiplicities == (N - C, C - 1, 1)
    assert lam.single == pytest.approx(1.8)
    assert lam.class_ == pytest.approx(1.8 + M * 0.9)
    assert lam.global_ == pytest.approx(1.8 + M * 0.9 + N * 0.3)


def test_table1_vectors_are_eigenvectors_and_give_projections_11_12(rng):
    K = block_kernel(C, M, **VALS)
    lam = block_eigenvalues(C, M, **VALS)
    v = table1_vectors(C, M)
    np.testing.assert_allclose(K @ v.v0, lam.global_ * v.v0, atol=1e-12)
    np.testing.assert_allclose(K @ v.v_class.T, lam.class_ * v.v_class.T, atol=1e-12)
    np.testing.assert_allclose(K @ v.v_single.T, lam.single * v.v_single.T, atol=1e-12)
    # the printed vectors are dependent: they sum to zero within each eigenspace
    np.testing.assert_allclose(v.v_class.sum(axis=0), 0.0, atol=1e-12)
    r = rng.standard_normal(C * M)
    N = C * M
    cm = r.reshape(C, M).mean(axis=1)
    assert r @ v.v0 == pytest.approx(N * r.mean(), abs=1e-12)  # (11)
    np.testing.assert_allclose(v.v_class @ r, N / (C - 1) * (cm - r.mean()), atol=1e-12)  # (12)
    np.testing.assert_allclose(v.v_single @ r, M / (M - 1) * (r - np.repeat(cm, M)), atol=1e-12)


def test_eigenspace_bases_are_orthonormal_eigenbases():
    K = block_kernel(C, M, **VALS)
    lam = block_eigenvalues(C, M, **VALS)
    b = eigenspace_bases(C, M)
    Q = np.hstack([b.global_, b.class_, b.single])
    np.testing.assert_allclose(Q.T @ Q, np.eye(C * M), atol=1e-12)
    for basis, val in ((b.global_, lam.global_), (b.class_, lam.class_), (b.single, lam.single)):
        np.testing.assert_allclose(K @ basis, val * basis, atol=1e-12)


@pytest.mark.parametrize("kind", ["householder", "helmert"])
def test_within_class_basis_is_orthonormal_and_orthogonal_to_ones(kind):
    Q = within_class_basis(7, kind=kind)
    np.testing.assert_allclose(Q.T @ Q, np.eye(6), atol=1e-12)
    np.testing.assert_allclose(Q.sum(axis=0), 0.0, atol=1e-12)


def test_feature_basis_diagonalises_labels_eq21():
    Q1, Q2 = feature_basis(C, M)
    Y = label_matrix(C, M)
    Q = np.hstack([Q1, Q2])
    np.testing.assert_allclose(Q.T @ Q, np.eye(C * M), atol=1e-12)
    np.testing.assert_allclose(
        Y @ Q, np.hstack([np.sqrt(M) * np.eye(C), np.zeros((C, C * M - C))]), atol=1e-12
    )
    np.testing.assert_allclose(Y @ Y.T, M * np.eye(C))


def test_block_kernel_matrix_reduces_to_scalar_blocks():
    n = 3
    full = block_kernel_matrix(C, M, 1.8 * np.eye(n), 0.9 * np.eye(n), 0.3 * np.eye(n))
    K = block_kernel(C, M, **VALS)
    assert full.shape == (C * M, C * M, n, n)
    for p in range(n):
        np.testing.assert_allclose(full[:, :, p, p], K, atol=1e-12)
    np.testing.assert_allclose(full[:, :, 0, 1], 0.0)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: block_kernel(1, 5, 1, 0.5, 0), ValueError, "n_classes"),
        (lambda: block_kernel(3, 1, 1, 0.5, 0), ValueError, "n_per_class"),
        (lambda: block_kernel(3, 2, np.nan, 0.5, 0), ValueError, "diag"),
        (lambda: feature_basis(3, 1), ValueError, "n_per_class"),  # H2 needs m >= 2
        (lambda: within_class_basis(4, kind="qr"), ValueError, "kind"),
    ],
)
def test_bad_input_is_rejected(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
