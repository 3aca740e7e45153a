"""Points of [1] where a distance to collapse other than the KL rises along the flow.

Theorem 4 shows that M (Eq. (12)) can increase for ``K >= 8``; App. B.3 does the same for the
reverse KL, the Frobenius metric and (at ``K = 16``) the log-ratio metric. The points are in
reduced units, mode order of the solver (Hadamard columns 1..K-1). Lemma 1
(:func:`embed`) carries a point of a smaller power of two into a larger ``K``, where the
derivative keeps its sign.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array
from .structure import check_power_of_two

__all__ = ["COUNTEREXAMPLES", "embed"]

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


def embed(a: Any, n_classes: int, *, fill: float = 0.0) -> NDArray[np.float64]:
    """Embed reduced values of a smaller power of two into ``K``: ``[a, fill·1]`` (Lemma 1).

    Parameters
    ----------
    a : array_like of shape (k - 1,)
        Reduced values for ``k <= K`` classes.
    n_classes : int
        ``K`` in [1], a power of two.
    fill : float, default=0.0

    Returns
    -------
    ndarray of shape (K - 1,)
    """
    a = check_array(a, "a", ndim=1, dtype=np.float64)
    K = check_power_of_two(n_classes)
    if a.size > K - 1:
        raise ValueError(f"`a` must have at most K-1 = {K - 1} entries; got {a.size}.")
    return np.concatenate([a, np.full(K - 1 - a.size, float(fill))])
