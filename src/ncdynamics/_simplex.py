"""The simplex equiangular tight frame (ETF), in the three normalisations the code uses.

Neural collapse ends at a simplex ETF: ``K`` class means of equal norm whose pairwise cosine
is ``-1/(K-1)``. Three scalings of that one geometry appear in the papers and the probes;
they differ only by a constant factor, and each function states its own:

- :func:`centering_matrix` ``I_K - 1 1^T / K`` (the Hadamard paper's ``S``);
- :func:`simplex_etf` ``sqrt(K/(K-1)) Q (I_K - 1 1^T / K)``: unit columns (LE-SDE eq. (10));
- :func:`etf_gram` ``(I_K - 1 1^T / K) / sqrt(K-1)``: the Gram of the ETF scaled to unit
  Frobenius norm, the target of the NC2 distance.

This module sits at the base of the package so that the probes (NC2) and the theories share
it; theories reach it as :mod:`ncdynamics.theories.geometry`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._validation import check_array, check_int

__all__ = ["centering_matrix", "etf_gram", "simplex_etf"]


def centering_matrix(n_classes: int) -> NDArray[np.float64]:
    """The centring matrix ``I_K - 1 1^T / K`` of shape (K, K), ``K = n_classes``.

    It projects onto the complement of the all-ones vector; its columns are an unnormalised
    simplex ETF of norm ``sqrt((K-1)/K)``.

    Examples
    --------
    >>> centering_matrix(2)
    array([[ 0.5, -0.5],
           [-0.5,  0.5]])
    """
    k = check_int(n_classes, "n_classes", low=2)
    return np.eye(k) - 1.0 / k


def simplex_etf(n_classes: int, dim: int | None = None, *, q: Any = None) -> NDArray[np.float64]:
    """The simplex ETF with unit columns, ``S = sqrt(K/(K-1)) Q (I_K - 1 1^T / K)``.

    Parameters
    ----------
    n_classes : int
        ``K >= 2``.
    dim : int, optional
        Ambient dimension ``p >= K`` (default ``K``); ignored when ``q`` is given.
    q : array_like of shape (p, K), optional
        Orthonormal columns that place the frame; default the first ``K`` canonical vectors.

    Returns
    -------
    ndarray of shape (p, K)
        Unit columns with pairwise inner product ``-1/(K-1)``.

    Raises
    ------
    ValueError
        When ``q`` is not ``(p, K)`` with orthonormal columns.

    Examples
    --------
    >>> s = simplex_etf(3)
    >>> np.round(s.T @ s, 6)
    array([[ 1. , -0.5, -0.5],
           [-0.5,  1. , -0.5],
           [-0.5, -0.5,  1. ]])
    """
    k = check_int(n_classes, "n_classes", low=2)
    if q is None:
        p = k if dim is None else check_int(dim, "dim", low=k)
        q = np.eye(p, k)
    else:
        q = check_array(q, "q", ndim=2, dtype=np.float64)
        if q.shape[1] != k or not np.allclose(q.T @ q, np.eye(k), atol=1e-10):
            raise ValueError(
                f"`q` must have shape (p, {k}) with orthonormal columns; got shape {q.shape}."
            )
    out: NDArray[np.float64] = np.sqrt(k / (k - 1)) * q @ centering_matrix(k)
    return out


def etf_gram(n_classes: int) -> NDArray[np.float64]:
    """The simplex-ETF Gram scaled to unit Frobenius norm, ``(I_K - 1 1^T/K) / sqrt(K-1)``.

    Examples
    --------
    >>> float(np.linalg.norm(etf_gram(5)))
    1.0
    """
    k = check_int(n_classes, "n_classes", low=2)
    return centering_matrix(k) / np.sqrt(k - 1)
