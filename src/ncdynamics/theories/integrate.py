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

from .._validation import check_array, check_int

__all__ = [
    "ConvergenceWarning",
    "FitResult",
    "OdeMethod",
    "SolveError",
    "Trajectory",
    "euler_maruyama",
    "solve_ode",
]


class ConvergenceWarning(UserWarning):
    """A fit or solve did not converge; the result carries ``success=False``."""


class SolveError(RuntimeError):
    """:func:`solve_ode` stopped by one of its guards: a non-finite state, a step that did
    not advance time, or the cap on right-hand-side evaluations."""


#: Right-hand-side evaluations :func:`solve_ode` allows by default. The built-in flows take
#: a few thousand (at most ~1.5e3 on the smoke presets); the cap only bounds a solve that
#: has gone wrong, so that it fails instead of running for hours.
MAX_EVALS = 1_000_000

#: Consecutive accepted steps that may leave time where it was before :func:`solve_ode`
#: gives up (a step size that underflowed to zero never recovers).
_STALLED_STEPS = 10


class _Stop(Exception):
    """Raised inside the solver's callbacks to leave it; carries the one-line reason."""


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
    max_evals: int = MAX_EVALS,
) -> Trajectory:
    """Integrate ``dy/dt = drift(t, y, params)`` and sample at ``ts`` (increasing).

    The state may have any shape; it is flattened for the solver. Three guards stop a solve
    that has gone wrong, where the solver alone could run for hours: a non-finite state
    after a step, steps that no longer advance time (a step size underflowed to zero, as
    from an initial state of enormous scale), and more than ``max_evals`` evaluations of
    ``drift``. A solver failure that scipy reports itself (a step size too small for the
    tolerances, say) is not raised: it is returned as ``success=False`` with NaN states.

    Parameters
    ----------
    drift : callable
        ``drift(t, y, params)``, an array shaped like ``y``.
    y0 : array_like
        Finite initial state.
    ts : array_like of shape (n_times,)
        Strictly increasing sample times; integration runs from ``ts[0]`` to ``ts[-1]``.
    params : Any
        Passed to ``drift`` and ``jac``.
    method : OdeMethod or str, default="LSODA"
    rtol, atol : float
        Solver tolerances.
    jac : callable, optional
        ``jac(t, y, params)``, the Jacobian of the flattened drift (implicit methods only).
    max_evals : int, default=MAX_EVALS
        Cap on evaluations of ``drift``.

    Returns
    -------
    Trajectory
        ``ys`` of shape ``(n_times, *y0.shape)``.

    Raises
    ------
    SolveError
        When a guard stops the solve (one line: which guard, the time and the count).
    """
    from scipy.integrate import solve_ivp

    y0 = check_array(y0, "y0", dtype=np.float64)
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=1)
    if ts.size > 1 and np.any(np.diff(ts) <= 0):
        raise ValueError("`ts` must be strictly increasing.")
    method = OdeMethod(method)
    max_evals = check_int(max_evals, "max_evals", low=1)
    if ts.size == 1:
        return Trajectory(ts, y0[None].copy(), True, "single time", 0)
    guard = _Guard(drift, params, y0.shape, max_evals)
    implicit = method in (OdeMethod.LSODA, OdeMethod.RADAU, OdeMethod.BDF)
    extra: dict[str, Any] = {}
    if implicit and jac is not None:
        extra["jac"] = lambda t, flat: jac(t, flat.reshape(y0.shape), params)
    try:
        sol = solve_ivp(
            guard.rhs,
            (ts[0], ts[-1]),
            y0.ravel(),
            method=method.value,
            t_eval=ts,
            rtol=rtol,
            atol=atol,
            events=guard.after_step,
            **extra,
        )
    except _Stop as stop:
        raise SolveError(f"solve_ode stopped: {stop}") from None
    shape = y0.shape
    ys = sol.y.T.reshape((-1, *shape)) if sol.success else np.full((ts.size, *shape), np.nan)
    if sol.success and ys.shape[0] != ts.size:  # pragma: no cover - scipy stops early
        ys = np.full((ts.size, *shape), np.nan)
    return Trajectory(ts, ys, bool(sol.success), str(sol.message), guard.n_evals)


class _Guard:
    """The right-hand side of :func:`solve_ode` with its evaluation count, and the check run
    after every accepted step (passed to ``solve_ivp`` as an event that never fires: it
    returns a constant, so the steps and the sampled states are the solver's own)."""

    def __init__(
        self,
        drift: Callable[[float, NDArray[np.float64], Any], NDArray[np.float64]],
        params: Any,
        shape: tuple[int, ...],
        max_evals: int,
    ) -> None:
        self.drift, self.params, self.shape, self.max_evals = drift, params, shape, max_evals
        self.n_evals = 0
        self.t_last = -np.inf
        self.stalled = 0

    def rhs(self, t: float, flat: NDArray[np.float64]) -> NDArray[np.float64]:
        if self.n_evals >= self.max_evals:
            raise _Stop(
                f"`max_evals` = {self.max_evals} evaluations of the drift reached at t={t:.6g} "
                "without reaching the last time; expected fewer (a stiff or exploding flow?)"
            )
        self.n_evals += 1
        out = self.drift(t, flat.reshape(self.shape), self.params)
        return np.asarray(out, dtype=np.float64).ravel()

    def after_step(self, t: float, flat: NDArray[np.float64]) -> float:
        if not np.all(np.isfinite(flat)):
            raise _Stop(
                f"the state became non-finite at t={t:.6g} after {self.n_evals} evaluations; "
                "expected finite values (check the scale of `y0` and `params`)"
            )
        self.stalled = self.stalled + 1 if t <= self.t_last else 0
        self.t_last = max(self.t_last, t)
        if self.stalled >= _STALLED_STEPS:
            raise _Stop(
                f"{self.stalled} steps left time at t={t:.6g}; expected each step to advance "
                "(the step size underflowed: check the scale of `y0` and `params`)"
            )
        return 1.0


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
