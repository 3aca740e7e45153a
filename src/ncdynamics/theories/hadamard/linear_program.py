"""The max-min normalised margin linear program of [1], App. C (Figure 3).

On the simplex of normalised singular values ``â``, the margins of the normalised logit
matrix are ``(Ψ â)_j / K``. Restricted to a support, the direction that maximises the
smallest margin is in general *not* uniform on that support; this is why the flow can linger
near non-uniform points (Figure 1).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from .structure import check_power_of_two, psi_matrix

__all__ = ["MarginLP", "max_min_margin"]


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


def max_min_margin(n_classes: int, support: Sequence[int] | None = None) -> MarginLP:
    """Maximise ``min_j (Ψ â)_j`` over the simplex restricted to ``support`` (App. C of [1]).

    The linear program is: maximise ``s`` subject to ``Ψ â >= s 1``, ``Σ â = 1``, ``â >= 0``,
    ``â_i = 0`` off the support.

    Parameters
    ----------
    n_classes : int
        ``K`` in [1], a power of two.
    support : sequence of int, optional
        0-based indices into the ``K - 1`` reduced modes (mode ``i`` here is Hadamard column
        ``i + 1``); all modes if omitted.

    Returns
    -------
    MarginLP
    """
    from scipy.optimize import linprog

    K = check_power_of_two(n_classes)
    psi = psi_matrix(K)
    k1 = K - 1
    supp = np.arange(k1) if support is None else np.asarray(support, dtype=np.int64)
    if supp.size == 0 or supp.min() < 0 or supp.max() >= k1:
        raise ValueError(f"`support` must hold indices in [0, {k1 - 1}]; got {list(supp)}.")
    c = np.zeros(k1 + 1)
    c[-1] = -1.0  # maximise s
    A_ub = np.hstack([-psi, np.ones((k1, 1))])  # s - (Ψâ)_j <= 0
    A_eq = np.concatenate([np.ones(k1), [0.0]])[None]
    on = set(supp.tolist())
    bounds: list[tuple[float | None, float | None]] = [
        (0.0, None) if i in on else (0.0, 0.0) for i in range(k1)
    ]
    bounds.append((None, None))
    res = linprog(
        c, A_ub=A_ub, b_ub=np.zeros(k1), A_eq=A_eq, b_eq=[1.0], bounds=bounds, method="highs"
    )
    x = res.x if res.x is not None else np.full(k1 + 1, np.nan)
    return MarginLP(x[:-1], float(x[-1]), bool(res.success))
