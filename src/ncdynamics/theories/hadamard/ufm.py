"""The unconstrained features model (UFM) with summed cross-entropy: loss, flows and GD.

Layouts (batch of ``R`` realisations first; a single realisation may drop the batch axis):

- ``W``: (R, K, d) classifier, ``H``: (R, d, K n) features in class order
  ``[h_11, ..., h_n1, h_12, ..., h_nK]``, ``Z = W H``: (R, K, K n) logits;
- labels ``Y = I_K ⊗ 1_n^T`` of shape (K, K n).

The loss is the *sum* over samples of [1], Eq. (1). Gradient flow is Eq. (2)::

    dW/dt = (Y - P(WH)) H^T,     dH/dt = W^T (Y - P(WH))

and gradient descent takes simultaneous steps of size ``η`` along these directions, so GD
iteration ``k`` approximates flow time ``t = η k``.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from ..integrate import solve_ode
from .structure import softmax_columns

__all__ = [
    "FlowResult",
    "GDResult",
    "ce_descent",
    "ce_loss",
    "ce_loss_from_logits",
    "label_matrix",
    "logit_descent",
    "mse_descent",
    "mse_loss",
    "run_gd",
    "run_logit_gd",
    "solve_gradient_flow",
]

Loss = Literal["ce", "mse"]


def label_matrix(K: int, n: int = 1) -> NDArray[np.float64]:
    """One-hot labels ``Y = I_K ⊗ 1_n^T`` of shape (K, K n) ([1], §2)."""
    K = check_int(K, "K", low=2)
    n = check_int(n, "n", low=1)
    return np.kron(np.eye(K), np.ones((1, n)))


def _check_pair(W: Any, H: Any, n: int) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
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
    return per_col.sum(axis=-1)


def ce_loss(W: Any, H: Any, *, n: int = 1) -> NDArray[np.float64]:
    """Summed cross-entropy loss of [1], Eq. (1), per realisation (log-sum-exp stable).

    Returns
    -------
    ndarray of shape (R,) (or a 0-d array without a batch axis)
    """
    n = check_int(n, "n", low=1)
    W, H = _check_pair(W, H, n)
    return ce_loss_from_logits(W @ H, n=n)


def mse_loss(W: Any, H: Any, *, n: int = 1) -> NDArray[np.float64]:
    """``½ ‖Y - W H‖_F²``, whose gradient flow is Eq. (4) of [1]."""
    n = check_int(n, "n", low=1)
    W, H = _check_pair(W, H, n)
    Y = label_matrix(W.shape[-2], n)
    return 0.5 * ((Y - W @ H) ** 2).sum(axis=(-2, -1))


def ce_descent(W: Any, H: Any, *, n: int = 1) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Descent directions ``((Y-P)H^T, W^T(Y-P))`` = ``-∇L`` of Eq. (1) ([1], Eq. (2))."""
    n = check_int(n, "n", low=1)
    W, H = _check_pair(W, H, n)
    G = label_matrix(W.shape[-2], n) - softmax_columns(W @ H)
    return G @ np.swapaxes(H, -1, -2), np.swapaxes(W, -1, -2) @ G


def mse_descent(W: Any, H: Any, *, n: int = 1) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """MSE descent directions ``((Y-WH)H^T, W^T(Y-WH))`` ([1], Eq. (4))."""
    n = check_int(n, "n", low=1)
    W, H = _check_pair(W, H, n)
    G = label_matrix(W.shape[-2], n) - W @ H
    return G @ np.swapaxes(H, -1, -2), np.swapaxes(W, -1, -2) @ G


def logit_descent(Z: Any, *, n: int = 1) -> NDArray[np.float64]:
    """Descent direction ``Y - P(Z)`` of the logit loss (13) of [1] (Thm 6)."""
    Z = check_array(Z, "Z", dtype=np.float64)
    return label_matrix(Z.shape[-2], check_int(n, "n", low=1)) - softmax_columns(Z)


def _check_steps(steps: Any) -> NDArray[np.int64]:
    steps = check_array(steps, "steps", ndim=1, min_size=1)
    if not np.all(steps == np.round(steps)) or steps[0] < 0 or np.any(np.diff(steps) < 0):
        raise ValueError("`steps` must be non-negative, non-decreasing integers.")
    return steps.astype(np.int64)


@dataclass(frozen=True)
class GDResult:
    """Snapshots of batched gradient descent on the UFM.

    Attributes
    ----------
    steps : ndarray of shape (n_log,)
        GD iterations of the snapshots.
    Z : ndarray of shape (n_log, R, K, K n)
    WWt : ndarray of shape (n_log, R, K, K)
    HtH : ndarray of shape (n_log, R, K n, K n)
    W : ndarray of shape (R, K, d)
        Final classifier.
    H : ndarray of shape (R, d, K n)
        Final features.
    """

    steps: NDArray[np.int64]
    Z: NDArray[np.float64]
    WWt: NDArray[np.float64]
    HtH: NDArray[np.float64]
    W: NDArray[np.float64]
    H: NDArray[np.float64]


def run_gd(
    W0: Any,
    H0: Any,
    *,
    steps: Any,
    learning_rate: float,
    n: int = 1,
    loss: Loss = "ce",
) -> GDResult:
    """Gradient descent on (W, H) for ``R`` realisations at once ([1], Eq. (2), discretised).

    Both factors are updated simultaneously from the same iterate::

        W ← W + η (Y - P) H^T,     H ← H + η W^T (Y - P)

    (``P`` replaced by ``W H`` for ``loss="mse"``, Eq. (4)). Runs to ``steps[-1]`` and keeps
    ``Z``, ``W W^T`` and ``H^T H`` at every entry of ``steps`` (small, whatever ``d``).

    Parameters
    ----------
    W0 : array_like of shape (R, K, d) or (K, d)
    H0 : array_like of shape (R, d, K n) or (d, K n)
    steps : array_like of int, shape (n_log,)
        Non-decreasing iterations to record (0 records the initial state).
    learning_rate : float
        Step size ``η > 0``.
    n : int, default=1
        Samples per class.
    loss : {"ce", "mse"}

    Returns
    -------
    GDResult
        Always with a batch axis (R = 1 for unbatched input).
    """
    n = check_int(n, "n", low=1)
    W, H = _check_pair(W0, H0, n)
    check_option(loss, "loss", ("ce", "mse"))
    lr = check_scalar(learning_rate, "learning_rate", low=0, closed="neither")
    steps = _check_steps(steps)
    W = (W[None] if W.ndim == 2 else W).copy()  # (R, K, d)
    H = (H[None] if H.ndim == 2 else H).copy()  # (R, d, Kn)
    R, K, _ = W.shape
    ones = np.ones((K, 1))
    Zs = np.empty((steps.size, R, K, K * n))
    WWs = np.empty((steps.size, R, K, K))
    HHs = np.empty((steps.size, R, K * n, K * n))
    # The loop works on the transposed logits Z^T (R, Kn, K): every product is then a
    # stacked (T, T) matmul of the stored W and H, the column sums of exp(Z) are one
    # (R Kn, K) @ (K, 1) product over all realisations, and nothing is allocated per step.
    ZT = np.empty((R, K * n, K))  # Z^T, then -η (Y - P)^T in place
    ZT2 = ZT.reshape(R * K * n, K)
    s = np.empty((R, K * n, 1))  # column sums of exp(Z), then η / sums
    dW, dH = np.empty_like(W), np.empty_like(H)
    # the entries of Z^T where Y^T is 1, (k n + i, k) for class k and sample i, as a view:
    # subtracting there touches 1/K of the entries that subtracting the whole Y^T would
    item = ZT.itemsize
    label_entries = np.lib.stride_tricks.as_strided(
        ZT, shape=(R, K, n), strides=(ZT.strides[0], (n * K + 1) * item, K * item), writeable=True
    )
    WT, HT, GT = W.transpose(0, 2, 1), H.transpose(0, 2, 1), ZT.transpose(0, 2, 1)
    ce = loss == "ce"
    shift = True
    k = 0
    for i, target in enumerate(steps):
        for j in range(k, target):
            np.matmul(HT, WT, out=ZT)  # (R, Kn, K)
            if ce:
                # exp without the max shift while |Z| is moderate (checked every 64 steps);
                # a blow-up still ends in the finiteness check below, never silently.
                if j % 64 == 0:
                    shift = bool(np.abs(ZT).max() > 300.0)
                if shift:
                    ZT -= ZT.max(axis=2, keepdims=True)
                np.exp(ZT, out=ZT)
                np.matmul(ZT2, ones, out=s.reshape(R * K * n, 1))
                np.divide(lr, s, out=s)
                np.multiply(ZT, s, out=ZT)  # η P^T
            else:
                np.multiply(ZT, lr, out=ZT)  # η (W H)^T
            label_entries -= lr  # -η (Y - P)^T: the negated descent direction
            np.matmul(GT, HT, out=dW)  # (R, K, d)
            np.matmul(WT, GT, out=dH)  # (R, d, Kn), with the old W
            W -= dW
            H -= dH
        k = max(k, int(target))
        Zs[i] = W @ H
        WWs[i] = W @ WT
        HHs[i] = HT @ H
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(H))):
        raise FloatingPointError(
            f"gradient descent diverged (non-finite W or H); lower `learning_rate` ({lr})."
        )
    return GDResult(steps, Zs, WWs, HHs, W, H)


def run_logit_gd(Z0: Any, *, steps: Any, learning_rate: float, n: int = 1) -> NDArray[np.float64]:
    """Gradient descent directly on the logits, ``Z ← Z + η (Y - P(Z))`` ([1], Eq. (13)).

    Parameters
    ----------
    Z0 : array_like of shape (R, K, K n) or (K, K n)
    steps : array_like of int, shape (n_log,)

    Returns
    -------
    ndarray of shape (n_log, R, K, K n)
    """
    n = check_int(n, "n", low=1)
    Z = check_array(Z0, "Z0", dtype=np.float64)
    Z = (Z[None] if Z.ndim == 2 else Z).copy()
    lr = check_scalar(learning_rate, "learning_rate", low=0, closed="neither")
    steps = _check_steps(steps)
    Y = label_matrix(Z.shape[-2], n)
    out = np.empty((steps.size, *Z.shape))
    k = 0
    for i, target in enumerate(steps):
        for _ in range(target - k):
            Z += lr * (Y - softmax_columns(Z))
        k = max(k, int(target))
        out[i] = Z
    return out


@dataclass(frozen=True)
class FlowResult:
    """Gradient-flow solution of the UFM sampled at ``ts``.

    Attributes
    ----------
    ts : ndarray of shape (n_times,)
    W : ndarray of shape (n_times, K, d)
    H : ndarray of shape (n_times, d, K n)
    success : bool
    """

    ts: NDArray[np.float64]
    W: NDArray[np.float64]
    H: NDArray[np.float64]
    success: bool


def solve_gradient_flow(
    W0: Any, H0: Any, ts: Any, *, n: int = 1, rtol: float = 1e-10, atol: float = 1e-14
) -> FlowResult:
    """Integrate the CE gradient flow (2) of [1] for one realisation with an ODE solver.

    Uses DOP853; meant for small problems where GD's O(η) error matters (Theorem 8 checks).

    Parameters
    ----------
    W0 : array_like of shape (K, d)
    H0 : array_like of shape (d, K n)
    ts : array_like of shape (n_times,), increasing, starting at the initial time.
    """
    n = check_int(n, "n", low=1)
    W0, H0 = _check_pair(W0, H0, n)
    if W0.ndim != 2:
        raise ValueError(f"`W0` must be a single (K, d) matrix; got shape {W0.shape}.")
    K, d = W0.shape
    nw = K * d

    def rhs(t: float, y: NDArray[np.float64], _: Any) -> NDArray[np.float64]:
        W = y[:nw].reshape(K, d)
        H = y[nw:].reshape(d, K * n)
        dW, dH = ce_descent(W, H, n=n)
        return np.concatenate([dW.ravel(), dH.ravel()])

    y0 = np.concatenate([W0.ravel(), H0.ravel()])
    with warnings.catch_warnings():  # solve_ode forwards jac=None, which DOP853 reports
        warnings.filterwarnings("ignore", message=".*no effect.*", category=UserWarning)
        traj = solve_ode(rhs, y0, ts, None, method="DOP853", rtol=rtol, atol=atol)
    W = traj.ys[:, :nw].reshape(-1, K, d)
    H = traj.ys[:, nw:].reshape(-1, d, K * n)
    return FlowResult(traj.ts, W, H, traj.success)
