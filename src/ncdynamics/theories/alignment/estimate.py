"""Effective rates of the alignment theory [1] fitted to a recorded trajectory.

The fit follows App. B.1 of [1]: eq. (7) is integrated from the *measured* initial state
``(a0, b0, w0)`` on the recorded time grid (epochs), and the two rates are chosen to
minimise the unweighted squared distance (49)::

    F(theta) = int (a - a_th)^2 dt + int (b - b_th)^2 dt + int (w - w_th)^2 dt

Speed: the paper does not name its optimiser. Here each solve is ``scipy.integrate.odeint``
(LSODA) on the scalar kernels of :mod:`.fast_drift` (the fast path of :func:`.model.drift`
and its analytic Jacobian :func:`.model.jacobian`), and ``least_squares`` works on the
log-rates from several starts (``benchmarks/bench_alignment.py`` compares this with a grid
search plus Nelder--Mead on ``solve_ivp``).

The solves call ``odeint`` rather than the shared :func:`ncdynamics.theories.integrate.solve_ode`
(``solve_ivp``): ``odeint`` wraps the Fortran LSODA with a per-interval step limit
(``mxstep``) and far less Python overhead per step, and its numbers differ from those of
``solve_ivp``'s LSODA, so switching would change every fitted rate.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..._validation import check_array, check_option, check_scalar
from ..integrate import ConvergenceWarning, FitResult, Trajectory
from . import fast_drift
from .closed_form import loss_curve
from .model import VARIANTS, AlignmentParams

__all__ = ["DEFAULT_STARTS", "RateFit", "fit_loss", "fit_output_rate", "fit_rates", "simulate"]

#: Natural-log starting points ``(log 1/tau_h, log 1/tau_y)`` of the multi-start fit.
DEFAULT_STARTS: tuple[tuple[float, float], ...] = (
    (-3.0, -3.0),
    (-5.0, -3.0),
    (-3.0, -5.0),
    (-7.0, -4.0),
    (-9.0, -3.0),
    (-6.0, -8.0),
)
_PENALTY = 1e3


def simulate(
    y0: ArrayLike,
    ts: ArrayLike,
    params: AlignmentParams,
    *,
    rtol: float = 1e-10,
    atol: float = 1e-14,
    max_steps: int = 20000,
) -> Trajectory:
    """Integrate eq. (7) (or a variant of eq. (51)) of [1] with LSODA and its Jacobian.

    Parameters
    ----------
    y0 : ndarray of shape (3,)
        ``(a0, b0, w0)`` with ``a0 > 0``.
    ts : ndarray of shape (n_times,), increasing
    params : AlignmentParams
    rtol, atol : float
        Solver tolerances; keep ``atol`` below the smallest ``b`` of interest.
    max_steps : int
        Internal steps allowed between two output times.

    Returns
    -------
    Trajectory
        ``ys`` of shape (n_times, 3); ``success=False`` (and NaN rows) if LSODA failed.
    """
    y0 = check_array(y0, "y0", shape=(3,), dtype=np.float64)
    if y0[0] <= 0:
        raise ValueError(f"`y0[0]` (a0) must be > 0; got {y0[0]}.")
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=1)
    if ts.size > 1 and np.any(np.diff(ts) <= 0):
        raise ValueError("`ts` must be strictly increasing.")
    return _solve(y0, ts, params, rtol, atol, max_steps)


def _solve(
    y0: NDArray[np.float64],
    ts: NDArray[np.float64],
    params: AlignmentParams,
    rtol: float,
    atol: float,
    max_steps: int,
) -> Trajectory:
    from scipy.integrate import odeint

    if ts.size == 1:
        return Trajectory(ts, y0[None].copy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ys, info = odeint(
            fast_drift.drift,
            y0,
            ts,
            args=fast_drift.odeint_args(params),
            Dfun=fast_drift.jacobian,
            rtol=rtol,
            atol=atol,
            mxstep=max_steps,
            full_output=True,
        )
    ok = info["message"].startswith("Integration successful") and bool(np.all(np.isfinite(ys)))
    if not ok:
        ys = np.full((ts.size, 3), np.nan)
    return Trajectory(ts, ys, ok, info["message"], int(info["nfe"][-1]))


def _weights(ts: NDArray[np.float64], quadrature: str) -> NDArray[np.float64]:
    if ts.size == 1:
        return np.ones(1)
    if quadrature == "sum":
        return np.full(ts.size, (ts[-1] - ts[0]) / (ts.size - 1))
    gaps = np.diff(ts)
    w = np.zeros(ts.size)
    w[:-1] += 0.5 * gaps
    w[1:] += 0.5 * gaps
    return w


def fit_loss(
    ts: ArrayLike,
    observed: ArrayLike,
    theory: ArrayLike,
    *,
    quadrature: Literal["sum", "trapezoid"] = "sum",
) -> float:
    """The fit objective (49) of [1] between two ``(n_times, 3)`` trajectories.

    ``"sum"`` is the rectangle rule on the (uniform) grid, i.e. a plain sum for a grid of
    one epoch; ``"trapezoid"`` the trapezoid rule.
    """
    check_option(quadrature, "quadrature", ("sum", "trapezoid"))
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64)
    obs = check_array(observed, "observed", shape=(ts.size, 3), dtype=np.float64)
    th = check_array(theory, "theory", shape=(ts.size, 3), dtype=np.float64, finite=False)
    return float(np.sum(_weights(ts, quadrature)[:, None] * (obs - th) ** 2))


@dataclass(frozen=True)
class RateFit:
    """Outcome of one start of the multi-start fit."""

    start: tuple[float, float]
    log_rates: tuple[float, float]
    loss: float
    n_evals: int


def _pair(values: Sequence[float] | NDArray[np.float64]) -> tuple[float, float]:
    """The two log-rates as a tuple of Python floats."""
    return float(values[0]), float(values[1])


@dataclass(frozen=True)
class _Search:
    """The optimiser settings of :func:`fit_rates`: unbounded LM, or TRF inside bounds."""

    low: NDArray[np.float64] | None = None
    high: NDArray[np.float64] | None = None

    @property
    def options(self) -> dict[str, object]:
        if self.low is None or self.high is None:
            return {"method": "lm"}
        return {"method": "trf", "bounds": (self.low, self.high)}

    def inside(self, start: Sequence[float] | NDArray[np.float64]) -> NDArray[np.float64]:
        x = np.asarray(start, dtype=np.float64)
        if self.low is None or self.high is None:
            return x
        # strictly inside: TRF refuses a start on a bound
        margin = 1e-6 * (self.high - self.low)
        return np.clip(x, self.low + margin, self.high - margin)


def _search(
    log_bounds: tuple[tuple[float, float], tuple[float, float]] | None,
) -> _Search:
    if log_bounds is None:
        return _Search()
    lows = np.array([float(log_bounds[0][0]), float(log_bounds[1][0])])
    highs = np.array([float(log_bounds[0][1]), float(log_bounds[1][1])])
    if not (np.all(np.isfinite(lows)) and np.all(np.isfinite(highs)) and np.all(lows < highs)):
        raise ValueError(
            "`log_bounds` must be ((low_h, high_h), (low_y, high_y)) with finite low < high; "
            f"got {log_bounds!r}."
        )
    return _Search(lows, highs)


#: ODE tolerances of :func:`fit_rates` (the polish on the full grid; the coarse search
#: loosens them to at most 1e-7 / 1e-13).
_FIT_RTOL, _FIT_ATOL = 1e-10, 1e-14
#: Residual evaluations :func:`fit_rates` allows each start.
_FIT_MAX_EVALS = 300


def fit_rates(
    ts: ArrayLike,
    observed: ArrayLike,
    *,
    X: float,
    Y: float,
    variant: str = "eq7",
    starts: Sequence[tuple[float, float]] = DEFAULT_STARTS,
    quadrature: Literal["sum", "trapezoid"] = "sum",
    log_bounds: tuple[tuple[float, float], tuple[float, float]] | None = None,
) -> FitResult:
    """Fit ``(1/tau_h, 1/tau_y)`` of eq. (7) (or an eq. (51) variant) to a trajectory.

    Parameters
    ----------
    ts : ndarray of shape (n_times,)
        Recorded times (epochs), increasing.
    observed : ndarray of shape (n_times, 3)
        Measured ``(a, b, w)``; the theory starts from ``observed[0]``.
    X, Y : float
        Squared input and target distances.
    variant : str, default="eq7"
        One of :data:`model.VARIANTS`.
    starts : sequence of (float, float)
        Natural-log starting rates.
    quadrature : {"sum", "trapezoid"}
        Discretisation of eq. (49).
    log_bounds : ((float, float), (float, float)), optional
        Search bounds ``((low_h, high_h), (low_y, high_y))`` of the natural-log rates. Given,
        each start is moved inside them and the search is the bounded trust-region method
        (``least_squares(method="trf")``), so an optimum the data push beyond a bound stays
        on it (a degenerate fit the caller can see); by default the search is unbounded
        Levenberg--Marquardt.

    The ODE is solved at ``rtol=1e-10, atol=1e-14`` (looser, at most 1e-7 and 1e-13, while
    the starts are refined on a thinned grid), and each start may take 300 residual
    evaluations.

    Returns
    -------
    FitResult
        ``params`` an :class:`AlignmentParams`; ``loss`` the value of eq. (49);
        ``extra["trajectory"]`` the fitted theory ``(n_times, 3)`` and ``extra["starts"]``
        a tuple of :class:`RateFit`.
    """
    from scipy.optimize import least_squares

    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=2)
    obs = check_array(observed, "observed", shape=(ts.size, 3), dtype=np.float64)
    check_scalar(X, "X", low=0.0, closed="neither")
    check_scalar(Y, "Y", low=0.0)
    check_option(variant, "variant", VARIANTS)
    check_option(quadrature, "quadrature", ("sum", "trapezoid"))
    if obs[0, 0] <= 0:
        raise ValueError(f"`observed[0, 0]` (a at t=0) must be > 0; got {obs[0, 0]}.")
    if len(starts) == 0:
        raise ValueError("`starts` must hold at least one (log rate, log rate) pair; got none.")
    search = _search(log_bounds)
    sqw = np.sqrt(_weights(ts, quadrature))[:, None]
    y0 = obs[0]

    def residual(
        theta: NDArray[np.float64], idx: slice, tol: tuple[float, float], scale: float
    ) -> NDArray[np.float64]:
        target = obs[idx]
        if np.any(np.abs(theta) > 40):
            return np.full(target.size, _PENALTY)
        p = AlignmentParams(float(np.exp(theta[0])), float(np.exp(theta[1])), X, Y, variant)
        sol = _solve(y0, ts[idx], p, tol[0], tol[1], 20000)
        if not sol.success:
            return np.full(target.size, _PENALTY)
        return (scale * sqw[idx] * (sol.ys - target)).ravel()

    # Every start is refined on a thinned grid (at most ~600 times) at a loose solver
    # tolerance; the best is then polished on the full grid at (_FIT_RTOL, _FIT_ATOL).
    stride = max(1, ts.size // 600)
    coarse = (
        slice(None, None, stride),
        (max(_FIT_RTOL, 1e-7), max(_FIT_ATOL, 1e-13)),
        np.sqrt(stride),
    )
    runs: list[RateFit] = []
    n_total = 0
    for s in starts:
        res = least_squares(
            residual,
            search.inside(s),
            max_nfev=_FIT_MAX_EVALS,
            args=coarse,
            xtol=1e-6,
            ftol=1e-8,
            **search.options,
        )
        runs.append(RateFit(_pair(s), _pair(res.x), float(2.0 * res.cost), res.nfev))
        n_total += res.nfev
    first = min(runs, key=lambda r: r.loss)
    res = least_squares(
        residual,
        search.inside(first.log_rates),
        max_nfev=_FIT_MAX_EVALS,
        args=(slice(None), (_FIT_RTOL, _FIT_ATOL), 1.0),
        **search.options,
    )
    n_total += res.nfev
    runs.append(RateFit(first.log_rates, _pair(res.x), float(2.0 * res.cost), res.nfev))
    best = min(runs, key=lambda r: r.loss)
    params = AlignmentParams(
        float(np.exp(best.log_rates[0])), float(np.exp(best.log_rates[1])), X, Y, variant
    )
    traj = _solve(y0, ts, params, _FIT_RTOL, _FIT_ATOL, 20000)
    ok = traj.success and np.isfinite(best.loss)
    msg = "ok" if ok else "no start gave a successful solve"
    result = FitResult(
        params, best.loss, ok, msg, n_total, {"trajectory": traj.ys, "starts": tuple(runs)}
    )
    if not ok:
        warnings.warn(f"rate fit did not converge: {msg}", ConvergenceWarning, stacklevel=2)
    return result


def fit_output_rate(
    ts: ArrayLike,
    loss: ArrayLike,
    b: ArrayLike,
    w: ArrayLike,
    *,
    ybar0: ArrayLike,
    y1: ArrayLike,
    y2: ArrayLike,
    bounds: tuple[float, float] = (1e-7, 10.0),
) -> FitResult:
    """Fit the output-mean rate ``1/tau_ybar`` of the loss (9) of [1] (App. B.1).

    With ``b`` and ``w`` from the fitted theory and ``ybar(0)`` measured, minimise
    ``sum_t (L(t) - L_th(t))^2`` over ``log(1/tau_ybar)`` in ``bounds``.

    Returns
    -------
    FitResult
        ``params`` the rate (float); ``extra["loss_curve"]`` the fitted ``L_th``.
    """
    from scipy.optimize import minimize_scalar

    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=2)
    L = check_array(loss, "loss", shape=(ts.size,), dtype=np.float64)
    b = check_array(b, "b", shape=(ts.size,), dtype=np.float64)
    w = check_array(w, "w", shape=(ts.size,), dtype=np.float64)
    lo, hi = (check_scalar(v, "bounds", low=0.0, closed="neither") for v in bounds)

    def objective(log_r: float) -> float:
        th = loss_curve(ts, b, w, ybar0, y1, y2, float(np.exp(log_r)))
        return float(np.sum((L - th) ** 2))

    res = minimize_scalar(
        objective, bounds=(np.log(lo), np.log(hi)), method="bounded", options={"xatol": 1e-6}
    )
    rate = float(np.exp(res.x))
    return FitResult(
        rate,
        float(res.fun),
        bool(res.success),
        str(res.message),
        int(res.nfev),
        {"loss_curve": loss_curve(ts, b, w, ybar0, y1, y2, rate)},
    )
