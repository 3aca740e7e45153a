"""The conserved matrices of the flows of [1]: E (26), E_eot (27) and E~ (45).

- ``E = W^T W / m - H1 (I - alpha 1 1^T) H1^T / mu_class - H2 H2^T / mu_single``
  ([1], Theorem 5.1) is conserved by the flows ``full`` (19) and ``decomposed`` (25);
- ``E_eot = W^T W - H H^T / mu_single`` (eq. (27)) by the end-of-training flow (20);
- ``E~ = mu_single W^T W - m H2 H2^T`` (eq. (45)) by the end-of-training decomposed flow (44).

Theorem 5.2: ``E = 0`` with a zero global feature mean leads to neural collapse. The systems
are in :mod:`~ncdynamics.theories.ntk_collapse.model`.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .decomposition import within_class_gram
from .model import BlockParams, State

__all__ = ["invariant", "invariant_end_of_training", "invariant_tilde"]


def invariant(state: State, params: BlockParams) -> NDArray[np.float64]:
    """The conserved matrix E of [1], Theorem 5.1 eq. (26), shape (n, n)::

        E = W^T W / m - H1 (I - alpha 1 1^T) H1^T / mu_class - H2 H2^T / mu_single

    computed basis-free: ``H1 (I - alpha 1 1^T) H1^T = H1 H1^T - alpha C^2 <h><h>^T`` and
    ``H2 H2^T = S_W / m``.
    """
    p = params
    s = state.validated(p)
    C, m = p.n_classes, p.n_per_class
    H1 = s.H.reshape(p.n_features, C, m).mean(axis=2)  # (n, C) class means
    g = H1.mean(axis=1)  # (n,) global mean
    H1_term = H1 @ H1.T - p.alpha * C**2 * np.outer(g, g)
    E: NDArray[np.float64] = (
        s.W.T @ s.W / m - H1_term / p.mu_class - within_class_gram(s.H, C) / p.mu_single
    )
    return E


def invariant_end_of_training(state: State, params: BlockParams) -> NDArray[np.float64]:
    """``E_eot = W^T W - H H^T / mu_single`` ([1], eq. (27)), conserved by eq. (20)."""
    s = state.validated(params)
    E: NDArray[np.float64] = s.W.T @ s.W - s.H @ s.H.T / params.mu_single
    return E


def invariant_tilde(state: State, params: BlockParams) -> NDArray[np.float64]:
    """``E~ = mu_single W^T W - m H2 H2^T`` ([1], eq. (45)), conserved by eq. (44).

    Equals ``m mu_single (E + H1 (I - alpha 1 1^T) H1^T / mu_class)``.
    """
    s = state.validated(params)
    m = params.n_per_class
    E: NDArray[np.float64] = params.mu_single * s.W.T @ s.W - m * within_class_gram(
        s.H, params.n_classes
    )
    return E
