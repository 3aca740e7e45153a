"""Shared integrators and result types for the theories (float64 NumPy).

Every theory model exposes ``drift(t, y, params)`` (and ``diffusion(t, y, params)`` for an
SDE) returning an array shaped like ``y``. These functions integrate them.

Layouts (``docs/axes.md``): trajectories are time-first, ``ys`` of shape
``(n_times, *state_shape)``; SDE ensembles are ``(n_paths, n_times, *state_shape)``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import numpy as np
from numpy.typing import NDArray

from .._validation import check_array

__all__ = [
    "ConvergenceWarning",
    "FitResult",
    "OdeMethod",
    "Trajectory",
    "euler_maruyama",
    "solve_ode",
]


class ConvergenceWarning(UserWarning):
    """A fit or solve did not converge; the result carries ``success=False``."""


@dataclass(frozen=True)
class Trajectory:
    """A solution sampled at ``ts``.

    Attributes
    ----------
    ts : ndarray of shape (n_times,)
    ys : ndarray of shape (n_times, *state_shape) or (n_paths, n_times, *state_shape)
    success : bool
    message : str
    n_evals : int
        Right-hand-side evaluations (0 where not counted).
    """

    ts: NDArray[np.float64]
    ys: NDArray[np.float64]
    success: bool = True
    message: str = ""
    n_evals: int = 0


@dataclass(frozen=True)
class FitResult:
    """Parameters fitted to data.

    Attributes
    ----------
    params : Any
        The fitted parameters (usually the theory's frozen params dataclass).
    loss : float
        Final value of the fit objective.
    success : bool
    message : str
    n_evals : int
    extra : dict
        Fit-specific diagnostics (e.g. the best trajectory, all starts).
    """

    params: Any
    loss: float
    success: bool
    message: str
    n_evals: int
    extra: dict[str, Any] = field(default_factory=dict)

    def warn_if_failed(self, stacklevel: int = 3) -> FitResult:
        if not self.success:
            warnings.warn(
                f"fit did not converge: {self.message}", ConvergenceWarning, stacklevel=stacklevel
            )
        return self


class OdeMethod(StrEnum):
    """ODE methods. ``LSODA`` (default) switches between stiff and non-stiff automatically
    and is the most reliable across theories; ``RADAU`` and ``BDF`` are implicit (stiff);
    ``DOP853`` and ``RK45`` are explicit and cheap on non-stiff problems."""

    LSODA = "LSODA"
    RADAU = "Radau"
    BDF = "BDF"
    DOP853 = "DOP853"
    RK45 = "RK45"


def solve_ode(
    drift: Callable[[float, NDArray[np.float64], Any], NDArray[np.float64]],
    y0: Any,
    ts: Any,
    params: Any,
    *,
    method: OdeMethod | str = OdeMethod.LSODA,
    rtol: float = 1e-9,
    atol: float = 1e-12,
    jac: Callable[..., NDArray[np.float64]] | None = None,
) -> Trajectory:
    """Integrate ``dy/dt = drift(t, y, params)`` and sample at ``ts`` (increasing).

    The state may have any shape; it is flattened for the solver.
    """
    from scipy.integrate import solve_ivp

    y0 = check_array(y0, "y0", dtype=np.float64)
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=1)
    if ts.size > 1 and np.any(np.diff(ts) <= 0):
        raise ValueError("`ts` must be strictly increasing.")
    method = OdeMethod(method)
    shape = y0.shape
    n_evals = 0

    def rhs(t: float, flat: NDArray[np.float64]) -> NDArray[np.float64]:
        nonlocal n_evals
        n_evals += 1
        return np.asarray(drift(t, flat.reshape(shape), params), dtype=np.float64).ravel()

    jac_fn = None
    if jac is not None:
        jac_fn = lambda t, flat: jac(t, flat.reshape(shape), params)
    if ts.size == 1:
        return Trajectory(ts, y0[None].copy(), True, "single time", 0)
    implicit = method in (OdeMethod.LSODA, OdeMethod.RADAU, OdeMethod.BDF)
    extra = {"jac": jac_fn} if implicit and jac_fn is not None else {}
    sol = solve_ivp(
        rhs,
        (ts[0], ts[-1]),
        y0.ravel(),
        method=method.value,
        t_eval=ts,
        rtol=rtol,
        atol=atol,
        **extra,
    )
    ys = sol.y.T.reshape((-1, *shape)) if sol.success else np.full((ts.size, *shape), np.nan)
    if sol.success and ys.shape[0] != ts.size:  # pragma: no cover - scipy stops early
        ys = np.full((ts.size, *shape), np.nan)
    return Trajectory(ts, ys, bool(sol.success), str(sol.message), n_evals)


def euler_maruyama(
    drift: Callable[[float, NDArray[np.float64], Any], NDArray[np.float64]],
    diffusion: Callable[[float, NDArray[np.float64], Any], NDArray[np.float64]],
    y0: Any,
    ts: Any,
    params: Any,
    *,
    rng: np.random.Generator,
    n_paths: int = 1,
    save_every: int = 1,
) -> Trajectory:
    """Euler--Maruyama for ``dy = drift dt + diffusion * dW`` with diagonal noise.

    ``drift`` and ``diffusion`` receive the whole ensemble, shape ``(n_paths, *state)``,
    and return arrays of that shape (vectorised over paths). Steps are the gaps of ``ts``;
    every ``save_every``-th time is kept.

    Returns
    -------
    Trajectory
        ``ys`` of shape ``(n_paths, n_saved, *state_shape)``.
    """
    y = np.broadcast_to(check_array(y0, "y0", dtype=np.float64), (n_paths, *np.shape(y0))).copy()
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=1)
    keep = np.arange(0, ts.size, save_every)
    out = np.empty((n_paths, keep.size, *y.shape[1:]))
    out[:, 0] = y
    k = 1
    for i in range(ts.size - 1):
        dt = ts[i + 1] - ts[i]
        dw = rng.standard_normal(y.shape) * np.sqrt(dt)
        y = y + drift(ts[i], y, params) * dt + diffusion(ts[i], y, params) * dw
        if k < keep.size and i + 1 == keep[k]:
            out[:, k] = y
            k += 1
    ok = bool(np.all(np.isfinite(out)))
    return Trajectory(ts[keep], out, ok, "" if ok else "non-finite state", ts.size - 1)
