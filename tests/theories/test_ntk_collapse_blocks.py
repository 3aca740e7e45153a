"""Oracles O1-O2 (spec ntk_collapse §4): block kernel eigenstructure and residual phases."""

import numpy as np
import pytest
from scipy.linalg import expm

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
from ncdynamics.theories.ntk_collapse.residuals import (
    residual_components,
    residual_flow,
    residual_gd,
    residual_phases,
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


def test_residual_flow_matches_matrix_exponential_o2(rng):
    K = block_kernel(C, M, **VALS)
    r0 = rng.standard_normal((3, C * M))
    ts = np.array([0.0, 0.05, 0.3, 2.0])
    out = residual_flow(r0, ts, C, **VALS)
    np.testing.assert_array_equal(out.ts, ts)
    for k, t in enumerate(ts):
        np.testing.assert_allclose(out.ys[k], r0 @ expm(-t * K).T, rtol=1e-10, atol=1e-13)


def test_residual_gd_multiplies_each_phase_by_one_minus_eta_lambda(rng):
    lam = block_eigenvalues(C, M, **VALS)
    eta = 0.9 / lam.global_
    r0 = rng.standard_normal(C * M)
    traj = residual_gd(r0, C, **VALS, learning_rate=eta, n_steps=6)
    np.testing.assert_allclose(traj.ts, eta * np.arange(7))
    ph0 = residual_phases(r0, C)
    for t in range(7):
        ph = residual_phases(traj.ys[t], C)
        np.testing.assert_allclose(
            ph.global_, (1 - eta * lam.global_) ** t * ph0.global_, atol=1e-12
        )
        np.testing.assert_allclose(ph.class_, (1 - eta * lam.class_) ** t * ph0.class_, atol=1e-12)
        np.testing.assert_allclose(ph.single, (1 - eta * lam.single) ** t * ph0.single, atol=1e-12)


def test_residual_components_eq17_18(rng):
    R = rng.standard_normal((C, C * M))
    parts = residual_components(R, C)
    Y = label_matrix(C, M)
    N = C * M
    np.testing.assert_allclose(parts.class_, R @ Y.T @ Y / M, atol=1e-12)
    np.testing.assert_allclose(parts.global_, R @ np.ones((N, N)) / N, atol=1e-12)
    np.testing.assert_allclose(np.kron(parts.class_means, np.ones((1, M))), parts.class_)


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: block_kernel(1, 5, 1, 0.5, 0), ValueError, "n_classes"),
        (lambda: block_kernel(3, 1, 1, 0.5, 0), ValueError, "n_per_class"),
        (lambda: block_kernel(3, 2, np.nan, 0.5, 0), ValueError, "diag"),
        (lambda: within_class_basis(4, kind="qr"), ValueError, "kind"),
        (lambda: residual_phases(np.ones(7), 2), ValueError, "multiple of n_classes"),
        (
            lambda: residual_gd(
                np.ones(4), 2, diag=1, intra=0.5, inter=0, learning_rate=-1, n_steps=2
            ),
            ValueError,
            "learning_rate",
        ),
    ],
)
def test_bad_input_is_rejected(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
