"""Gradient flow of (H, W, b) under a block-structured NTK and its invariant ([1], Secs. 4-5).

Notation of [1] (kept here): features ``H`` of shape (n, N) with samples class-major,
classifier ``W`` (C, n), bias ``b`` (C,), ``m`` samples per class, ``N = C m``; the loss is the
sum ``L = 1/2 ||W H + b 1^T - Y||_F^2`` (eq. (4)). The feature kernel has block values
``(kappa_d, kappa_c, kappa_n)`` and

    mu_single = kappa_d - kappa_c,   mu_class = mu_single + m (kappa_c - kappa_n),
    alpha = kappa_n m / (mu_class + C kappa_n m).

Systems (right-hand sides follow ``drift(t, y, params)`` on a flat state):

- ``full`` (19): dH = -W^T R K^h, dW = -R H^T, db = -R 1_N;
- ``decomposed`` (25): on ``(H1, H2, W, b)`` with ``H Q = sqrt(m) [H1, H2]`` (eq. (23));
- ``end-of-training`` (20): dH = -mu_single W^T R, dW = -R H^T, db = 0;
- ``end-of-training-decomposed`` (44): dH1 = 0, dH2 = -mu_single W^T W H2,
  dW = -m W H2 H2^T, db = 0.

The invariant (26) ``E = W^T W / m - H1 (I - alpha 1 1^T) H1^T / mu_class
- H2 H2^T / mu_single`` is conserved by ``full``/``decomposed``; (27) by ``end-of-training``;
(45) by ``end-of-training-decomposed``.

Erratum: the W-equation of (25) has ``+ W H2 H2^T``; eq. (40) of App. B.2 prints ``-``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from ..integrate import solve_ode
from .blocks import feature_basis

__all__ = [
    "SYSTEMS",
    "BlockParams",
    "DecomposedState",
    "FlowTrajectory",
    "State",
    "compose_features",
    "decompose_features",
    "drift_decomposed",
    "drift_end_of_training",
    "drift_end_of_training_decomposed",
    "drift_full",
    "invariant",
    "invariant_end_of_training",
    "invariant_tilde",
    "jacobian_decomposed",
    "loss",
    "simulate_flow",
    "simulate_gd",
    "within_class_gram",
]

SYSTEMS = ("full", "decomposed", "end-of-training", "end-of-training-decomposed")


@dataclass(frozen=True)
class BlockParams:
    """Sizes and feature-kernel block values of the theory ([1], Assumption 3.2).

    Parameters
    ----------
    n_classes : int
        C >= 2.
    n_per_class : int
        m >= 2 samples per class.
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
        from .blocks import block_kernel

        return block_kernel(
            self.n_classes, self.n_per_class, self.kappa_d, self.kappa_c, self.kappa_n
        )


@dataclass(frozen=True)
class State:
    """Full state: ``H`` (n, N), ``W`` (C, n), ``b`` (C,)."""

    H: NDArray[np.float64]
    W: NDArray[np.float64]
    b: NDArray[np.float64]

    def pack(self) -> NDArray[np.float64]:
        return np.concatenate([self.H.ravel(), self.W.ravel(), self.b.ravel()])

    @classmethod
    def unpack(cls, y: NDArray[np.float64], p: BlockParams) -> State:
        n, N, C = p.n_features, p.n_samples, p.n_classes
        H = y[: n * N].reshape(n, N)
        W = y[n * N : n * N + C * n].reshape(C, n)
        return cls(H, W, y[n * N + C * n :])

    def validated(self, p: BlockParams) -> State:
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
        return np.concatenate([a.ravel() for a in (self.H1, self.H2, self.W, self.b)])

    @classmethod
    def unpack(cls, y: NDArray[np.float64], p: BlockParams) -> DecomposedState:
        n, N, C = p.n_features, p.n_samples, p.n_classes
        i1 = n * C
        i2 = i1 + n * (N - C)
        i3 = i2 + C * n
        return cls(y[:i1].reshape(n, C), y[i1:i2].reshape(n, N - C), y[i2:i3].reshape(C, n), y[i3:])


# ---------------------------------------------------------------- feature decomposition
def decompose_features(
    H: NDArray, n_classes: int, *, kind: Literal["householder", "helmert"] = "householder"
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``H1 = H Q1 / sqrt(m)`` (n, C) and ``H2 = H Q2 / sqrt(m)`` (n, N - C), [1] eq. (23).

    ``H1`` holds the class means (eq. (24)); ``H2 = 0`` exactly when NC1 holds.
    """
    H = check_array(H, "H", ndim=2, dtype=np.float64)
    C = check_int(n_classes, "n_classes", low=2)
    if H.shape[1] % C:
        raise ValueError(f"`H` must have a multiple of n_classes={C} columns; got {H.shape[1]}.")
    m = H.shape[1] // C
    Q1, Q2 = feature_basis(C, m, kind=kind)
    return H @ Q1 / np.sqrt(m), H @ Q2 / np.sqrt(m)


def compose_features(
    H1: NDArray, H2: NDArray, *, kind: Literal["householder", "helmert"] = "householder"
) -> NDArray[np.float64]:
    """Inverse of :func:`decompose_features`: ``H = sqrt(m) (H1 Q1^T + H2 Q2^T)``."""
    H1 = check_array(H1, "H1", ndim=2, dtype=np.float64)
    n, C = H1.shape
    H2 = check_array(H2, "H2", ndim=2, dtype=np.float64)
    if H2.shape[0] != n or H2.shape[1] % C:
        raise ValueError(f"`H2` must have shape ({n}, C (m - 1)) with C={C}; got {H2.shape}.")
    m = H2.shape[1] // C + 1
    Q1, Q2 = feature_basis(C, m, kind=kind)
    return np.sqrt(m) * (H1 @ Q1.T + H2 @ Q2.T)


def within_class_gram(H: NDArray, n_classes: int) -> NDArray[np.float64]:
    """``H2 H2^T = S_W / m`` without a basis ([1], eq. (24); S_W the within-class scatter)."""
    H = check_array(H, "H", ndim=2, dtype=np.float64)
    n, N = H.shape
    view = H.reshape(n, n_classes, N // n_classes)  # (n, C, m)
    dev = (view - view.mean(axis=2, keepdims=True)).reshape(n, N)
    return dev @ dev.T / (N // n_classes)


# ---------------------------------------------------------------- right-hand sides
def _residual(H: NDArray, W: NDArray, b: NDArray, p: BlockParams) -> NDArray[np.float64]:
    Y = np.kron(np.eye(p.n_classes), np.ones((1, p.n_per_class)))
    return W @ H + b[:, None] - Y  # (C, N)


def _apply_kernel(R: NDArray, p: BlockParams) -> NDArray[np.float64]:
    """``R K^h`` without forming K^h: the bracket of [1], eq. (19)."""
    C, m = p.n_classes, p.n_per_class
    cm = R.reshape(R.shape[0], C, m).mean(axis=2)  # (C, C) = R_1
    R_class = np.repeat(cm, m, axis=1)
    R_global = R.mean(axis=1, keepdims=True)
    dk = p.kappa_c - p.kappa_n
    return p.mu_single * R + dk * m * R_class + p.kappa_n * p.n_samples * R_global


def drift_full(t: float, y: NDArray, params: BlockParams) -> NDArray[np.float64]:
    """Gradient flow under Assumption 3.2, [1] Theorem 4.1 eq. (19)::

    dH/dt = -W^T [(k_d - k_c) R + (k_c - k_n) m R_class + k_n N R_global] = -W^T R K^h
    dW/dt = -R H^T
    db/dt = -R_global 1_N = -R 1_N
    """
    s = State.unpack(y, params)
    R = _residual(s.H, s.W, s.b, params)
    return State(-s.W.T @ _apply_kernel(R, params), -R @ s.H.T, -R.sum(axis=1)).pack()


def _split_decomposed(y: NDArray, p: BlockParams) -> tuple[NDArray, ...]:
    """Views ``H1, H2, W, b`` of a (possibly batched, ``(..., L)``) decomposed state."""
    n, N, C = p.n_features, p.n_samples, p.n_classes
    lead = y.shape[:-1]
    i1 = n * C
    i2 = i1 + n * (N - C)
    i3 = i2 + C * n
    return (
        y[..., :i1].reshape(*lead, n, C),
        y[..., i1:i2].reshape(*lead, n, N - C),
        y[..., i2:i3].reshape(*lead, C, n),
        y[..., i3:],
    )


def _drift_decomposed_batch(y: NDArray, p: BlockParams) -> NDArray[np.float64]:
    H1, H2, W, b = _split_decomposed(y, p)
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


_DRIFTS = {
    "full": drift_full,
    "decomposed": drift_decomposed,
    "end-of-training": drift_end_of_training,
    "end-of-training-decomposed": drift_end_of_training_decomposed,
}


# ---------------------------------------------------------------- invariants and loss
def loss(state: State, params: BlockParams) -> float:
    """``1/2 ||W H + b 1^T - Y||_F^2`` ([1], eq. (4), a sum over samples)."""
    R = _residual(state.H, state.W, state.b, params)
    return 0.5 * float(np.sum(R * R))


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
    return s.W.T @ s.W / m - H1_term / p.mu_class - within_class_gram(s.H, C) / p.mu_single


def invariant_end_of_training(state: State, params: BlockParams) -> NDArray[np.float64]:
    """``E_eot = W^T W - H H^T / mu_single`` ([1], eq. (27)), conserved by eq. (20)."""
    s = state.validated(params)
    return s.W.T @ s.W - s.H @ s.H.T / params.mu_single


def invariant_tilde(state: State, params: BlockParams) -> NDArray[np.float64]:
    """``E~ = mu_single W^T W - m H2 H2^T`` ([1], eq. (45)), conserved by eq. (44).

    Equals ``m mu_single (E + H1 (I - alpha 1 1^T) H1^T / mu_class)``.
    """
    s = state.validated(params)
    m = params.n_per_class
    return params.mu_single * s.W.T @ s.W - m * within_class_gram(s.H, params.n_classes)


# ---------------------------------------------------------------- integration
@dataclass(frozen=True)
class FlowTrajectory:
    """A solved flow in the full variables.

    Attributes
    ----------
    ts : ndarray of shape (n_times,)
        Flow time (or step index times the learning rate for GD).
    H : ndarray of shape (n_times, n, N)
    W : ndarray of shape (n_times, C, n)
    b : ndarray of shape (n_times, C)
    success : bool
    message : str
    """

    ts: NDArray[np.float64]
    H: NDArray[np.float64]
    W: NDArray[np.float64]
    b: NDArray[np.float64]
    success: bool = True
    message: str = ""

    def state(self, k: int) -> State:
        """The state at time index ``k``."""
        return State(self.H[k], self.W[k], self.b[k])

    def __len__(self) -> int:
        return self.ts.size


def _to_flat(state: State, params: BlockParams, system: str) -> NDArray[np.float64]:
    if system in ("full", "end-of-training"):
        return state.pack()
    H1, H2 = decompose_features(state.H, params.n_classes)
    return DecomposedState(H1, H2, state.W, state.b).pack()


def _from_flat(ys: NDArray, params: BlockParams, system: str) -> tuple[NDArray, ...]:
    Hs, Ws, bs = [], [], []
    for y in ys:
        if system in ("full", "end-of-training"):
            s = State.unpack(y, params)
            H = s.H
        else:
            d = DecomposedState.unpack(y, params)
            H = compose_features(d.H1, d.H2)
            s = State(H, d.W, d.b)
        Hs.append(H)
        Ws.append(s.W)
        bs.append(s.b)
    return np.array(Hs), np.array(Ws), np.array(bs)


def simulate_flow(
    state0: State,
    times: NDArray,
    params: BlockParams,
    *,
    system: Literal[
        "full", "decomposed", "end-of-training", "end-of-training-decomposed"
    ] = "decomposed",
    method: str = "LSODA",
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> FlowTrajectory:
    """Integrate one of the systems of [1] (see the module docstring) from ``state0``.

    ``decomposed`` (default) is eq. (25), equivalent to ``full`` (19) and cheaper; both are
    returned in the full variables (H recomposed from H1, H2).

    Parameters
    ----------
    state0 : State
    times : ndarray of shape (n_times,), increasing
    params : BlockParams
    system : str
    method, rtol, atol
        Passed to :func:`ncdynamics.theories.integrate.solve_ode`.
    """
    check_option(system, "system", SYSTEMS)
    s0 = state0.validated(params)
    jac = jacobian_decomposed if system == "decomposed" and method != "DOP853" else None
    traj = solve_ode(
        _DRIFTS[system],
        _to_flat(s0, params, system),
        times,
        params,
        method=method,
        rtol=rtol,
        atol=atol,
        jac=jac,
    )
    H, W, b = _from_flat(traj.ys, params, system)
    return FlowTrajectory(traj.ts, H, W, b, traj.success, traj.message)


def simulate_gd(
    state0: State,
    params: BlockParams,
    *,
    learning_rate: float,
    n_steps: int,
    record_every: int = 1,
    system: Literal["full", "decomposed", "end-of-training", "end-of-training-decomposed"] = "full",
) -> FlowTrajectory:
    """Gradient descent: explicit Euler steps ``y <- y + eta * drift(y)`` on ``system``.

    The invariant E is conserved only to O(eta) per unit time under GD ([1] uses gradient
    flow). ``ts`` of the result is ``step * learning_rate``.
    """
    check_option(system, "system", SYSTEMS)
    eta = check_scalar(learning_rate, "learning_rate", low=0.0, closed="neither")
    steps = check_int(n_steps, "n_steps", low=0)
    every = check_int(record_every, "record_every", low=1)
    drift = _DRIFTS[system]
    y = _to_flat(state0.validated(params), params, system)
    rec, ts = [y.copy()], [0.0]
    for k in range(1, steps + 1):
        y = y + eta * drift(0.0, y, params)
        if not np.all(np.isfinite(y)):
            H, W, b = _from_flat(np.array(rec), params, system)
            return FlowTrajectory(np.array(ts), H, W, b, False, f"diverged at step {k}")
        if k % every == 0 or k == steps:
            rec.append(y.copy())
            ts.append(k * eta)
    H, W, b = _from_flat(np.array(rec), params, system)
    return FlowTrajectory(np.array(ts), H, W, b, True, "")
