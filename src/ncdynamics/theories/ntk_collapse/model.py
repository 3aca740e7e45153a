"""Gradient flow of (H, W, b) under a block-structured NTK ([1], Secs. 4-5): the equations.

Notation of [1] (kept here): features ``H`` of shape (n, N) with samples class-major,
classifier ``W`` (C, n), bias ``b`` (C,), ``m`` samples per class, ``N = C m``; the loss is the
sum ``L = 1/2 ||W H + b 1^T - Y||_F^2`` (eq. (4)). The feature kernel has block values
``(kappa_d, kappa_c, kappa_n)`` and

    mu_single = kappa_d - kappa_c,   mu_class = mu_single + m (kappa_c - kappa_n),
    alpha = kappa_n m / (mu_class + C kappa_n m).

Systems (right-hand sides follow ``drift(t, y, params)`` on a flat state, :meth:`State.pack`
or :meth:`DecomposedState.pack`):

- ``full`` (19): dH = -W^T R K^h, dW = -R H^T, db = -R 1_N;
- ``decomposed`` (25): on ``(H1, H2, W, b)`` with ``H Q = sqrt(m) [H1, H2]`` (eq. (23),
  :mod:`~ncdynamics.theories.ntk_collapse.decomposition`);
- ``end-of-training`` (20): dH = -mu_single W^T R, dW = -R H^T, db = 0;
- ``end-of-training-decomposed`` (44): dH1 = 0, dH2 = -mu_single W^T W H2,
  dW = -m W H2 H2^T, db = 0.

Their conserved quantities are in :mod:`~ncdynamics.theories.ntk_collapse.invariants`, their
integration in :mod:`~ncdynamics.theories.ntk_collapse.simulate`.

Erratum: the W-equation of (25) has ``+ W H2 H2^T``; eq. (40) of App. B.2 prints ``-``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal, Protocol

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from ..labels import label_matrix
from .blocks import block_kernel

__all__ = [
    "DRIFTS",
    "SYSTEMS",
    "BlockParams",
    "DecomposedState",
    "State",
    "StateSizes",
    "System",
    "drift_decomposed",
    "drift_end_of_training",
    "drift_end_of_training_decomposed",
    "drift_full",
    "jacobian_decomposed",
    "loss",
]

System = Literal["full", "decomposed", "end-of-training", "end-of-training-decomposed"]
SYSTEMS: tuple[System, ...] = (
    "full",
    "decomposed",
    "end-of-training",
    "end-of-training-decomposed",
)


@dataclass(frozen=True)
class BlockParams:
    """Sizes and feature-kernel block values of the theory ([1], Assumption 3.2).

    Parameters
    ----------
    n_classes : int
        C >= 2.
    n_per_class : int
        m >= 2 samples per class (the within-class part H2 needs m >= 2).
    n_features : int
        n, the feature dimension.
    kappa_d, kappa_c, kappa_n : float
        Diagonal, same-class and other-class values of every ``Theta^h_pp``; the definition
        asks ``kappa_d > kappa_c > kappa_n >= 0``.
    """

    n_classes: int
    n_per_class: int
    n_features: int
    kappa_d: float
    kappa_c: float
    kappa_n: float

    def __post_init__(self) -> None:
        check_int(self.n_classes, "n_classes", low=2)
        check_int(self.n_per_class, "n_per_class", low=2)
        check_int(self.n_features, "n_features", low=1)
        check_scalar(self.kappa_n, "kappa_n", low=0.0)
        check_scalar(self.kappa_c, "kappa_c", low=self.kappa_n, closed="neither")
        check_scalar(self.kappa_d, "kappa_d", low=self.kappa_c, closed="neither")

    @property
    def n_samples(self) -> int:
        """N = C m."""
        return self.n_classes * self.n_per_class

    @property
    def mu_single(self) -> float:
        """``kappa_d - kappa_c`` ([1], eq. (39))."""
        return self.kappa_d - self.kappa_c

    @property
    def mu_class(self) -> float:
        """``mu_single + m (kappa_c - kappa_n)`` ([1], eq. (39))."""
        return self.mu_single + self.n_per_class * (self.kappa_c - self.kappa_n)

    @property
    def alpha(self) -> float:
        """``kappa_n m / (mu_class + C kappa_n m)`` ([1], Theorem 5.1); always < 1/C."""
        km = self.kappa_n * self.n_per_class
        return km / (self.mu_class + self.n_classes * km)

    def feature_kernel(self) -> NDArray[np.float64]:
        """The (N, N) block kernel ``K^h`` with values (kappa_d, kappa_c, kappa_n)."""
        return block_kernel(
            self.n_classes, self.n_per_class, self.kappa_d, self.kappa_c, self.kappa_n
        )


class StateSizes(Protocol):
    """The sizes that lay out a packed state: C classes, n features and N samples.

    :class:`BlockParams` and :class:`~ncdynamics.theories.ntk_collapse.relaxed.RelaxedParams`
    both provide them.
    """

    @property
    def n_classes(self) -> int: ...

    @property
    def n_features(self) -> int: ...

    @property
    def n_samples(self) -> int: ...


@dataclass(frozen=True)
class State:
    """Full state: ``H`` (n, N), ``W`` (C, n), ``b`` (C,).

    The fields may carry the same leading axes (e.g. time first, ``H`` of shape
    ``(n_times, n, N)``) when unpacked from a trajectory: ``State.unpack(traj.ys, params)``.
    """

    H: NDArray[np.float64]
    W: NDArray[np.float64]
    b: NDArray[np.float64]

    def pack(self) -> NDArray[np.float64]:
        """The flat state ``[vec H, vec W, b]`` of length ``n N + C n + C`` (row-major vec)."""
        return np.concatenate([self.H.ravel(), self.W.ravel(), self.b.ravel()])

    @classmethod
    def unpack(cls, y: NDArray[np.float64], p: StateSizes) -> State:
        """Views of a flat state ``y`` of shape ``(..., n N + C n + C)``; see :meth:`pack`."""
        n, N, C = p.n_features, p.n_samples, p.n_classes
        lead = y.shape[:-1]
        H = y[..., : n * N].reshape(*lead, n, N)
        W = y[..., n * N : n * N + C * n].reshape(*lead, C, n)
        return cls(H, W, y[..., n * N + C * n :])

    def validated(self, p: StateSizes) -> State:
        """The state with its shapes checked against ``p`` and cast to float64."""
        n, N, C = p.n_features, p.n_samples, p.n_classes
        return State(
            check_array(self.H, "H", shape=(n, N), dtype=np.float64),
            check_array(self.W, "W", shape=(C, n), dtype=np.float64),
            check_array(self.b, "b", shape=(C,), dtype=np.float64),
        )


@dataclass(frozen=True)
class DecomposedState:
    """Decomposed state ([1], eq. (23)): ``H1`` (n, C), ``H2`` (n, N - C), ``W``, ``b``."""

    H1: NDArray[np.float64]
    H2: NDArray[np.float64]
    W: NDArray[np.float64]
    b: NDArray[np.float64]

    def pack(self) -> NDArray[np.float64]:
        """The flat state ``[vec H1, vec H2, vec W, b]`` (row-major vec)."""
        return np.concatenate([a.ravel() for a in (self.H1, self.H2, self.W, self.b)])

    @classmethod
    def unpack(cls, y: NDArray[np.float64], p: StateSizes) -> DecomposedState:
        """Views of a flat decomposed state of shape ``(..., L)``; see :meth:`pack`."""
        n, N, C = p.n_features, p.n_samples, p.n_classes
        lead = y.shape[:-1]
        i1 = n * C
        i2 = i1 + n * (N - C)
        i3 = i2 + C * n
        return cls(
            y[..., :i1].reshape(*lead, n, C),
            y[..., i1:i2].reshape(*lead, n, N - C),
            y[..., i2:i3].reshape(*lead, C, n),
            y[..., i3:],
        )


# ---------------------------------------------------------------- right-hand sides
@lru_cache(maxsize=16)
def _labels(n_classes: int, n_per_class: int) -> NDArray[np.float64]:
    """The floor's label matrix Y (C, N), built once per size (the drifts run per solver step)."""
    Y = label_matrix(n_classes, n_per_class)
    Y.flags.writeable = False
    return Y


def _residual(H: NDArray, W: NDArray, b: NDArray, p: BlockParams) -> NDArray[np.float64]:
    Y = _labels(p.n_classes, p.n_per_class)
    R: NDArray[np.float64] = W @ H + b[:, None] - Y  # (C, N)
    return R


def _apply_kernel(R: NDArray, p: BlockParams) -> NDArray[np.float64]:
    """``R K^h`` without forming K^h: the bracket of [1], eq. (19)."""
    C, m = p.n_classes, p.n_per_class
    cm = R.reshape(R.shape[0], C, m).mean(axis=2)  # (C, C) = R_1
    R_class = np.repeat(cm, m, axis=1)
    R_global = R.mean(axis=1, keepdims=True)
    dk = p.kappa_c - p.kappa_n
    out: NDArray[np.float64] = (
        p.mu_single * R + dk * m * R_class + p.kappa_n * p.n_samples * R_global
    )
    return out


def drift_full(t: float, y: NDArray, params: BlockParams) -> NDArray[np.float64]:
    """Gradient flow under Assumption 3.2, [1] Theorem 4.1 eq. (19)::

    dH/dt = -W^T [(k_d - k_c) R + (k_c - k_n) m R_class + k_n N R_global] = -W^T R K^h
    dW/dt = -R H^T
    db/dt = -R_global 1_N = -R 1_N
    """
    s = State.unpack(y, params)
    R = _residual(s.H, s.W, s.b, params)
    return State(-s.W.T @ _apply_kernel(R, params), -R @ s.H.T, -R.sum(axis=1)).pack()


def _drift_decomposed_batch(y: NDArray, p: BlockParams) -> NDArray[np.float64]:
    s = DecomposedState.unpack(y, p)
    H1, H2, W, b = s.H1, s.H2, s.W, s.b
    C, m = p.n_classes, p.n_per_class
    Wt = np.swapaxes(W, -1, -2)
    R1 = W @ H1 + b[..., :, None] - np.eye(C)  # (..., C, C)
    WtR1 = Wt @ R1  # (..., n, C)
    dH1 = -(p.mu_class * WtR1 + p.kappa_n * m * WtR1.sum(axis=-1, keepdims=True))
    WH2 = W @ H2  # (..., C, N - C)
    dH2 = -p.mu_single * (Wt @ WH2)
    dW = -m * (R1 @ np.swapaxes(H1, -1, -2) + WH2 @ np.swapaxes(H2, -1, -2))
    db = -m * R1.sum(axis=-1)
    lead = y.shape[:-1]
    return np.concatenate([a.reshape(*lead, -1) for a in (dH1, dH2, dW, db)], axis=-1)


def drift_decomposed(t: float, y: NDArray, params: BlockParams) -> NDArray[np.float64]:
    """Decomposed flow, [1] Theorem 5.1 eq. (25) (sign of the W-equation corrected)::

        R1 = W H1 + b 1^T - I
        dH1/dt = -W^T R1 (mu_class I + kappa_n m 1 1^T)
        dH2/dt = -mu_single W^T W H2
        dW/dt  = -m (R1 H1^T + W H2 H2^T)
        db/dt  = -m R1 1

    ``y`` may carry leading batch axes ``(..., L)``.
    """
    return _drift_decomposed_batch(np.asarray(y, dtype=np.float64), params)


def jacobian_decomposed(t: float, y: NDArray, params: BlockParams) -> NDArray[np.float64]:
    """Jacobian of :func:`drift_decomposed` by vectorised central differences (L, L).

    The drift is a cubic polynomial, so the O(h^2) error is ~1e-12 relative at h = 1e-5
    times the state scale; used by the implicit solvers instead of their own column-by-column
    differences.
    """
    y = np.asarray(y, dtype=np.float64)
    h = 1e-5 * max(1.0, float(np.abs(y).max()))
    eye = h * np.eye(y.size)
    diff = _drift_decomposed_batch(y + eye, params) - _drift_decomposed_batch(y - eye, params)
    return diff.T / (2 * h)


def drift_end_of_training(t: float, y: NDArray, params: BlockParams) -> NDArray[np.float64]:
    """End-of-training flow, [1] eq. (20): ``dH = -mu_single W^T R``, ``dW = -R H^T``, db = 0."""
    s = State.unpack(y, params)
    R = _residual(s.H, s.W, s.b, params)
    return State(-params.mu_single * s.W.T @ R, -R @ s.H.T, np.zeros_like(s.b)).pack()


def drift_end_of_training_decomposed(
    t: float, y: NDArray, params: BlockParams
) -> NDArray[np.float64]:
    """End-of-training decomposed flow, [1] eq. (44): only H2 and W move::

    dH2/dt = -mu_single W^T W H2,   dW/dt = -m W H2 H2^T
    """
    s = DecomposedState.unpack(y, params)
    WH2 = s.W @ s.H2
    return DecomposedState(
        np.zeros_like(s.H1),
        -params.mu_single * s.W.T @ WH2,
        -params.n_per_class * WH2 @ s.H2.T,
        np.zeros_like(s.b),
    ).pack()


#: The right-hand side of each system, by name.
DRIFTS: dict[System, Callable[[float, NDArray, BlockParams], NDArray[np.float64]]] = {
    "full": drift_full,
    "decomposed": drift_decomposed,
    "end-of-training": drift_end_of_training,
    "end-of-training-decomposed": drift_end_of_training_decomposed,
}


def loss(state: State, params: BlockParams) -> float:
    """``1/2 ||W H + b 1^T - Y||_F^2`` ([1], eq. (4), a sum over samples)."""
    R = _residual(state.H, state.W, state.b, params)
    return 0.5 * float(np.sum(R * R))
