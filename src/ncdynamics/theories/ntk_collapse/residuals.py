"""The three phases of the residual dynamics under a block-structured NTK ([1], Sec. 4.1).

With ``Theta_kk(X) = K`` block-structured and the residual ``r_k = f_k(X) - Y_k`` of one
output, gradient descent with step ``eta`` is ``r <- (I - eta K) r`` ([1], eq. (9), exact for
the linearised model) and gradient flow is ``r(t) = expm(-t K) r(0)``. Projecting on the
eigenspaces of Table 1 splits ``r`` into a global-mean part (rate ``lambda_global``, eq. (13)),
a class-mean part (rate ``lambda_class``, eq. (14)) and a within-class part (rate
``lambda_single``, eq. (15)).

Residual vectors have shape ``(..., N)`` with samples class-major; residual matrices are
``R`` of shape (C, N) as in eq. (16).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from ..integrate import Trajectory
from .blocks import block_eigenvalues, block_kernel

__all__ = [
    "ResidualParts",
    "ResidualPhases",
    "residual_components",
    "residual_flow",
    "residual_gd",
    "residual_phases",
]


@dataclass(frozen=True)
class ResidualParts:
    """``R_global`` (C, N), ``R_class`` (C, N) and ``R_1`` (C, C) of [1], eqs. (17)-(18)."""

    global_: NDArray[np.float64]
    class_: NDArray[np.float64]
    class_means: NDArray[np.float64]


def _class_view(r: NDArray[np.float64], n_classes: int) -> NDArray[np.float64]:
    N = r.shape[-1]
    if N % n_classes:
        raise ValueError(
            f"the last axis of `residual` must be a multiple of n_classes={n_classes}; got {N}."
        )
    return r.reshape(*r.shape[:-1], n_classes, N // n_classes)


def residual_components(residual: NDArray, n_classes: int) -> ResidualParts:
    """Class and global averages of a residual matrix ([1], eqs. (16)-(18)).

    Parameters
    ----------
    residual : ndarray of shape (C_out, N)
        ``R = f(X) - Y`` with samples class-major.
    n_classes : int
        Number of classes C (``N = C m``).

    Returns
    -------
    ResidualParts
        ``R_class = R_1 (x) 1_m^T`` and ``R_global = <r> (x) 1_N^T``.
    """
    R = check_array(residual, "residual", ndim=2, dtype=np.float64)
    C = check_int(n_classes, "n_classes", low=2)
    view = _class_view(R, C)  # (C_out, C, m)
    m = view.shape[-1]
    R1 = view.mean(axis=-1)  # (C_out, C)
    R_class = np.repeat(R1, m, axis=1)
    R_global = np.repeat(R.mean(axis=1, keepdims=True), R.shape[1], axis=1)
    return ResidualParts(R_global, R_class, R1)


@dataclass(frozen=True)
class ResidualPhases:
    """Orthogonal split ``r = global_ + class_ + single`` on the Table 1 eigenspaces.

    Each has the shape of ``r``: ``global_`` is ``<r>``, ``class_`` is ``<r>_c - <r>`` and
    ``single`` is ``r(x_i^c) - <r>_c`` ([1], eqs. (13)-(15)), broadcast over samples.
    """

    global_: NDArray[np.float64]
    class_: NDArray[np.float64]
    single: NDArray[np.float64]


def residual_phases(residual: NDArray, n_classes: int) -> ResidualPhases:
    """Split residual vectors of shape (..., N) into the three phases of [1], Sec. 4.1."""
    r = check_array(residual, "residual", dtype=np.float64)
    if r.ndim < 1:
        raise ValueError("`residual` must have at least 1 dimension (samples last).")
    C = check_int(n_classes, "n_classes", low=2)
    view = _class_view(r, C)  # (..., C, m)
    g = view.mean(axis=(-1, -2), keepdims=True)
    cm = view.mean(axis=-1, keepdims=True)
    shape = r.shape
    glob = np.broadcast_to(g, view.shape).reshape(shape)
    cls = np.broadcast_to(cm - g, view.shape).reshape(shape)
    return ResidualPhases(glob.copy(), cls.copy(), (view - cm).reshape(shape))


def residual_flow(
    residual0: NDArray,
    times: NDArray,
    n_classes: int,
    *,
    diag: float,
    intra: float,
    inter: float,
) -> Trajectory:
    """Closed-form gradient flow ``r(t) = expm(-t K) r(0)`` under a block kernel.

    Implements [1], Sec. 4.1 in continuous time::

        r(t) = e^{-l_g t} r_global(0) + e^{-l_c t} r_class(0) + e^{-l_s t} r_single(0)

    Parameters
    ----------
    residual0 : ndarray of shape (..., N)
    times : ndarray of shape (n_times,)
    n_classes : int
        Number of classes C (``N = C m``).
    diag, intra, inter : float
        Block values ``(gamma_d, gamma_c, gamma_n)`` of ``Theta_kk``.

    Returns
    -------
    Trajectory
        ``ts`` the ``times`` given; ``ys`` of shape (n_times, ..., N).
    """
    r0 = check_array(residual0, "residual0", dtype=np.float64)
    ts = check_array(times, "times", ndim=1, dtype=np.float64)
    C = check_int(n_classes, "n_classes", low=2)
    m = r0.shape[-1] // C
    lam = block_eigenvalues(C, m, diag, intra, inter)
    ph = residual_phases(r0, C)
    ex = lambda lam_: np.exp(-lam_ * ts).reshape((-1,) + (1,) * r0.ndim)
    ys = ex(lam.global_) * ph.global_ + ex(lam.class_) * ph.class_ + ex(lam.single) * ph.single
    return Trajectory(ts, ys)


def residual_gd(
    residual0: NDArray,
    n_classes: int,
    *,
    diag: float,
    intra: float,
    inter: float,
    learning_rate: float,
    n_steps: int,
) -> Trajectory:
    """Gradient descent ``r <- (I - eta K) r`` iterated with the kernel matrix ([1], eq. (9)).

    Each phase is multiplied by exactly ``1 - eta * lambda`` per step (eqs. (13)-(15)); this
    function iterates the matrix so that a test can check that claim.

    Returns
    -------
    Trajectory
        ``ts`` is ``step * learning_rate`` for steps 0..n_steps; ``ys`` of shape
        (n_steps + 1, ..., N).
    """
    r = check_array(residual0, "residual0", dtype=np.float64)
    C = check_int(n_classes, "n_classes", low=2)
    eta = check_scalar(learning_rate, "learning_rate", low=0.0, closed="neither")
    steps = check_int(n_steps, "n_steps", low=0)
    K = block_kernel(C, r.shape[-1] // C, diag, intra, inter)
    step = np.eye(K.shape[0]) - eta * K
    out = np.empty((steps + 1, *r.shape))
    out[0] = r
    for k in range(steps):
        r = r @ step.T
        out[k + 1] = r
    ts: NDArray[np.float64] = np.arange(steps + 1, dtype=np.float64) * eta
    return Trajectory(ts, out, True, "", steps)
