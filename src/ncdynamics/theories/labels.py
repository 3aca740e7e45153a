"""Label matrices in the class-major layout the theories share.

Class-major: the ``N = K m`` samples are ordered class by class, so sample ``i`` belongs to
class ``i // m`` (``K = n_classes``, ``m = n_per_class``). Data in that order come from
``ncdynamics.data`` (``class_ordered``); the block-structured theories (NTK collapse, the
Hadamard UFM) assume it.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .._validation import check_int

__all__ = ["class_major_labels", "label_matrix"]


def class_major_labels(n_classes: int, n_per_class: int = 1) -> NDArray[np.int64]:
    """Integer labels ``[0]*m + [1]*m + ... + [K-1]*m`` of shape (K m,).

    Examples
    --------
    >>> class_major_labels(3, 2)
    array([0, 0, 1, 1, 2, 2])
    """
    k = check_int(n_classes, "n_classes", low=1)
    m = check_int(n_per_class, "n_per_class", low=1)
    return np.repeat(np.arange(k, dtype=np.int64), m)


def label_matrix(n_classes: int, n_per_class: int = 1) -> NDArray[np.float64]:
    """One-hot labels ``Y = I_K ⊗ 1_m^T`` of shape (K, K m), class-major.

    ``Y Y^T = m I_K`` and ``Y^T Y = I_K ⊗ 1_m 1_m^T``. This is the ``Y`` of the unconstrained
    features model (Hadamard paper, Sec. 2) and of the block-structured NTK (Seleznova et
    al., Sec. 2).

    Examples
    --------
    >>> label_matrix(2, 2)
    array([[1., 1., 0., 0.],
           [0., 0., 1., 1.]])
    """
    k = check_int(n_classes, "n_classes", low=2)
    m = check_int(n_per_class, "n_per_class", low=1)
    return np.kron(np.eye(k), np.ones((1, m))).astype(np.float64, copy=False)
