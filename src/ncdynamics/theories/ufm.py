"""The unconstrained features model (UFM): losses, descent, gradient flow and GD.

The shared floor's model of a network whose penultimate features are free variables: a
classifier ``W`` and features ``H`` trained together on the labels, under the summed
cross-entropy or the squared error. Every theory that works on the UFM uses this module
(Hadamard's reduced dynamics are tested against it); a new theory on the UFM starts here.

Layouts (a batch of ``R`` realisations first where a function accepts one):

- ``W``: (R, K, d) classifier, ``H``: (R, d, K n) features in class order
  ``[h_11, ..., h_n1, h_12, ..., h_nK]``, ``Z = W H``: (R, K, K n) logits;
- labels ``Y = I_K ⊗ 1_n^T`` of shape (K, K n)
  (:func:`ncdynamics.theories.labels.label_matrix`);
- the *state* of a trajectory stacks the classifier rows over the features,
  ``[W; H^T]`` of shape (K + K n, d) (:func:`pack_state`, :func:`unpack_state`): all ``K + K n``
  vectors of feature space in one array, so that a UFM trajectory is a
  :class:`~ncdynamics.theories.Trajectory` with ``ys`` of shape (n_times, K + K n, d), or
  (R, n_times, K + K n, d) for R realisations.

The cross-entropy loss is the *sum* over samples ([1], Eq. (1)); the squared error is
``½ ‖Y - W H‖_F²``. With ``G = Y - P(WH)`` (cross-entropy, ``P`` the column softmax) or
``G = Y - WH`` (squared error), gradient flow is ([1], Eqs. (2) and (4))::

    dW/dt = G H^T,     dH/dt = W^T G

and gradient descent takes simultaneous steps of size ``η`` along these directions, so GD
iteration ``k`` approximates flow time ``t = η k``. :func:`run_gd_reference` is the plain
one-realisation loop; the Hadamard theory's batched fast path is
:func:`ncdynamics.theories.hadamard.fast_batched_gd.run_gd`.

References
----------
.. [1] C. Garrod, J. P. Keating and C. Thrampoulidis, "Diagonalizing the Softmax: Hadamard
   Initialization for Tractable Cross-Entropy Dynamics", preprint, 2025.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from .._validation import check_array, check_int, check_option, check_scalar
from .integrate import Trajectory, solve_ode
from .iterate import check_steps, iterate_map
from .labels import label_matrix

__all__ = [
    "LOSSES",
    "Loss",
    "check_pair",
    "ce_descent",
    "ce_loss",
    "ce_loss_from_logits",
    "logit_descent",
    "mse_descent",
    "mse_loss",
    "pack_state",
    "run_gd_reference",
    "run_logit_gd",
    "softmax_columns",
    "solve_gradient_flow",
    "state_matrices",
    "unpack_state",
]

Loss = Literal["ce", "mse"]
LOSSES = ("ce", "mse")

Pair = tuple[NDArray[np.float64], NDArray[np.float64]]


def check_pair(W: Any, H: Any, n: int) -> Pair:
    """Validate ``W`` (.., K, d) and ``H`` (.., d, K n) as float64 arrays of matching shapes."""
    W = check_array(W, "W", dtype=np.float64)
    H = check_array(H, "H", dtype=np.float64)
    if W.ndim not in (2, 3) or H.ndim != W.ndim:
        raise ValueError(
            f"`W` and `H` must both be (K, d)/(d, K n) or batched (R, K, d)/(R, d, K n); "
            f"got shapes {W.shape} and {H.shape}."
        )
    K, d = W.shape[-2:]
    if H.shape[-2:] != (d, K * n) or H.shape[:-2] != W.shape[:-2]:
        raise ValueError(
            f"`H` must have shape {(*W.shape[:-2], d, K * n)} for `W` of shape {W.shape} and "
            f"n={n}; got {H.shape}."
        )
    return W, H


def softmax_columns(Z: Any) -> NDArray[np.float64]:
    """Column-wise softmax ``P(Z)_ij = exp(Z_ij) / Σ_i' exp(Z_i'j)`` ([1], §2).

    The class axis is the second to last, so a batch ``(R, K, N)`` works as well as a single
    ``(K, N)`` matrix (and a vector ``(K,)`` is treated as one column).

    Parameters
    ----------
    Z : array_like of shape (..., K, N) or (K,)

    Returns
    -------
    ndarray, same shape as ``Z``; each column sums to one.
    """
    Z = check_array(Z, "Z", dtype=np.float64, min_size=1)
    axis = 0 if Z.ndim == 1 else -2
    shifted = Z - Z.max(axis=axis, keepdims=True)
    E = np.exp(shifted)
    return E / E.sum(axis=axis, keepdims=True)


# ----------------------------------------------------------------------------- state
def pack_state(W: Any, H: Any) -> NDArray[np.float64]:
    """The UFM state ``[W; H^T]``: ``W`` (..., K, d) over ``H^T`` (..., K n, d)."""
    W = np.asarray(W, dtype=np.float64)
    H = np.asarray(H, dtype=np.float64)
    return np.concatenate([W, np.swapaxes(H, -1, -2)], axis=-2)


def unpack_state(state: Any, n_classes: int) -> Pair:
    """``W`` (..., K, d) and ``H`` (..., d, K n) of a state ``[W; H^T]`` (C-ordered copies).

    Parameters
    ----------
    state : array_like of shape (..., K + K n, d)
    n_classes : int
        ``K`` in [1]: the first ``K`` rows of the state are the classifier.
    """
    state = check_array(state, "state", dtype=np.float64)
    K = check_int(n_classes, "n_classes", low=2)
    if state.ndim < 2 or state.shape[-2] <= K or (state.shape[-2] - K) % K:
        raise ValueError(
            f"`state` must have shape (..., K + K n, d) with K = n_classes = {K}; "
            f"got {state.shape}."
        )
    W = np.ascontiguousarray(state[..., :K, :])
    H = np.ascontiguousarray(np.swapaxes(state[..., K:, :], -1, -2))
    return W, H


def state_matrices(
    state: Any, n_classes: int
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``Z = W H``, ``W W^T`` and ``H^T H`` of states ``[W; H^T]`` (the NC matrices of [1]).

    Returns
    -------
    Z : ndarray of shape (..., K, K n)
    WWt : ndarray of shape (..., K, K)
    HtH : ndarray of shape (..., K n, K n)
    """
    W, H = unpack_state(state, n_classes)
    HT = np.swapaxes(H, -1, -2)
    return W @ H, W @ np.swapaxes(W, -1, -2), HT @ H


# ----------------------------------------------------------------------------- losses
def ce_loss_from_logits(Z: Any, *, n: int = 1) -> NDArray[np.float64]:
    """Summed CE of logits ``Z`` (..., K, K n) in the form of [1], Eq. (1).

    Each column contributes ``log(1 + Σ_{c≠y} exp(z_c - z_y))``, evaluated with ``log1p``
    (and a shift when some margin is negative), so tiny losses keep full relative precision.
    """
    Z = check_array(Z, "Z", dtype=np.float64)
    K = Z.shape[-2]
    n = check_int(n, "n", low=1)
    cols = np.arange(K * n)
    labels = np.repeat(np.arange(K), n)
    m = Z - Z[..., labels, cols][..., None, :]  # (..., K, Kn), zero at the label
    m[..., labels, cols] = -np.inf
    top = np.maximum(m.max(axis=-2), 0.0)  # (..., Kn)
    s = np.exp(m - top[..., None, :]).sum(axis=-2)
    per_col = np.where(top > 0, top + np.log(np.exp(-top) + s), np.log1p(s))
    out: NDArray[np.float64] = per_col.sum(axis=-1)
    return out


def ce_loss(W: Any, H: Any, *, n: int = 1) -> NDArray[np.float64]:
    """Summed cross-entropy loss of [1], Eq. (1), per realisation (log-sum-exp stable).

    Returns
    -------
    ndarray of shape (R,) (or a 0-d array without a batch axis)
    """
    n = check_int(n, "n", low=1)
    W, H = check_pair(W, H, n)
    return ce_loss_from_logits(W @ H, n=n)


def mse_loss(W: Any, H: Any, *, n: int = 1) -> NDArray[np.float64]:
    """``½ ‖Y - W H‖_F²``, whose gradient flow is Eq. (4) of [1]."""
    n = check_int(n, "n", low=1)
    W, H = check_pair(W, H, n)
    Y = label_matrix(W.shape[-2], n)
    out: NDArray[np.float64] = 0.5 * ((Y - W @ H) ** 2).sum(axis=(-2, -1))
    return out


def _directions(
    W: NDArray[np.float64], H: NDArray[np.float64], Y: NDArray[np.float64], loss: Loss
) -> Pair:
    """``(G H^T, W^T G)`` with ``G = Y - P(WH)`` (CE) or ``G = Y - WH`` (MSE); no checks."""
    Z = W @ H
    G = Y - (softmax_columns(Z) if loss == "ce" else Z)
    return G @ np.swapaxes(H, -1, -2), np.swapaxes(W, -1, -2) @ G


def ce_descent(W: Any, H: Any, *, n: int = 1) -> Pair:
    """Descent directions ``((Y-P)H^T, W^T(Y-P))`` = ``-∇L`` of Eq. (1) ([1], Eq. (2))."""
    n = check_int(n, "n", low=1)
    W, H = check_pair(W, H, n)
    return _directions(W, H, label_matrix(W.shape[-2], n), "ce")


def mse_descent(W: Any, H: Any, *, n: int = 1) -> Pair:
    """MSE descent directions ``((Y-WH)H^T, W^T(Y-WH))`` ([1], Eq. (4))."""
    n = check_int(n, "n", low=1)
    W, H = check_pair(W, H, n)
    return _directions(W, H, label_matrix(W.shape[-2], n), "mse")


def logit_descent(Z: Any, *, n: int = 1) -> NDArray[np.float64]:
    """Descent direction ``Y - P(Z)`` of the logit loss (13) of [1] (Thm 6)."""
    Z = check_array(Z, "Z", dtype=np.float64)
    return label_matrix(Z.shape[-2], check_int(n, "n", low=1)) - softmax_columns(Z)


# ----------------------------------------------------------------------------- descent
def run_gd_reference(
    W0: Any,
    H0: Any,
    *,
    steps: Any,
    learning_rate: float,
    n: int = 1,
    loss: Loss = "ce",
) -> Trajectory:
    """Gradient descent on one (W, H), written plainly ([1], Eq. (2), discretised).

    Both factors are updated simultaneously from the same iterate::

        W ← W + η (Y - P) H^T,     H ← H + η W^T (Y - P)

    (``P`` replaced by ``W H`` for ``loss="mse"``, Eq. (4)). This is the reference that the
    batched fast path :func:`~ncdynamics.theories.hadamard.fast_batched_gd.run_gd` is tested
    against; use that one for many realisations.

    Parameters
    ----------
    W0 : array_like of shape (K, d)
    H0 : array_like of shape (d, K n)
    steps : array_like of int, shape (n_log,)
        Non-decreasing iterations to record (0 records the initial state).
    learning_rate : float
        Step size ``η > 0``.
    n : int, default=1
        Samples per class.
    loss : {"ce", "mse"}

    Returns
    -------
    Trajectory
        ``ts`` the iterations (as floats), ``ys`` the states ``[W; H^T]`` of shape
        (n_log, K + K n, d) (:func:`unpack_state`), ``n_evals`` the gradient evaluations.
    """
    n = check_int(n, "n", low=1)
    W, H = check_pair(W0, H0, n)
    if W.ndim != 2:
        raise ValueError(f"`W0` must be a single (K, d) matrix; got shape {W.shape}.")
    check_option(loss, "loss", LOSSES)
    lr = check_scalar(learning_rate, "learning_rate", low=0, closed="neither")
    steps = check_steps(steps)
    Y = label_matrix(W.shape[0], n)

    def step(state: Pair) -> Pair:
        dW, dH = _directions(*state, Y, loss)
        return state[0] + lr * dW, state[1] + lr * dH

    states = iterate_map(step, (W, H), steps)
    ys = np.stack([pack_state(w, h) for w, h in states])
    return Trajectory(steps.astype(np.float64), ys, True, "", int(steps[-1]))


def run_logit_gd(Z0: Any, *, steps: Any, learning_rate: float, n: int = 1) -> Trajectory:
    """Gradient descent directly on the logits, ``Z ← Z + η (Y - P(Z))`` ([1], Eq. (13)).

    Parameters
    ----------
    Z0 : array_like of shape (R, K, K n) or (K, K n)
    steps : array_like of int, shape (n_log,)
    learning_rate : float
    n : int, default=1

    Returns
    -------
    Trajectory
        ``ys`` of shape (R, n_log, K, K n), or (n_log, K, K n) for a single ``Z0``.
    """
    n = check_int(n, "n", low=1)
    Z = check_array(Z0, "Z0", dtype=np.float64)
    if Z.ndim not in (2, 3):
        raise ValueError(f"`Z0` must have shape (K, K n) or (R, K, K n); got {Z.shape}.")
    lr = check_scalar(learning_rate, "learning_rate", low=0, closed="neither")
    steps = check_steps(steps)
    Y = label_matrix(Z.shape[-2], n)

    def step(z: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = z + lr * (Y - softmax_columns(z))
        return out

    logits: list[NDArray[np.float64]] = iterate_map(step, Z, steps)
    ys = np.stack(logits, axis=-3)  # time before the (K, K n) matrix
    return Trajectory(steps.astype(np.float64), ys, True, "", int(steps[-1]))


def solve_gradient_flow(
    W0: Any,
    H0: Any,
    ts: Any,
    *,
    n: int = 1,
    loss: Loss = "ce",
    rtol: float = 1e-10,
    atol: float = 1e-14,
) -> Trajectory:
    """Integrate the gradient flow of one realisation with an ODE solver ([1], Eqs. (2), (4)).

    Uses DOP853; meant for small problems where GD's O(η) error matters (Theorem 8 checks).

    Parameters
    ----------
    W0 : array_like of shape (K, d)
    H0 : array_like of shape (d, K n)
    ts : array_like of shape (n_times,), increasing, starting at the initial time.
    n : int, default=1
        Samples per class.
    loss : {"ce", "mse"}, default="ce"
        Summed cross-entropy, or the squared error ``½ ‖Y - W H‖_F²``.
    rtol, atol : float
        Tolerances of the solver.

    Returns
    -------
    Trajectory
        ``ys`` the states ``[W; H^T]`` of shape (n_times, K + K n, d) (:func:`unpack_state`).
    """
    n = check_int(n, "n", low=1)
    W0, H0 = check_pair(W0, H0, n)
    if W0.ndim != 2:
        raise ValueError(f"`W0` must be a single (K, d) matrix; got shape {W0.shape}.")
    check_option(loss, "loss", LOSSES)
    K, d = W0.shape
    nw = K * d
    Y = label_matrix(K, n)

    def rhs(t: float, y: NDArray[np.float64], _: Any) -> NDArray[np.float64]:
        W = y[:nw].reshape(K, d)
        H = y[nw:].reshape(d, K * n)
        dW, dH = _directions(W, H, Y, loss)
        return np.concatenate([dW.ravel(), dH.ravel()])

    y0 = np.concatenate([W0.ravel(), H0.ravel()])
    traj = solve_ode(rhs, y0, ts, None, method="DOP853", rtol=rtol, atol=atol)
    W = traj.ys[:, :nw].reshape(-1, K, d)
    H = traj.ys[:, nw:].reshape(-1, d, K * n)
    return Trajectory(traj.ts, pack_state(W, H), traj.success, traj.message, traj.n_evals)
