"""Block-structured kernels, their eigendecomposition (Table 1 of [1]) and the label bases.

Samples are ordered class-major throughout: sample ``c * m + i`` is sample ``i`` of class
``c`` (``m >= 2`` samples per class, ``N = C m`` in all, ``C = n_classes``). With
``Y = I_C (x) 1_m^T`` the one-hot label matrix
(:func:`ncdynamics.theories.labels.label_matrix`), a block-structured ``N x N`` kernel with
diagonal value ``d``, same-class value ``c`` and other-class value ``n`` is ([1], Definition
3.1 in matrix form)::

    K = (d - c) I_N + (c - n) Y^T Y + n 1_N 1_N^T.

Its three eigenvalues ([1], Table 1) are ``single = d - c`` (multiplicity N - C),
``class = single + m (c - n)`` (C - 1) and ``global = class + N n`` (1). The eigenvectors
printed in Table 1 are not linearly independent within an eigenspace (they sum to zero), so
:func:`eigenspace_bases` returns orthonormal bases instead.

References
----------
[1] See :mod:`ncdynamics.theories.ntk_collapse`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from ..labels import label_matrix

__all__ = [
    "BASIS_KINDS",
    "BasisKind",
    "BlockEigenvalues",
    "EigenspaceBases",
    "Table1Vectors",
    "block_eigenvalues",
    "block_kernel",
    "block_kernel_matrix",
    "eigenspace_bases",
    "feature_basis",
    "table1_vectors",
    "within_class_basis",
]

BasisKind = Literal["householder", "helmert"]
BASIS_KINDS: tuple[BasisKind, ...] = ("householder", "helmert")


def _sizes(n_classes: int, n_per_class: int) -> tuple[int, int]:
    """C >= 2 and m >= 2: a block kernel needs two samples per class to tell its values apart."""
    C = check_int(n_classes, "n_classes", low=2)
    m = check_int(n_per_class, "n_per_class", low=2)
    return C, m


def block_kernel(
    n_classes: int, n_per_class: int, diag: float, intra: float, inter: float
) -> NDArray[np.float64]:
    """The (N, N) block-structured kernel of [1], Definition 3.1 / Assumption 3.2.

    ``K = (diag - intra) I + (intra - inter) Y^T Y + inter 1 1^T`` with ``C = n_classes`` and
    ``m = n_per_class`` (both >= 2), ``N = C m``. No ordering of the values is required here
    (the definition asks ``diag > intra > inter >= 0``).
    """
    C, m = _sizes(n_classes, n_per_class)
    d = check_scalar(diag, "diag")
    c = check_scalar(intra, "intra")
    n = check_scalar(inter, "inter")
    N = C * m
    YtY = np.kron(np.eye(C), np.ones((m, m)))
    return (d - c) * np.eye(N) + (c - n) * YtY + n * np.ones((N, N))


def block_kernel_matrix(
    n_classes: int, n_per_class: int, a_diag: NDArray, a_intra: NDArray, a_inter: NDArray
) -> NDArray[np.float64]:
    """The full (N, N, K, K) kernel of [1], Assumption D.1 (71).

    ``Theta(x, x) = A_d + A_c + A_n``, ``Theta(x_i^c, x_j^c) = A_c + A_n`` (i != j) and
    ``Theta(x_i^c, x_j^c') = A_n`` (c != c'). Layout: samples first, outputs last.
    """
    C, m = _sizes(n_classes, n_per_class)
    A_d = check_array(a_diag, "a_diag", ndim=2, dtype=np.float64)
    K = A_d.shape[0]
    A_c = check_array(a_intra, "a_intra", shape=(K, K), dtype=np.float64)
    A_n = check_array(a_inter, "a_inter", shape=(K, K), dtype=np.float64)
    N = C * m
    YtY = np.kron(np.eye(C), np.ones((m, m)))
    return (
        np.eye(N)[:, :, None, None] * A_d
        + YtY[:, :, None, None] * A_c
        + np.ones((N, N))[:, :, None, None] * A_n
    )


@dataclass(frozen=True)
class BlockEigenvalues:
    """The three eigenvalues of a block kernel and their multiplicities ([1], Table 1)."""

    single: float
    class_: float
    global_: float
    multiplicities: tuple[int, int, int]


def block_eigenvalues(
    n_classes: int, n_per_class: int, diag: float, intra: float, inter: float
) -> BlockEigenvalues:
    """Eigenvalues of :func:`block_kernel` ([1], Table 1).

    ``single = d - c``, ``class = single + m (c - n)``, ``global = class + N n`` with
    multiplicities ``(N - C, C - 1, 1)``.
    """
    C, m = _sizes(n_classes, n_per_class)
    d, c, n = (check_scalar(v, k) for v, k in ((diag, "diag"), (intra, "intra"), (inter, "inter")))
    single = d - c
    cls = single + m * (c - n)
    return BlockEigenvalues(single, cls, cls + C * m * n, (C * m - C, C - 1, 1))


@dataclass(frozen=True)
class Table1Vectors:
    """The eigenvectors exactly as printed in [1], Table 1 (not independent).

    Attributes
    ----------
    v0 : ndarray of shape (N,)
        ``1_N``.
    v_class : ndarray of shape (C, N)
        Row c: ``(C-1)`` on class c and ``-1`` elsewhere, divided by ``C - 1``.
    v_single : ndarray of shape (N, N)
        Row ``c m + i``: ``m - 1`` at the sample, ``-1`` on the other samples of its class,
        divided by ``m - 1``.
    """

    v0: NDArray[np.float64]
    v_class: NDArray[np.float64]
    v_single: NDArray[np.float64]


def table1_vectors(n_classes: int, n_per_class: int) -> Table1Vectors:
    """The eigenvectors of [1], Table 1, as printed; see :class:`Table1Vectors`."""
    C, m = _sizes(n_classes, n_per_class)
    N = C * m
    Y = label_matrix(C, m)
    v_class = (C * Y - np.ones((C, N))) / (C - 1)
    YtY = Y.T @ Y
    v_single = (m * np.eye(N) - YtY) / (m - 1)
    return Table1Vectors(np.ones(N), v_class, v_single)


def within_class_basis(n_per_class: int, *, kind: BasisKind = "householder") -> NDArray[np.float64]:
    """An orthonormal basis ``Q2~`` of ``1_m^perp``, shape (m, m - 1) ([1], eq. (22)).

    ``householder`` follows the authors' code: column i has ``sqrt(m) + 1`` in row 0,
    ``1 - sqrt(m)(sqrt(m) + 1)`` in row i + 1 and 1 elsewhere, all divided by
    ``sqrt(m)(sqrt(m) + 1)``. ``helmert`` is the Helmert basis (column k averages the first
    k + 1 entries against entry k + 1).
    """
    m = check_int(n_per_class, "n_per_class", low=2)
    check_option(kind, "kind", BASIS_KINDS)
    if kind == "householder":
        s = np.sqrt(m)
        Q = np.ones((m, m - 1))
        Q[0, :] = s + 1
        Q[np.arange(1, m), np.arange(m - 1)] = 1 - s * (s + 1)
        return Q / (s * (s + 1))
    Q = np.zeros((m, m - 1))
    for k in range(1, m):
        Q[:k, k - 1] = 1.0
        Q[k, k - 1] = -k
        Q[:, k - 1] /= np.sqrt(k * (k + 1))
    return Q


def feature_basis(
    n_classes: int, n_per_class: int, *, kind: BasisKind = "householder"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``Q1 = m^-1/2 I_C (x) 1_m`` (N, C) and ``Q2 = I_C (x) Q2~`` (N, N - C), [1] eq. (22).

    ``[Q1, Q2]`` is orthogonal and ``Y [Q1, Q2] = [sqrt(m) I_C, 0]`` (eq. (21) with P = I).
    """
    C, m = _sizes(n_classes, n_per_class)
    Q1 = np.asarray(np.kron(np.eye(C), np.ones((m, 1))) / np.sqrt(m), dtype=np.float64)
    Q2 = np.asarray(np.kron(np.eye(C), within_class_basis(m, kind=kind)), dtype=np.float64)
    return Q1, Q2


@dataclass(frozen=True)
class EigenspaceBases:
    """Orthonormal bases of the three eigenspaces of a block kernel.

    Attributes
    ----------
    global_ : ndarray of shape (N, 1)
        ``1_N / sqrt(N)``.
    class_ : ndarray of shape (N, C - 1)
        Class indicators with the global mean removed (orthonormalised).
    single : ndarray of shape (N, N - C)
        Within-class zero-sum vectors (``Q2``).
    """

    global_: NDArray[np.float64]
    class_: NDArray[np.float64]
    single: NDArray[np.float64]


def eigenspace_bases(n_classes: int, n_per_class: int) -> EigenspaceBases:
    """Orthonormal eigenbases for the global, class and single eigenvalues of Table 1 [1]."""
    C, m = _sizes(n_classes, n_per_class)
    N = C * m
    cls = np.kron(within_class_basis(C, kind="helmert"), np.ones((m, 1)) / np.sqrt(m))
    _, Q2 = feature_basis(C, m, kind="helmert")
    return EigenspaceBases(np.ones((N, 1)) / np.sqrt(N), cls, Q2)
