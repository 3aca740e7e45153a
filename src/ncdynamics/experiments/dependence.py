"""How a fitted parameter depends on a setting across the runs of a sweep: a failable check.

A theory that predicts a parameter from the run's settings also predicts how it moves when a
setting moves: the Hadamard time scale ``c = 2 sqrt(n) eta / B`` per epoch, the two-point
rates per step and the NTK-collapse flow time per step are all proportional to the learning
rate ``eta``. :func:`fit_dependence` fits the power law ``log p = a + s log x`` to the
estimates ``p`` of many runs against their setting ``x`` and says whether the predicted
exponent lies inside the 95% interval of the fitted one.

The interval of ``s`` is a Student ``t`` interval (``n - 2`` degrees of freedom) whose
standard error is the larger of two:

* the scatter of the runs about the line (ordinary least squares), and
* the runs' own uncertainty carried through the same least squares
  (``var s = sum_i c_i^2 se_i^2`` with ``c_i = (u_i - mean u) / S_uu``, ``u = log x`` and
  ``se_i`` the standard error of ``log p_i`` read from its 95% interval),

so runs that repeat one value exactly (a deterministic fit) cannot make the interval narrower
than the fits themselves are sure, and an exponent far from the predicted one fails.

Verdicts: ``agrees`` (the predicted exponent is inside the interval and 0 is not: the runs
tell the prediction from no dependence at all), ``disagrees`` (the predicted exponent is
outside: the parameter does not move with the setting as the theory says), ``undetermined``
(the interval holds both the prediction and 0; or fewer than 3 usable runs or fewer than 2
distinct settings; non-positive values are not usable on a log scale).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy.special import ndtri, stdtrit  # scipy.stats's quantiles, without its import cost

from .._validation import check_scalar

__all__ = ["DEPENDENCE_VERDICTS", "Dependence", "fit_dependence"]

#: The verdicts of :func:`fit_dependence`.
DEPENDENCE_VERDICTS = ("agrees", "disagrees", "undetermined")

_Z95 = float(ndtri(0.975))


@dataclass(frozen=True)
class Dependence:
    """The fitted exponent of a parameter in a setting, against the predicted one.

    Attributes
    ----------
    slope, low, high : float
        The fitted exponent ``s`` and its 95% interval (NaN when undetermined).
    predicted : float
        The exponent the theory predicts.
    verdict : {"agrees", "disagrees", "undetermined"}
    reason : str
        One line: the numbers behind the verdict.
    n_runs, n_settings : int
        Usable runs, and distinct settings among them.
    """

    slope: float
    low: float
    high: float
    predicted: float
    verdict: str
    reason: str
    n_runs: int
    n_settings: int


def _log_se(low: ArrayLike | None, high: ArrayLike | None, n: int) -> np.ndarray:
    """Standard errors of ``log p`` from 95% intervals (0 where an interval is missing;
    infinite where it reaches 0 or infinity)."""
    if low is None or high is None:
        return np.zeros(n)
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    out = np.zeros(n)
    have = np.isfinite(lo) | np.isfinite(hi)
    with np.errstate(divide="ignore", invalid="ignore"):
        width = np.log(hi) - np.log(lo)
    out[have] = width[have] / (2 * _Z95)
    out[have & ~np.isfinite(out)] = math.inf
    return out


def fit_dependence(
    x: ArrayLike,
    values: ArrayLike,
    *,
    predicted: float,
    low: ArrayLike | None = None,
    high: ArrayLike | None = None,
) -> Dependence:
    """Fit ``log values = a + s log x`` across runs and judge the predicted exponent (module
    docstring).

    Parameters
    ----------
    x : array_like of shape (n_runs,)
        Each run's setting (the learning rate, ...).
    values : array_like of shape (n_runs,)
        Each run's estimate of the parameter.
    predicted : float
        The exponent the theory predicts (``1`` for proportional).
    low, high : array_like of shape (n_runs,), optional
        Each estimate's 95% interval; NaN where a run has none.

    Returns
    -------
    Dependence
    """
    predicted = check_scalar(predicted, "predicted")
    xs = np.asarray(x, dtype=np.float64).ravel()
    ps = np.asarray(values, dtype=np.float64).ravel()
    if xs.shape != ps.shape:
        raise ValueError(
            f"`x` and `values` must have the same length; got {xs.size} and {ps.size}."
        )
    se_all = _log_se(low, high, xs.size)
    if se_all.shape != xs.shape:
        raise ValueError(f"`low` and `high` must have length {xs.size}; got {se_all.size}.")
    ok = np.isfinite(xs) & np.isfinite(ps) & (xs > 0) & (ps > 0)
    u, v, se = np.log(xs[ok]), np.log(ps[ok]), se_all[ok]
    n, k = int(u.size), int(np.unique(u).size)
    if n < 3 or k < 2:
        return Dependence(
            math.nan,
            math.nan,
            math.nan,
            predicted,
            "undetermined",
            f"{n} usable runs at {k} distinct settings; the exponent needs 3 runs at 2 settings",
            n,
            k,
        )
    du = u - u.mean()
    suu = float(np.sum(du**2))
    slope = float(np.sum(du * (v - v.mean())) / suu)
    resid = v - v.mean() - slope * du
    dof = n - 2
    var_scatter = float(np.sum(resid**2)) / dof / suu if dof > 0 else math.inf
    c = du / suu
    var_runs = float(np.sum(c**2 * se**2))
    se_slope = math.sqrt(max(var_scatter, var_runs))
    t = float(stdtrit(dof, 0.975))
    lo, hi = slope - t * se_slope, slope + t * se_slope
    inside = lo <= predicted <= hi
    # an interval that also holds 0 cannot tell the prediction from no dependence at all:
    # "agrees" there would be a verdict that could not have failed
    null_too = inside and predicted != 0 and lo <= 0 <= hi
    verdict = "undetermined" if null_too else "agrees" if inside else "disagrees"
    which = "the runs' scatter" if var_scatter >= var_runs else "the fits' own intervals"
    reason = (
        f"exponent {slope:.3g} [{lo:.3g}, {hi:.3g}] from {n} runs at {k} settings "
        f"(interval from {which}); predicted {predicted:g} is "
        f"{'inside' if inside else 'outside'}"
    )
    if null_too:
        reason += ", but so is 0: these runs cannot tell it from no dependence"
    return Dependence(slope, lo, hi, predicted, verdict, reason, n, k)
