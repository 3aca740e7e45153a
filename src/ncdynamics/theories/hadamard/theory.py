"""Theorem helpers of [1]: Thm 7 threshold, Thm 8 prediction, App. C linear program,
and the counterexample points of Thm 4 and App. B.3.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from .metrics import simplex_etf
from .structure import check_power_of_two, psi_matrix

__all__ = [
    "COUNTEREXAMPLES",
    "MarginLP",
    "embed",
    "etf_distance",
    "max_min_margin",
    "thm7_threshold",
    "thm8_limit",
    "thm8_prediction",
    "thm8_time",
]

#: Points of [1] where a metric other than the KL increases along the flow (reduced units).
#: ``thm4_k8``: dM/dt ≈ 7.33e-4 (Thm 4, App. D.2); ``revkl_k8``: reverse-KL derivative ≈ 3.7e-3
#: (App. B.3.1); ``frobenius_k8``: ``Σ a_i a_j b_j (a_j - a_i)`` ≈ 0.088 (App. B.3.2);
#: ``logratio_k16``: d M_LR/dt ≈ 1.8e-13 (App. B.3.3); ``fig1``: the start of Figure 1.
COUNTEREXAMPLES: dict[str, NDArray[np.float64]] = {
    "thm4_k8": np.array([1.0, 1.0, 1.0, 1.25, 0.01, 0.01, 0.01]),
    "revkl_k8": np.array([1.0, 1.0, 1.0, 1.25, 1e-4, 1e-4, 1e-4]),
    "frobenius_k8": np.array([1.0, 1.0, 1.0, 1.25, 1e-4, 1e-4, 1e-4]),
    "logratio_k16": np.array([5.01, 0.99, 2, 5, 1, 5, 1, 2, 1, 5, 3, 5, 1, 5, 1], dtype=np.float64),
    "fig1": np.array([1.0, 1.0, 1.0, 1.0, 1e-3, 1e-3, 1e-3]),
}


def embed(a: Any, K: int, *, fill: float = 0.0) -> NDArray[np.float64]:
    """Embed reduced values of a smaller power of two into ``K``: ``[a, fill·1]`` (Lemma 1)."""
    a = check_array(a, "a", ndim=1, dtype=np.float64)
    K = check_power_of_two(K)
    if a.size > K - 1:
        raise ValueError(f"`a` must have at most K-1 = {K - 1} entries; got {a.size}.")
    return np.concatenate([a, np.full(K - 1 - a.size, float(fill))])


def thm7_threshold(K: int, l1_norm: Any) -> NDArray[np.float64]:
    """Theorem 7 of [1]: ``M <= min(1/(8K²), 1/(18 K³ ‖a‖₁²))`` implies ``dM/dt <= 0``."""
    K = check_power_of_two(K)
    l1 = np.asarray(l1_norm, dtype=np.float64)
    return np.minimum(1.0 / (8 * K**2), 1.0 / (18 * K**3 * l1**2))


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
    S = simplex_etf(K)
    right = np.kron(S, np.ones((1, n)))
    return eps / (2.0 * d * np.sqrt(n)) * (S @ X @ np.swapaxes(X, -1, -2) @ right)


def thm8_limit(K: int, eps: float, *, n: int = 1) -> NDArray[np.float64]:
    """The ``d → ∞`` limit of Theorem 8: ``Z(t*) ≈ (ε / (2√n)) S ⊗ 1_n^T``."""
    n = check_int(n, "n", low=1)
    return eps / (2.0 * np.sqrt(n)) * np.kron(simplex_etf(K), np.ones((1, n)))


def etf_distance(Z: Any, *, n: int = 1) -> NDArray[np.float64]:
    """``‖Z/‖Z‖_F - T/‖T‖_F‖_F`` with ``T = S ⊗ 1_n^T``, per matrix of a batch."""
    Z = check_array(Z, "Z", dtype=np.float64)
    T = np.kron(simplex_etf(Z.shape[-2]), np.ones((1, check_int(n, "n", low=1))))
    Zn = Z / np.linalg.norm(Z, axis=(-2, -1), keepdims=True)
    return np.linalg.norm(Zn - T / np.linalg.norm(T), axis=(-2, -1))


@dataclass(frozen=True)
class MarginLP:
    """Solution of the max-min normalised margin problem of [1], App. C.

    Attributes
    ----------
    ahat : ndarray of shape (K-1,)
        Maximising direction on the simplex (zero off the support).
    value : float
        ``max min_j (Ψ â)_j``.
    success : bool
    """

    ahat: NDArray[np.float64]
    value: float
    success: bool


def max_min_margin(K: int, support: Sequence[int] | None = None) -> MarginLP:
    """Maximise ``min_j (Ψ â)_j`` over the simplex restricted to ``support`` (App. C of [1]).

    The linear program is: maximise ``s`` subject to ``Ψ â >= s 1``, ``Σ â = 1``, ``â >= 0``,
    ``â_i = 0`` off the support. ``support`` holds 0-based indices into the ``K - 1`` reduced
    modes (mode ``i`` here is Hadamard column ``i + 1``); all modes if omitted.
    """
    from scipy.optimize import linprog

    K = check_power_of_two(K)
    psi = psi_matrix(K)
    k1 = K - 1
    supp = np.arange(k1) if support is None else np.asarray(support, dtype=np.int64)
    if supp.size == 0 or supp.min() < 0 or supp.max() >= k1:
        raise ValueError(f"`support` must hold indices in [0, {k1 - 1}]; got {list(supp)}.")
    c = np.zeros(k1 + 1)
    c[-1] = -1.0  # maximise s
    A_ub = np.hstack([-psi, np.ones((k1, 1))])  # s - (Ψâ)_j <= 0
    A_eq = np.concatenate([np.ones(k1), [0.0]])[None]
    bounds = [(0.0, None) if i in set(supp.tolist()) else (0.0, 0.0) for i in range(k1)]
    bounds.append((None, None))
    res = linprog(
        c, A_ub=A_ub, b_ub=np.zeros(k1), A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs"
    )
    x = res.x if res.x is not None else np.full(k1 + 1, np.nan)
    return MarginLP(x[:-1], float(x[-1]), bool(res.success))
