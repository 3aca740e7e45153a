"""The generic curves a theory must beat before its verdict can be ``holds``.

A theory that fits a training curve well has shown little: most training curves are smooth
and monotone, and a handful of generic shapes fit them too. :mod:`ncdynamics.theories.verdict`
therefore fits, beside the theory, every curve of :data:`PANEL` to each observable, on the
same records and on the observable's scale (``log|v|`` for positive observables spanning
decades), and compares them out of sample and by AICc. The panel, with each curve's number of
free parameters ``k`` (``t`` is training time in steps, ``t0`` the first record, ``y`` the
observable on its scale):

========================  ===  ====================================================
name                      k    curve
========================  ===  ====================================================
``drift``                 1    random walk with drift: from the last record ``y_n``,
                               ``y_n + mu (t - t_n)``, ``mu`` the mean increment per step
``power law``             2    ``log|v| = a + p log(t + 1)`` (in training time from 0)
``exponential``           3    relaxation to an asymptote, ``a + b exp(-r (t - t0))``
``logistic``              4    ``a + b / (1 + exp(-(t - m) / s))``
``two exponentials``      5    ``a + b1 exp(-r1 (t - t0)) + b2 exp(-r2 (t - t0))``
========================  ===  ====================================================

Rates may have either sign (growth or decay). The curves linear in some of their parameters
are fitted by variable projection: for each value of the nonlinear ones (rates, a logistic's
centre and width) on a grid over the records' time span, the linear ones are a least-squares
solve, and the best grid point is refined by a bounded least-squares search. That makes the
fit deterministic and free of starting values.

Every curve predicts beyond its records (:meth:`Alternative.fit` returns a callable), so the
same code scores the theory and its alternatives on records held out from both fits.

In-sample, every curve -- the theory's too -- is read with AR(1) residuals, as training
curves have: its likelihood is that of the innovations ``r_i - rho r_(i-1)`` of its residuals
``r = y - curve(t)``, with ``rho`` in ``[0, 1]`` fitted (one more parameter per observable),
:func:`innovations`. The random walk is the case ``rho = 1`` about a straight line: its
innovations are its increments less the drift, each scaled by ``sqrt(gap / mean gap)`` (a
walk's step variance grows with the time between records), :func:`in_sample_residuals`. So
AICc compares like with like: a smooth curve with independent noise keeps ``rho`` near 0 and
beats the walk (whose increments are twice as noisy); a walk leaves any smooth curve with
``rho`` near 1 and no gain for its extra parameters; and a smooth real run whose residuals
are systematic is judged by whether the curve's increments follow the records' increments
better than a constant drift does.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

__all__ = ["PANEL", "Alternative", "fit_alternatives", "in_sample_residuals", "innovations"]

Curve = Callable[[NDArray[np.float64]], NDArray[np.float64]]
_Array = NDArray[np.float64]

#: Rates (times the records' span) searched by the exponential curves: decay and growth.
_RATE_GRID = np.concatenate([-np.geomspace(0.05, 8.0, 14)[::-1], np.geomspace(0.05, 40.0, 22)])


@dataclass(frozen=True)
class Alternative:
    """One generic curve: its name, free parameters, and how it is fitted.

    ``fit(t, y, on_log)`` (``t`` training steps, ``y`` the observable on its scale, both
    float64 of one length; ``on_log`` true when ``y`` is already ``log|v|``) returns a curve
    ``f(t) -> y`` on the same scale that extrapolates, or ``None`` when the records cannot
    determine it (too few, or not on the curve's domain).
    """

    name: str
    n_params: int
    describe: str
    fit: Callable[[_Array, _Array, bool], Curve | None]
    walk: bool = False


def _linear(basis: _Array, y: _Array) -> tuple[_Array, float]:
    """Least-squares coefficients of ``y`` on the columns of ``basis`` and the residual SSE."""
    coef, *_ = np.linalg.lstsq(basis, y, rcond=None)
    r = y - basis @ coef
    return np.asarray(coef, np.float64), float(r @ r)


def _fit_drift(t: _Array, y: _Array, on_log: bool) -> Curve | None:
    if t.size < 2 or t[-1] <= t[0]:
        return None
    mu = (y[-1] - y[0]) / (t[-1] - t[0])  # sum of increments over sum of gaps
    t_n, y_n = float(t[-1]), float(y[-1])

    def curve(at: _Array) -> _Array:
        return np.asarray(y_n + mu * (np.asarray(at, np.float64) - t_n), np.float64)

    return curve


def _fit_power_law(t: _Array, y: _Array, on_log: bool) -> Curve | None:
    if t.size < 3 or np.any(t <= -1) or np.unique(t).size < 2:
        return None
    sign = 1.0
    if not on_log:  # |v| = c (t + 1)^p needs values of one sign, none zero
        if np.any(y == 0) or np.any(np.sign(y) != np.sign(y[-1])):
            return None
        sign, y = float(np.sign(y[-1])), np.log(np.abs(y))
    x = np.log(t + 1.0)
    coef, _ = _linear(np.stack([np.ones_like(x), x], axis=1), y)

    def curve(at: _Array) -> _Array:
        a = np.asarray(at, np.float64)
        with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
            log_v = coef[0] + coef[1] * np.log(a + 1.0)
            return np.asarray(log_v if on_log else sign * np.exp(log_v), np.float64)

    return curve


def _exp_basis(t: _Array, t0: float, rates: _Array) -> _Array:
    with np.errstate(over="ignore"):
        return np.exp(-np.multiply.outer(t - t0, rates))


def _exp_stack(t: _Array, t0: float, rates: _Array) -> _Array:
    """``[1, exp(-(t - t0) rates)]`` for every row of ``rates`` (points x rates): the bases
    of the exponential curves at all grid points, shape (points, records, 1 + rates)."""
    with np.errstate(over="ignore"):
        e = np.exp(-(t - t0)[None, :, None] * rates[:, None, :])
    return np.concatenate([np.ones((rates.shape[0], t.size, 1)), e], axis=2)


#: Slack of :func:`_best_on_grid`'s batched screen: grid points whose screened SSE is within
#: ``_SCREEN_SLACK * (least screened SSE + |y|^2)`` of the least are re-scored one by one as
#: before, far more than the screen's rounding (about 1e-15 of the same), so the screen
#: never changes which point wins.
_SCREEN_SLACK = 1e-9


def _best_on_grid(
    t: _Array,
    y: _Array,
    grid: list[_Array],
    basis_of: Callable[[_Array, _Array], _Array],
    stack_of: Callable[[_Array, _Array], _Array] | None = None,
) -> tuple[_Array, float]:
    """The grid point (a row of nonlinear parameters) whose projected fit has least SSE
    (the first such point on a tie; points whose basis is not finite are skipped).

    Every point's SSE is first screened in one batched pseudo-inverse (with ``lstsq``'s
    cutoff), on the bases of all points at once (``stack_of(t, thetas)``, shape ``(points,
    records, columns)``, when given, else ``basis_of`` per point); only the points the screen
    cannot tell from the least, and those whose screened basis is not finite, are then solved
    one by one on ``basis_of`` with :func:`_linear`, in grid order, which decides: the answer
    is that of solving every point one by one, at a part of its cost (the panel scores about
    a hundred grids per ``ncdyn compare``).
    """
    with np.errstate(over="ignore", invalid="ignore"):
        stack = (
            np.stack([basis_of(t, theta) for theta in grid])
            if stack_of is None
            else np.asarray(stack_of(t, np.stack(grid)), np.float64)
        )
    ok = np.all(np.isfinite(stack), axis=(1, 2))
    todo = np.flatnonzero(~ok) if stack_of is not None else np.array([], dtype=np.intp)
    screened = np.full(len(grid), np.nan)
    if ok.any():
        cutoff = np.finfo(np.float64).eps * max(stack.shape[1:])
        try:
            with np.errstate(all="ignore"):
                coef = np.linalg.pinv(stack[ok], rcond=cutoff) @ y
                r = y - np.einsum("gij,gj->gi", stack[ok], coef)
                screened[ok] = np.einsum("gi,gi->g", r, r)
        except np.linalg.LinAlgError:  # every point is then solved one by one
            pass
    if np.all(np.isfinite(screened[ok])):
        least = float(np.min(screened[ok], initial=math.inf))
        close = screened <= least + _SCREEN_SLACK * (least + float(y @ y))
        todo = np.union1d(todo, np.flatnonzero(ok & close))
    else:
        todo = np.arange(len(grid)) if stack_of is not None else np.flatnonzero(ok)
    best, best_sse = grid[0], math.inf
    for i in todo:
        b = basis_of(t, grid[i]) if stack_of is not None else stack[i]
        if not np.all(np.isfinite(b)):
            continue
        _, sse = _linear(b, y)
        if sse < best_sse:
            best, best_sse = grid[i], sse
    return best, best_sse


def _refine(
    t: _Array, y: _Array, theta: _Array, basis_of: Callable[[_Array, _Array], _Array]
) -> _Array:
    """``theta`` refined by a bounded least-squares search on the projected residuals."""
    from scipy.optimize import least_squares  # here: scipy.optimize is slow to import

    def residuals(th: _Array) -> _Array:
        b = basis_of(t, th)
        if not np.all(np.isfinite(b)):
            return np.full(t.size, 1e6)
        coef, *_ = np.linalg.lstsq(b, y, rcond=None)
        return np.asarray(y - b @ coef, np.float64)

    try:
        out = least_squares(residuals, theta, method="trf", max_nfev=60, x_scale="jac")
    except (ValueError, np.linalg.LinAlgError):
        return theta
    base = residuals(theta)
    return out.x if float(out.fun @ out.fun) <= float(base @ base) else theta


def _projected(
    t: _Array,
    y: _Array,
    grid: list[_Array],
    basis_of: Callable[[_Array, _Array], _Array],
    n_params: int,
    stack_of: Callable[[_Array, _Array], _Array] | None = None,
) -> Curve | None:
    if t.size < n_params + 1 or t[-1] <= t[0]:
        return None
    theta, sse = _best_on_grid(t, y, grid, basis_of, stack_of)
    if not math.isfinite(sse):
        return None
    theta = _refine(t, y, theta, basis_of)
    coef, _ = _linear(basis_of(t, theta), y)

    def curve(at: _Array) -> _Array:
        with np.errstate(over="ignore", invalid="ignore"):
            return np.asarray(basis_of(np.asarray(at, np.float64), theta) @ coef, np.float64)

    return curve


def _fit_exponential(t: _Array, y: _Array, on_log: bool) -> Curve | None:
    t0, span = float(t[0]), float(t[-1] - t[0])
    if span <= 0:
        return None

    def basis(at: _Array, th: _Array) -> _Array:
        return np.column_stack([np.ones_like(at), _exp_basis(at, t0, th[:1] / span)])

    grid = [np.array([r]) for r in _RATE_GRID]
    return _projected(t, y, grid, basis, 3, lambda at, g: _exp_stack(at, t0, g[:, :1] / span))


def _fit_two_exponentials(t: _Array, y: _Array, on_log: bool) -> Curve | None:
    t0, span = float(t[0]), float(t[-1] - t[0])
    if span <= 0:
        return None

    def basis(at: _Array, th: _Array) -> _Array:
        return np.column_stack([np.ones_like(at), _exp_basis(at, t0, th / span)])

    rates = _RATE_GRID[::2]
    grid = [np.array([a, b]) for i, a in enumerate(rates) for b in rates[i + 1 :]]
    return _projected(t, y, grid, basis, 5, lambda at, g: _exp_stack(at, t0, g / span))


def _fit_logistic(t: _Array, y: _Array, on_log: bool) -> Curve | None:
    t0, span = float(t[0]), float(t[-1] - t[0])
    if span <= 0:
        return None

    def basis(at: _Array, th: _Array) -> _Array:
        centre, width = t0 + th[0] * span, max(abs(th[1]), 1e-6) * span
        z = np.clip((at - centre) / width, -700.0, 700.0)
        return np.column_stack([np.ones_like(at), 1.0 / (1.0 + np.exp(-z))])

    def stack(at: _Array, g: _Array) -> _Array:  # basis() of every row of g at once
        centre, width = t0 + g[:, :1] * span, np.maximum(np.abs(g[:, 1:2]), 1e-6) * span
        z = np.clip((at[None, :] - centre) / width, -700.0, 700.0)
        return np.stack([np.ones_like(z), 1.0 / (1.0 + np.exp(-z))], axis=2)

    centres = np.linspace(-0.25, 1.25, 13)
    widths = np.geomspace(0.02, 1.0, 9)
    grid = [np.array([c, w]) for c in centres for w in widths]
    return _projected(t, y, grid, basis, 4, stack)


#: The generic curves, fewest parameters first (module docstring).
PANEL: tuple[Alternative, ...] = (
    Alternative("drift", 1, "a random walk with drift", _fit_drift, walk=True),
    Alternative("power law", 2, "a power law in training time", _fit_power_law),
    Alternative("exponential", 3, "an exponential relaxation to an asymptote", _fit_exponential),
    Alternative("logistic", 4, "a logistic (saturating) curve", _fit_logistic),
    Alternative("two exponentials", 5, "a sum of two exponentials", _fit_two_exponentials),
)


def fit_alternatives(t: _Array, y: _Array, *, on_log: bool) -> dict[str, Curve | None]:
    """Every curve of :data:`PANEL` fitted to ``(t, y)`` (finite values only), by name;
    ``on_log`` says that ``y`` is ``log|v|`` (see :class:`Alternative`)."""
    t_ = np.asarray(t, np.float64)
    y_ = np.asarray(y, np.float64)
    ok = np.isfinite(t_) & np.isfinite(y_)
    return {a.name: a.fit(t_[ok], y_[ok], on_log) for a in PANEL}


def innovations(residuals: _Array) -> _Array:
    """``r_i - rho r_(i-1)`` (one fewer than ``residuals``), ``rho`` the least-squares AR(1)
    coefficient clipped to ``[0, 1]``: the residuals that an AR(1) likelihood is built on."""
    r = np.asarray(residuals, np.float64)
    if r.size < 2 or not np.all(np.isfinite(r)):
        return np.full(max(r.size - 1, 1), np.nan)
    denom = float(r[:-1] @ r[:-1])
    rho = min(max(float(r[1:] @ r[:-1]) / denom, 0.0), 1.0) if denom > 0 else 0.0
    return np.asarray(r[1:] - rho * r[:-1], np.float64)


def in_sample_residuals(alt: Alternative, t: _Array, y: _Array, curve: Curve) -> _Array:
    """The residuals that ``alt``'s in-sample likelihood is built on (module docstring): the
    AR(1) innovations of ``y - curve(t)``, or a random walk's scaled increments less its
    drift (both one fewer than the records)."""
    t_ = np.asarray(t, np.float64)
    y_ = np.asarray(y, np.float64)
    if not alt.walk:
        with np.errstate(all="ignore"):
            return innovations(np.asarray(y_ - curve(t_), np.float64))
    gaps = np.diff(t_)
    if gaps.size == 0 or np.any(gaps <= 0):
        return np.full(max(gaps.size, 1), np.nan)
    mu = (y_[-1] - y_[0]) / (t_[-1] - t_[0])
    return np.asarray((np.diff(y_) - mu * gaps) / np.sqrt(gaps / gaps.mean()), np.float64)
