"""The feature decomposition ``H Q = sqrt(m) [H1, H2]`` of [1], eqs. (21)-(24).

With the orthogonal basis ``Q = [Q1, Q2]`` of eq. (22)
(:func:`~ncdynamics.theories.ntk_collapse.blocks.feature_basis`), the features ``H`` (n, N)
split into ``H1`` (n, C), the class means, and ``H2`` (n, N - C), the within-class
deviations: ``H2 = 0`` exactly when NC1 holds. ``H2 H2^T = S_W / m`` needs no basis.
Samples are class-major with ``m >= 2`` per class.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int
from .blocks import BasisKind, feature_basis

__all__ = ["compose_features", "decompose_features", "within_class_gram"]


def decompose_features(
    H: NDArray, n_classes: int, *, kind: BasisKind = "householder"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``H1 = H Q1 / sqrt(m)`` (n, C) and ``H2 = H Q2 / sqrt(m)`` (n, N - C), [1] eq. (23).

    ``H1`` holds the class means (eq. (24)); ``H2 = 0`` exactly when NC1 holds.

    Parameters
    ----------
    H : ndarray of shape (n, N)
        Features, samples class-major.
    n_classes : int
        C; ``N`` must be a multiple of it.
    kind : {"householder", "helmert"}, default="householder"
        The within-class basis of eq. (22).
    """
    H = check_array(H, "H", ndim=2, dtype=np.float64)
    C = check_int(n_classes, "n_classes", low=2)
    if H.shape[1] % C:
        raise ValueError(f"`H` must have a multiple of n_classes={C} columns; got {H.shape[1]}.")
    m = H.shape[1] // C
    Q1, Q2 = feature_basis(C, m, kind=kind)
    return H @ Q1 / np.sqrt(m), H @ Q2 / np.sqrt(m)


def compose_features(
    H1: NDArray, H2: NDArray, *, kind: BasisKind = "householder"
) -> NDArray[np.float64]:
    """Inverse of :func:`decompose_features`: ``H = sqrt(m) (H1 Q1^T + H2 Q2^T)``."""
    H1 = check_array(H1, "H1", ndim=2, dtype=np.float64)
    n, C = H1.shape
    H2 = check_array(H2, "H2", ndim=2, dtype=np.float64)
    if H2.shape[0] != n or H2.shape[1] % C:
        raise ValueError(f"`H2` must have shape ({n}, C (m - 1)) with C={C}; got {H2.shape}.")
    m = H2.shape[1] // C + 1
    Q1, Q2 = feature_basis(C, m, kind=kind)
    H: NDArray[np.float64] = np.sqrt(m) * (H1 @ Q1.T + H2 @ Q2.T)
    return H


def within_class_gram(H: NDArray, n_classes: int) -> NDArray[np.float64]:
    """``H2 H2^T = S_W / m`` without a basis ([1], eq. (24); S_W the within-class scatter).

    ``H`` is (n, N) with samples class-major; ``n_classes`` is C. Returns (n, n).
    """
    H = check_array(H, "H", ndim=2, dtype=np.float64)
    n, N = H.shape
    view = H.reshape(n, n_classes, N // n_classes)  # (n, C, m)
    dev = (view - view.mean(axis=2, keepdims=True)).reshape(n, N)
    S: NDArray[np.float64] = dev @ dev.T / (N // n_classes)
    return S
