"""Relaxed block structure of the feature kernel ([1], App. D), with the corrected signs.

Assumption D.1 (71): ``Theta^h(x, x) = A_d + A_c + A_n``, same class ``A_c + A_n``, other
class ``A_n``, with PSD (n, n) matrices. The flows are

(72), corrected (the paper prints ``+`` on the last two terms of dH)::

    dH = -(A_d W^T R + m A_c W^T R_class + N A_n W^T R_global),  dW = -R H^T,  db = -R 1

(73)::

    dH1 = -(A_d + m A_c) W^T R1 - m A_n W^T R1 1 1^T,   dH2 = -A_d W^T W H2,
    dW  = -m (R1 H1^T + W H2 H2^T),                     db  = -m R1 1

For ``E = W^T W - c1 H1 H1^T - c2 H2 H2^T`` at a state with ``H1 1 = 0``, eqs. (77)-(78) with
the signs derived here (all ``+``; the paper prints ``-`` between the paired terms)::

    dE = (c1 B - m I) W^T R1 H1^T + H1 R1^T W (c1 B^T - m I)
       + (c2 A_d - m I) W^T W H2 H2^T + H2 H2^T W^T W (c2 A_d^T - m I),   B = A_d + m A_c
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int
from ..labels import label_matrix
from .model import DecomposedState, State

__all__ = [
    "RelaxedParams",
    "drift_relaxed",
    "drift_relaxed_decomposed",
    "relaxed_invariant",
    "relaxed_invariant_derivative",
]


@dataclass(frozen=True)
class RelaxedParams:
    """Sizes and the (n, n) kernel matrices ``A_d, A_c, A_n`` of [1], Assumption D.1."""

    n_classes: int
    n_per_class: int
    A_d: NDArray[np.float64]
    A_c: NDArray[np.float64]
    A_n: NDArray[np.float64]

    def __post_init__(self) -> None:
        check_int(self.n_classes, "n_classes", low=2)
        check_int(self.n_per_class, "n_per_class", low=2)
        A = check_array(self.A_d, "A_d", ndim=2, dtype=np.float64)
        n = A.shape[0]
        check_array(self.A_d, "A_d", shape=(n, n))
        check_array(self.A_c, "A_c", shape=(n, n))
        check_array(self.A_n, "A_n", shape=(n, n))

    @property
    def n_features(self) -> int:
        return int(np.shape(self.A_d)[0])

    @property
    def n_samples(self) -> int:
        return self.n_classes * self.n_per_class


def drift_relaxed(t: float, y: NDArray, params: RelaxedParams) -> NDArray[np.float64]:
    """Full flow under Assumption D.1, [1] eq. (72) with corrected signs (see module)."""
    p = params
    s = State.unpack(y, p)
    C, m = p.n_classes, p.n_per_class
    Y = label_matrix(C, m)
    R = s.W @ s.H + s.b[:, None] - Y  # (C, N)
    R_class = np.repeat(R.reshape(C, C, m).mean(axis=2), m, axis=1)
    R_global = np.repeat(R.mean(axis=1, keepdims=True), C * m, axis=1)
    WtR, WtRc, WtRg = s.W.T @ R, s.W.T @ R_class, s.W.T @ R_global
    dH = -(p.A_d @ WtR + m * p.A_c @ WtRc + C * m * p.A_n @ WtRg)
    return State(dH, -R @ s.H.T, -R.sum(axis=1)).pack()


def drift_relaxed_decomposed(t: float, y: NDArray, params: RelaxedParams) -> NDArray[np.float64]:
    """Decomposed flow under Assumption D.1, [1] eq. (73)."""
    p = params
    s = DecomposedState.unpack(y, p)
    C, m = p.n_classes, p.n_per_class
    R1 = s.W @ s.H1 + s.b[:, None] - np.eye(C)
    WtR1 = s.W.T @ R1
    dH1 = -(p.A_d + m * p.A_c) @ WtR1 - m * p.A_n @ WtR1.sum(axis=1, keepdims=True)
    dH2 = -p.A_d @ s.W.T @ s.W @ s.H2
    dW = -m * (R1 @ s.H1.T + s.W @ s.H2 @ s.H2.T)
    return DecomposedState(dH1, dH2, dW, -m * R1.sum(axis=1)).pack()


def relaxed_invariant(state: DecomposedState, c1: float, c2: float) -> NDArray[np.float64]:
    """``E = W^T W - c1 H1 H1^T - c2 H2 H2^T`` ([1], App. D.1)."""
    s = state
    return s.W.T @ s.W - c1 * s.H1 @ s.H1.T - c2 * s.H2 @ s.H2.T


def relaxed_invariant_derivative(
    state: DecomposedState, params: RelaxedParams, c1: float, c2: float
) -> NDArray[np.float64]:
    """dE/dt along (73) at a state with ``H1 1 = 0``, [1] eqs. (77)-(78), corrected signs.

    Raises
    ------
    ValueError
        If ``H1 1`` is not 0 (the formula assumes centred class means).
    """
    s = state
    p = params
    m = p.n_per_class
    if not np.allclose(s.H1.sum(axis=1), 0.0, atol=1e-10 * max(1.0, np.abs(s.H1).max())):
        raise ValueError("`state.H1` must have zero row sums (H1 1 = 0) for eqs. (77)-(78).")
    n = p.n_features
    I = np.eye(n)
    R1 = s.W @ s.H1 + s.b[:, None] - np.eye(p.n_classes)
    B = p.A_d + m * p.A_c
    S = s.H2 @ s.H2.T
    WtW = s.W.T @ s.W
    t1 = (c1 * B - m * I) @ s.W.T @ R1 @ s.H1.T
    t2 = (c2 * p.A_d - m * I) @ WtW @ S
    return t1 + t1.T + t2 + t2.T
