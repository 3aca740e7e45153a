"""Forecast origins, naive baselines with bands, and scores over the whole post-cut trajectory.

``ncdyn forecast`` cuts a stream at several *origins*, fits the theory on the records up to
each, and scores what it predicts for **every** later record, beside two naive baselines:

- **last value**: the last record before the cut, carried forward. Its band treats the
  observable (on its scale, see below) as a random walk in training time: with the seen
  increments ``dy`` over gaps ``dt``, ``sigma^2 = sum dy^2 / sum dt`` and the 95% band at
  ``h`` steps after the cut is ``y_last -/+ 1.96 sigma sqrt(h)``.
- **power law**: ``|v| = c (t - t0 + 1)^p`` (``t0`` the stream's first step), fitted by
  least squares in ``log|v|`` against ``log(t - t0 + 1)`` to the records in the later half
  of the seen *time* span, each record weighted by its share of training time (half the gap
  to each neighbour). The weights make the fit independent of how the records are spaced: a
  log-spaced schedule no longer fits the slope to a short burst of late records. Its band is
  the regression's 95% prediction band (parameter covariance plus residual scatter).

Origins are placed two ways (:func:`place_origins`): at fractions of the stream's step range
(``--at``), and by the dynamics, where the stream's first observable has made a fraction of
its total change (``--change``; on its scale, ``log`` for a positive observable spanning
decades), so that a run whose transient is over in the first tenth of its steps is still
forecast from inside the transient.

Errors are measured on the observable's scale (:func:`ncdynamics.theories.verdict
.observable_scale`): in decades (``log10``) for a ``log`` observable, in its own units for a
``linear`` one. ``rmse`` is over all post-cut records; the *skill* of the theory against a
baseline is ``1 - MSE_theory / MSE_baseline`` (positive when the theory is better);
``coverage`` is the fraction of post-cut records inside the method's 95% band.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "Baseline",
    "decades_off",
    "MIN_AFTER",
    "MIN_BEFORE",
    "last_value_baseline",
    "place_origins",
    "power_law_baseline",
    "score_method",
    "time_weights",
    "to_scale",
]

#: Fewest records an origin must leave before (and including) the cut, and after it.
MIN_BEFORE = 3
MIN_AFTER = 2
#: Coverage of the baselines' bands: that of every interval and band of the toolkit
#: (``ncdynamics.theories.uncertainty.LEVEL``, which imports scipy.stats: ~0.7 s per command).
LEVEL = 0.95
_Z = NormalDist().inv_cdf(0.5 + LEVEL / 2)

Array = NDArray[np.float64]


def to_scale(values: Array, scale: str) -> Array:
    """``log10|v|`` on the ``log`` scale (decades), ``v`` on the ``linear`` one."""
    v = np.asarray(values, dtype=np.float64)
    if scale == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.asarray(np.log10(np.abs(v)), dtype=np.float64)
    return v


@dataclass(frozen=True)
class Baseline:
    """A naive forecast: ``predict(steps)`` and its 95% ``band(steps) -> (low, high)``."""

    name: str
    predict: Callable[[Array], Array]
    band: Callable[[Array], tuple[Array, Array]]


def time_weights(steps: Array) -> Array:
    """Each record's share of training time (half the gap to each neighbour), mean 1.

    Equally spaced records all weigh 1; a record alone in a long stretch weighs more than
    one of a dense burst.
    """
    s = np.asarray(steps, dtype=np.float64)
    if s.size < 2:
        return np.ones(s.size)
    gaps = np.diff(s)
    w = np.zeros(s.size)
    w[:-1] += gaps / 2
    w[1:] += gaps / 2
    total = float(w.sum())
    return w * (s.size / total) if total > 0 else np.ones(s.size)


def _nan_baseline(name: str) -> Baseline:
    def nan(at: Array) -> Array:
        return np.full(np.shape(at), np.nan)

    return Baseline(name, nan, lambda at: (nan(at), nan(at)))


def power_law_baseline(steps: Array, values: Array, *, origin: float) -> Baseline:
    """The power-law baseline of the module docstring, fitted to ``(steps, values)``."""
    s, v = np.asarray(steps, np.float64), np.asarray(values, np.float64)
    if s.size < 2:
        return _nan_baseline("power law")
    later = s >= s[0] + (s[-1] - s[0]) / 2
    w_all = time_weights(s)
    s, v, w = s[later], v[later], w_all[later]
    if s.size < 2 or np.unique(s).size < 2 or np.any(v == 0):
        return _nan_baseline("power law")
    sign = float(np.sign(v[-1]))
    if np.any(np.sign(v) != sign):
        return _nan_baseline("power law")
    x = np.log(s - origin + 1.0)
    y = np.log(np.abs(v))
    design = np.stack([np.ones_like(x), x], axis=1)
    sw = np.sqrt(w)
    coef, *_ = np.linalg.lstsq(design * sw[:, None], y * sw, rcond=None)
    res = y - design @ coef
    dof = s.size - 2
    s2 = float(np.sum(w * res**2) / dof) if dof > 0 else math.inf
    gram_inv = np.linalg.pinv((design * w[:, None]).T @ design)

    def predict(at: Array) -> Array:
        xa = np.log(np.asarray(at, np.float64) - origin + 1.0)
        return np.asarray(sign * np.exp(coef[0] + coef[1] * xa), dtype=np.float64)

    def band(at: Array) -> tuple[Array, Array]:
        xa = np.log(np.asarray(at, np.float64) - origin + 1.0)
        g = np.stack([np.ones_like(xa), xa], axis=-1)
        var = s2 * (1.0 + np.einsum("...i,ij,...j->...", g, gram_inv, g))
        mid = coef[0] + coef[1] * xa
        half = _Z * np.sqrt(var)
        lo, hi = sign * np.exp(mid - half), sign * np.exp(mid + half)
        return np.minimum(lo, hi), np.maximum(lo, hi)

    return Baseline("power law", predict, band)


def last_value_baseline(steps: Array, values: Array, *, scale: str) -> Baseline:
    """The last-value baseline of the module docstring (random-walk band on ``scale``)."""
    s, v = np.asarray(steps, np.float64), np.asarray(values, np.float64)
    if s.size == 0:
        return _nan_baseline("last value")
    last, t_last = float(v[-1]), float(s[-1])
    y = to_scale(v, scale)
    dt = np.diff(s)
    ok = np.isfinite(np.diff(y))
    sigma2 = float(np.sum(np.diff(y)[ok] ** 2) / np.sum(dt[ok])) if np.sum(dt[ok]) > 0 else 0.0
    y_last = float(y[-1])

    def predict(at: Array) -> Array:
        return np.full(np.shape(at), last)

    def band(at: Array) -> tuple[Array, Array]:
        h = np.maximum(np.asarray(at, np.float64) - t_last, 0.0)
        half = _Z * np.sqrt(sigma2 * h)
        if scale == "log":
            sign = math.copysign(1.0, last)
            lo, hi = sign * 10 ** (y_last - half), sign * 10 ** (y_last + half)
            return np.minimum(lo, hi), np.maximum(lo, hi)
        return last - half, last + half

    return Baseline("last value", predict, band)


def place_origins(
    steps: Array,
    values: Array,
    *,
    scale: str,
    at: Sequence[float],
    change: Sequence[float],
) -> list[tuple[float, str]]:
    """Cut points ``(step, how placed)``: each fraction of ``at`` of the step range, and each
    fraction of ``change`` of the observable's total change (first record reaching it).

    A cut is snapped to the last record at or before it and kept when it leaves at least
    :data:`MIN_BEFORE` records up to it and :data:`MIN_AFTER` after it; a cut that two
    placements share is kept once, with the first placement's name.
    """
    s, v = np.asarray(steps, np.float64), np.asarray(values, np.float64)
    out: list[tuple[float, str]] = []
    if s.size < MIN_BEFORE + MIN_AFTER:
        return out

    def add(cut: float, how: str) -> None:
        before = s[s <= cut]
        if before.size < MIN_BEFORE or s.size - before.size < MIN_AFTER:
            return
        snapped = float(before[-1])
        if all(c != snapped for c, _ in out):
            out.append((snapped, how))

    for f in at:
        add(float(s[0] + f * (s[-1] - s[0])), f"step fraction {f:g}")
    y = to_scale(v, scale)
    ok = np.isfinite(y)
    if ok.sum() >= 2:
        ys, ss = y[ok], s[ok]
        total = float(ys[-1] - ys[0])
        if total != 0:
            done = (ys - ys[0]) / total
            for f in change:
                reached = np.flatnonzero(done >= f)
                if reached.size:
                    add(float(ss[reached[0]]), f"{f:g} of the total change")
    return sorted(out)


def score_method(
    method: str,
    predicted: Array,
    actual: Array,
    band: tuple[Any, Any] | None,
    *,
    scale: str,
) -> dict[str, Any]:
    """One score row: ``rmse`` on the scale over the post-cut records, the final record's
    ``predicted``/``actual``/``decades_off``, and the band's ``coverage`` (NaN without one)."""
    p, a = np.asarray(predicted, np.float64), np.asarray(actual, np.float64)
    err = to_scale(p, scale) - to_scale(a, scale)
    if scale == "log":
        err = np.where(np.sign(p) == np.sign(a), err, np.inf)
    rmse = float(np.sqrt(np.mean(err**2))) if np.all(np.isfinite(err)) else math.inf
    coverage = math.nan
    if band is not None:
        lo, hi = (np.asarray(b, np.float64) for b in band)
        if lo.shape == a.shape and np.all(np.isfinite(lo) | np.isnan(lo)):
            coverage = float(np.mean((a >= lo) & (a <= hi)))
    final_p, final_a = float(p[-1]), float(a[-1])
    return {
        "method": method,
        "rmse": rmse,
        "error_unit": "decades" if scale == "log" else "units",
        "coverage": coverage,
        "predicted": final_p,
        "actual": final_a,
        "decades_off": decades_off(final_p, final_a),
    }


def decades_off(predicted: float, actual: float) -> float:
    """``|log10(predicted / actual)|``; ``inf`` for a sign mismatch or non-finite input."""
    if not (np.isfinite(predicted) and np.isfinite(actual)) or predicted * actual <= 0:
        return math.inf
    return abs(math.log10(predicted / actual))
