"""Flows of the standard cost with a trained output map ``W = W^(Q+1)`` ([1] Secs. 8, 9).

Both sections train the output layer together with (Sec. 8) or instead of (Sec. 9) the
cumulative parameters, with the standard L2 cost at the output ([1] (2.22)):

- Sec. 8, *collapsed data*: every cluster is fully truncated, so ``I^(Q)`` maps cluster
  ``l`` to ``-beta^(l)`` and the cost is bilinear in ``(W, B = [beta^(1) ... beta^(Q)])``;
- Sec. 9, *untruncated data*: no point is truncated, ``I^(Q)`` is the identity and the flow
  of ``W`` is linear regression, solved in closed form.

The right-hand sides follow the shared ``drift(t, y, params)`` convention and are integrated
with :func:`ncdynamics.theories.integrate.solve_ode`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from ..integrate import Trajectory

__all__ = [
    "BilinearParams",
    "LinearRegressionParams",
    "bilinear_cost",
    "bilinear_drift",
    "bilinear_gd",
    "bilinear_invariant",
    "bilinear_propagator_drift",
    "linreg_closed_form",
    "linreg_drift",
    "linreg_limit",
]


@dataclass(frozen=True)
class BilinearParams:
    """Labels of the collapsed-data standard-cost flow ([1] Sec. 8).

    Attributes
    ----------
    Y : ndarray of shape (Q, Q)
        Label columns ``[y_1 ... y_Q]`` ([1] (8.3)).
    """

    Y: NDArray[np.float64]


def bilinear_cost(W: NDArray[np.float64], B: NDArray[np.float64], Y: NDArray[np.float64]) -> float:
    """``C~ = 1/2 ||W B + Y||_F^2`` ([1] (8.2))."""
    return float(0.5 * np.sum((W @ B + Y) ** 2))


def bilinear_drift(t: float, y: NDArray[np.float64], params: BilinearParams) -> NDArray[np.float64]:
    """Gradient flow of [1] (8.6)-(8.7) with ``E = W B + Y``::

        d_s W = -E B^T,     d_s B = -W^T E.

    Parameters
    ----------
    y : ndarray of shape (2, Q, Q)
        ``y[0] = W`` (``W^(Q+1)``; [1] Secs. 8-9 write ``W``) and
        ``y[1] = B = [beta^(1) ... beta^(Q)]``.
    """
    W, B = y[0], y[1]
    E = W @ B + params.Y
    return np.stack([-E @ B.T, -W.T @ E])


def bilinear_gd(
    W0: NDArray[np.float64],
    B0: NDArray[np.float64],
    params: BilinearParams,
    *,
    eta: float,
    n_steps: int,
) -> Trajectory:
    """Gradient descent on ``C~ = 1/2 ||W B + Y||_F^2``, the discrete map of (8.6)-(8.7)::

        E_k = W_k B_k + Y,   W_{k+1} = W_k - eta E_k B_k^T,   B_{k+1} = B_k - eta W_k^T E_k.

    Along it ``B B^T - W^T W`` is no longer conserved: it changes by
    ``eta^2 (W^T E E^T W - B E^T E B^T)`` per step.

    Parameters
    ----------
    W0, B0 : ndarray of shape (Q, Q)
    params : BilinearParams
    eta : float
        Step size, ``> 0``.
    n_steps : int

    Returns
    -------
    Trajectory
        ``ts = k eta`` of shape (n_steps + 1,); ``ys`` of shape (n_steps + 1, 2, Q, Q) with
        ``ys[:, 0] = W`` and ``ys[:, 1] = B`` (the layout of :func:`bilinear_drift`).
    """
    eta = check_scalar(eta, "eta", low=0, closed="neither")
    n_steps = check_int(n_steps, "n_steps", low=0)
    W, B = W0.copy(), B0.copy()
    ys = np.empty((n_steps + 1, 2, *W.shape))
    for k in range(n_steps + 1):
        ys[k, 0], ys[k, 1] = W, B
        if k == n_steps:
            break
        E = W @ B + params.Y
        W, B = W - eta * E @ B.T, B - eta * W.T @ E
    ts = np.asarray(np.arange(n_steps + 1) * eta, dtype=np.float64)
    return Trajectory(ts, ys, n_evals=n_steps)


def bilinear_invariant(W: NDArray[np.float64], B: NDArray[np.float64]) -> NDArray[np.float64]:
    """Conserved ``B B^T - W^T W`` of the flow (8.6)-(8.7) ([1] Prop. 8.3)."""
    return B @ B.T - W.T @ W


def bilinear_propagator_drift(
    t: float, y: NDArray[np.float64], params: BilinearParams
) -> NDArray[np.float64]:
    """Flow (8.6)-(8.7) augmented with the propagators of ``E`` (corrected [1] (8.9)-(8.12))::

        d_s U_L = -W W^T U_L,   d_s U_R = -U_R B^T B,   U(0) = 1,

    so that ``E(s) = U_L(s) E(0) U_R(s)``. ``y`` has shape (4, Q, Q):
    ``W, B, U_L, U_R``.
    """
    W, B, UL, UR = y
    head = bilinear_drift(t, y[:2], params)
    return np.concatenate([head, np.stack([-W @ W.T @ UL, -UR @ B.T @ B])])


@dataclass(frozen=True)
class LinearRegressionParams:
    """Untruncated-data standard-cost flow ([1] Sec. 9).

    Attributes
    ----------
    X : ndarray of shape (Q, N)
        Input columns ([1] (9.4)).
    Y_ext : ndarray of shape (Q, N)
        Label of each column ([1] (9.5); the paper writes ``Y``; correction 10 of
        docs/theories/truncation.md).
    weights : ndarray of shape (N,)
        Cost weight per column: ``1/N`` in [1] (9.3), ``1/N_j`` for (2.22).
    """

    X: NDArray[np.float64]
    Y_ext: NDArray[np.float64]
    weights: NDArray[np.float64]

    def __post_init__(self) -> None:
        X = check_array(self.X, "X", ndim=2, dtype=np.float64)
        check_array(self.Y_ext, "Y_ext", shape=X.shape, dtype=np.float64)
        w = check_array(self.weights, "weights", shape=(X.shape[1],), dtype=np.float64)
        if np.any(w <= 0):
            raise ValueError(f"`weights` must be > 0; got minimum {w.min():.3g}.")


def linreg_drift(
    t: float, y: NDArray[np.float64], params: LinearRegressionParams
) -> NDArray[np.float64]:
    """``d_s W = -(W X - Y_ext) D X^T`` with ``D = diag(weights)`` ([1] (9.7)); ``y = W``."""
    return -((y @ params.X - params.Y_ext) * params.weights) @ params.X.T


def linreg_limit(params: LinearRegressionParams) -> NDArray[np.float64]:
    """``W(inf) = Y_ext D X^T (X D X^T)^{-1}``, the weighted least-squares map ([1] (9.12))."""
    a = (params.X * params.weights) @ params.X.T
    rhs = ((params.Y_ext * params.weights) @ params.X.T).T
    return np.asarray(np.linalg.solve(a.T, rhs).T, dtype=np.float64)


def linreg_closed_form(
    W0: NDArray[np.float64], s: NDArray[np.float64], params: LinearRegressionParams
) -> NDArray[np.float64]:
    """Closed form of [1] Thm. 9.1 with ``Y_ext`` and weights::

        W(s) = W(0) e^{-s A} + W(inf) (1 - e^{-s A}),   A = X D X^T.

    Parameters
    ----------
    W0 : ndarray of shape (Q, Q)
    s : ndarray of shape (n_times,)

    Returns
    -------
    ndarray of shape (n_times, Q, Q)
    """
    s = check_array(s, "s", ndim=1, dtype=np.float64)
    a = (params.X * params.weights) @ params.X.T  # symmetric positive definite
    lam, v = np.linalg.eigh(a)
    decay = np.einsum("ab,tb,cb->tac", v, np.exp(-s[:, None] * lam[None, :]), v)  # e^{-sA}
    w_inf = linreg_limit(params)
    out: NDArray[np.float64] = w_inf[None] + np.einsum("ab,tbc->tac", W0 - w_inf, decay)
    return out
