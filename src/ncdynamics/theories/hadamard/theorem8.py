"""Theorem 8 of [1]: small Gaussian initialisation drives ``Z`` toward the simplex ETF.

From ``W = ε A_1/√d``, ``H = ε A_0/√d`` (:func:`~ncdynamics.theories.hadamard.init.theorem8_init`)
the linear phase of gradient flow ends near ``t* = log(1/ε) / (2√n)`` with ``Z(t*)`` close to
a multiple of ``S X X^T (S ⊗ 1_n^T)``, which tends to the ETF-like ``S ⊗ 1_n^T`` as the width
``d`` grows (``S = I_K - 1 1^T/K``,
:func:`ncdynamics.theories.geometry.centering_matrix`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from ..geometry import centering_matrix

__all__ = ["etf_distance", "thm8_limit", "thm8_prediction", "thm8_time"]


def thm8_time(eps: float, *, n: int = 1) -> float:
    """Theorem 8's time ``t* = log(1/ε) / (2√n)`` (gradient-flow units)."""
    eps = check_scalar(eps, "eps", low=0, high=1, closed="neither")
    return float(np.log(1.0 / eps) / (2.0 * np.sqrt(check_int(n, "n", low=1))))


def thm8_prediction(A1: Any, A0: Any, eps: float, *, n: int = 1) -> NDArray[np.float64]:
    """Leading term of ``Z(t*)`` in Theorem 8 of [1] at finite width ``d``.

    Implements::

        Z(t*) ≈ (ε / (2 d √n)) S X X^T (S ⊗ 1_n^T),
        X = (A_1 + (I_K ⊗ 1_n^T / √n) A_0^T) / √2

    (using ``ε² e^{2 t* √n} = ε``).

    Parameters
    ----------
    A1 : array_like of shape (..., K, d)
    A0 : array_like of shape (..., d, K n)
    eps : float
    n : int, default=1

    Returns
    -------
    ndarray of shape (..., K, K n)
    """
    A1 = check_array(A1, "A1", dtype=np.float64)
    A0 = check_array(A0, "A0", dtype=np.float64)
    n = check_int(n, "n", low=1)
    K, d = A1.shape[-2:]
    pool = np.kron(np.eye(K), np.ones((1, n)) / np.sqrt(n))  # (K, Kn)
    X = (A1 + pool @ np.swapaxes(A0, -1, -2)) / np.sqrt(2.0)  # (..., K, d)
    S = centering_matrix(K)
    right = np.kron(S, np.ones((1, n)))
    out: NDArray[np.float64] = (
        eps / (2.0 * d * np.sqrt(n)) * (S @ X @ np.swapaxes(X, -1, -2) @ right)
    )
    return out


def thm8_limit(n_classes: int, eps: float, *, n: int = 1) -> NDArray[np.float64]:
    """The ``d → ∞`` limit of Theorem 8: ``Z(t*) ≈ (ε / (2√n)) S ⊗ 1_n^T``.

    ``n_classes`` is ``K`` in [1]; the result has shape (K, K n).
    """
    n = check_int(n, "n", low=1)
    out: NDArray[np.float64] = (
        eps / (2.0 * np.sqrt(n)) * np.kron(centering_matrix(n_classes), np.ones((1, n)))
    )
    return out


def etf_distance(Z: Any, *, n: int = 1) -> NDArray[np.float64]:
    """``‖Z/‖Z‖_F - T/‖T‖_F‖_F`` with ``T = S ⊗ 1_n^T``, per matrix of a batch.

    Parameters
    ----------
    Z : array_like of shape (..., K, K n)

    Returns
    -------
    ndarray of shape (...)
    """
    Z = check_array(Z, "Z", dtype=np.float64)
    T = np.kron(centering_matrix(Z.shape[-2]), np.ones((1, check_int(n, "n", low=1))))
    Zn = Z / np.linalg.norm(Z, axis=(-2, -1), keepdims=True)
    out: NDArray[np.float64] = np.linalg.norm(Zn - T / np.linalg.norm(T), axis=(-2, -1))
    return out
