"""The L-model LE-ODE confronted with a run's class-mean logits: constant or decaying rates.

In the logits-as-features model of [1] (Sec. 3.2.2, eq. (8)) only the margin projections of
the class means move. With ``s_k = d_k . Xbar^k / |d_k|^2`` (``d_k = e_k - 1/K``), their sum
``S`` and the norm of their spread ``|b|``, ``b = s - mean(s)``, the exact reduction of the
L-model ([1] Sec. 3.2.2 with erratum 3 of docs/theories/lesde.md; derived in the docstring
of the projection estimator
:func:`~ncdynamics.theories.lesde.estimate.estimate_ab_projection`) gives, for any
time-dependent elasticities,

    log|S(t)| = c_S + (A(t) - B(t))/K,     log|b(t)| = c_b + (A(t) + B(t)/(K-1))/K,

where ``A``, ``B`` integrate the intra- and inter-class elasticities alpha(t), beta(t).
Two readings of the rates are fitted (:func:`~ncdynamics.theories.lesde.estimate.
fit_margin_rates`) and one is kept:

- ``constant``: alpha, beta constant (Sec. 2.2, Props. 3.2-3.3), so both logs are lines;
- ``power-law``: alpha(t) = alpha0 (1+t)^(-r_alpha), beta(t) = beta0 (1+t)^(-r_beta), the
  decaying elasticities whose tail indices decide separation (Thm. 3.1, Sec. 4 and (D.17)).

The power law is kept only when its small-sample Akaike criterion (AICc) is lower by more
than 2 *and* it predicts the last quarter of the records, fitted on the first three
quarters, no worse than constant rates; otherwise the simpler law stands. Both laws' numbers
are in ``Shown.alternatives``.

The verdict counts parameters jointly (``Curves.shared_parameters``): alpha, beta and the
tail indices are shared by both margins, with fixed weights, so a generic curve fitted to
each margin has twice its parameters (a sum of two exponentials 10 against the theory's 6,
as its AICc counts them). The theory must beat the curves of 6 parameters or fewer by the AICc
margin and held out; a bigger curve blocks ``holds`` only when its AICc is lower than the
theory's by more than the margin. On the calibration kit (seed 0, 40 true streams per noise,
10 generic per family) this took the true positives from 34/40 and 28/40 (independent,
AR(1)) to 36/40 and 38/40, with 1 of 60 generic streams positive before and after; the
remaining misses are the earliest held-out origin's (docs/theories/lesde.md).

Signs the theory requires (checked by the verdict): the separation rate alpha - beta > 0
(Thm. 2.1 (1); Thm. 3.1 assumes gamma(t) = min(alpha - beta, alpha + (K-1) beta) > 0,
Prop. 3.4 the same), and alpha > 0, which gamma > 0 implies:
``K alpha = (K-1)(alpha - beta) + (alpha + (K-1) beta)``. beta has no required sign (the
paper's estimates have B < 0). For constant rates these are the parameters ``alpha`` and
``rate_margin = (alpha - beta)/K``; for the power law ``alpha0`` and ``gap_last``, alpha -
beta at the last fitted record.

Time is the stream's step (the SGD iteration for the lesde experiments, the epoch for
runs recorded by :func:`ncdynamics.training.train`), counted from step 0 as in (D.17);
rates are per that unit. Observables: the mean class margin ``S/K`` and the margin spread
``|b|/sqrt(K)`` of the class-mean logits (probe ``class_means``), both fitted in log.

Regime (``CONFRONTATION.assumptions``): the class means are of the logits (K x K per
record: eq. (8) is defined on logits, a hidden layer's means are out of regime), K >= 2, the
softmax cross-entropy loss (the L-model linearises the cross-entropy logit dynamics (B.1)-
(B.6); under a squared loss the margins saturate at the targets instead of growing), and a
constant learning rate (the rates are per iteration at a fixed step size h, eq. (1)).

Intervals: the Gauss-Newton covariance of the joint fit with an AR(1) noise model by
restricted likelihood (``_METHOD``); the derived rates by the delta method. The power law's
``beta0``, the rate at step 0 extrapolated through ``(1 + t)^-r_beta``, has a multiplicative
error, and its interval is the delta method on ``log|beta0|`` where the records fix its sign
(:func:`_beta0_interval`): on the calibration streams (40 seeds) it holds the truth 0.975
(independent) and 0.950 (AR(1), rho = 0.9) of the time, where the symmetric interval held
0.950 and 0.825.

Forecast band (:attr:`TheoryFit.band`, see :mod:`~ncdynamics.theories.forecast_bands`): the
parameter covariance of the fit (AR(1) by restricted likelihood) carried to the horizon, plus
each margin's record noise raised from the residuals' mean square to the noise model's
marginal variance (:func:`_noise_raise`; the fitted curves absorb part of a slow noise), with
a t quantile on the fit's degrees of freedom. On six calibration-kit streams per noise the
band holds 0.965 (independent) and 0.976 (AR(1), rho = 0.9) of later records, with errors
0.92 of its standard error under both; the residuals' root mean square with the normal
quantile, as before, held 0.953 and 0.890.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from functools import partial
from statistics import NormalDist
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..confrontation import (
    Assumption,
    Confrontation,
    Curves,
    Need,
    NotApplicable,
    Param,
    Series,
    Shown,
    Stream,
    TheoryFit,
    Uncertainty,
    Undetermined,
    r_squared,
)
from ..forecast_bands import student_level
from ..regime import constant_learning_rate_assumption, loss_is, plain_gradient_descent
from ..uncertainty import ar1_reml_covariance, intervals_from_covariance, numeric_jacobian
from .estimate import (
    RATE_LAWS,
    TAIL_INDEX_BOUNDS,
    MarginRateFit,
    RateLaw,
    fit_margin_rates,
    integrated_power_rate,
)
from .model import d_vectors

__all__ = ["CONFRONTATION", "choose_rate_law", "margin_projections"]

_NEEDS = (Need("array", "class_means_logits", "class_means"),)
_OBSERVABLES = ("mean_margin", "margin_spread")
#: AICc margin the power law must win by (a difference below 2 is no evidence).
AIC_MARGIN = 2.0
#: Fraction of the records the held-out comparison fits on; it predicts the rest.
HELDOUT_FIT_FRACTION = 0.75
_METHOD = (
    "least-squares Jacobian (Gauss-Newton) of the joint log fit, each observable weighted "
    "by its residual scale; AR(1) sandwich with rho and the noise variance by restricted "
    "likelihood (REML, posterior median of rho under Jeffreys' prior), t on the effective "
    "record count; derived rates by the delta method"
)

Array = NDArray[np.float64]


def margin_projections(means: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean class margin ``S/K`` and margin spread ``|b|/sqrt(K)`` of class-mean logits.

    Parameters
    ----------
    means : ndarray of shape (T, K, K)
        ``means[t, k]``: mean logits of class ``k`` at record ``t``.
    """
    x = np.asarray(means, dtype=np.float64)
    k = x.shape[1]
    s = np.einsum("kj,tkj->tk", d_vectors(k), x) / ((k - 1) / k)  # (T, K)
    spread = np.linalg.norm(s - s.mean(axis=1, keepdims=True), axis=1) / np.sqrt(k)
    return s.mean(axis=1), spread


def _observe(stream: Stream) -> dict[str, Series]:
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or means.shape[1] != means.shape[2] or means.shape[1] < 2:
        return {}
    margin, spread = margin_projections(means)
    return {"mean_margin": (steps, margin), "margin_spread": (steps, spread)}


# ---------------------------------------------------------------------------- assumptions
def _check_logits(stream: Stream) -> str | None:
    try:
        _, means = stream.array("class_means_logits")
    except KeyError:
        return None
    if means.ndim == 3 and means.shape[1] != means.shape[2]:
        return (
            f"class_means_logits has {means.shape[2]} outputs for {means.shape[1]} classes: "
            "not logits (a hidden layer?); the L-model's H (eq. (8)) acts on K logits"
        )
    return None


def _check_classes(stream: Stream) -> str | None:
    try:
        _, means = stream.array("class_means_logits")
    except KeyError:
        return None
    if means.ndim == 3 and means.shape[1] < 2:
        return f"{means.shape[1]} class recorded; the LE-SDE needs K >= 2"
    return None


ASSUMPTIONS = (
    Assumption("features", "class means of the K logits (eq. (8))", _check_logits),
    Assumption("classes", "K >= 2 classes", _check_classes),
    loss_is(
        ("cross-entropy",),
        "softmax cross-entropy (App. B)",
        "the L-model linearises softmax cross-entropy logit dynamics ((B.1)-(B.6) of [1])",
    ),
    constant_learning_rate_assumption(
        "constant step size (eq. (1))",
        "the LE-SDE rates are per iteration at a fixed step size (eq. (1))",
    ),
    plain_gradient_descent(
        "the LE-SDE drift is the SGD step of eq. (1) of [1]: an adaptive method rescales each "
        "coordinate and weight decay adds a drift of its own (heavy-ball momentum at a constant "
        "rate only rescales the fitted rates, so it is allowed)",
        momentum=False,
        statement="SGD (eq. (1)): not an adaptive method, no weight decay",
    ),
)


# ---------------------------------------------------------------------------- the fit
def _time_unit(stream: Stream) -> str:
    """What a step of the stream is: an SGD iteration, an epoch, or just a record step."""
    if stream.setting("n_iter") is not None:
        return "iteration"
    if stream.setting("epochs") is not None:
        return "epoch"
    return "step"


def _report(fit: MarginRateFit, t_last: float) -> tuple[list[str], Callable[[Array], Array]]:
    """Names and values of the parameters reported for ``fit`` (functions of theta)."""
    k = fit.n_classes
    if fit.law == "constant":

        def values(th: Array) -> Array:
            a, b = th[2], th[3]
            return np.array([a, b, (a - b) / k, (a + b / (k - 1)) / k])

        return ["alpha", "beta", "rate_margin", "rate_spread"], values

    def values_pl(th: Array) -> Array:
        a0, b0, ra, rb = th[2:6]
        a_end, b_end = a0 * (1 + t_last) ** (-ra), b0 * (1 + t_last) ** (-rb)
        return np.array([a0, b0, ra, rb, a_end, b_end, a_end - b_end])

    return [
        "alpha0",
        "beta0",
        "r_alpha",
        "r_beta",
        "alpha_last",
        "beta_last",
        "gap_last",
    ], values_pl


def _noise_raise(fit: MarginRateFit, steps: Array, ys: Array, yb: Array) -> float:
    """The record noise's marginal variance over the fit's mean squared residual (both
    margins weighted to one scale, as the fit weights them): the AR(1) noise variance by
    restricted likelihood (:func:`~ncdynamics.theories.uncertainty.ar1_reml_covariance`), which
    counts the slow noise the fitted curves absorbed; at least 1."""
    w = 1.0 / np.asarray(fit.scatter, dtype=np.float64)

    def weighted(theta: Array) -> Array:
        f1, f2 = fit.curves(steps, theta)
        return np.concatenate([w[0] * (ys - f1), w[1] * (yb - f2)])

    res = weighted(fit.theta)
    _, s2, _, _ = ar1_reml_covariance(numeric_jacobian(weighted, fit.theta), res, series=2)
    mean_square = float(np.mean(res**2))
    if not (math.isfinite(s2) and mean_square > 0):
        return 1.0
    return max(s2 / mean_square, 1.0)


def _log_curve(fit: MarginRateFit, t: Array, which: int, theta: Array) -> Array:
    """``log|S|`` (``which = 0``) or ``log|b|`` (1) of ``fit`` at ``t`` with ``theta``."""
    return fit.curves(t, theta)[which]


def _heldout_rmse(law: RateLaw, steps: Array, ys: Array, yb: Array, k: int) -> float:
    """Log-RMSE on the last quarter of the records of ``law`` fitted on the rest."""
    n_fit = int(math.ceil(HELDOUT_FIT_FRACTION * steps.size))
    if n_fit < 8 or steps.size - n_fit < 2:  # 6 power-law parameters + 2 spare
        return math.nan
    try:
        part = fit_margin_rates(steps[:n_fit], ys[:n_fit], yb[:n_fit], k, law=law)
    except (ValueError, np.linalg.LinAlgError):
        return math.nan
    fs, fb = part.curves(steps[n_fit:])
    err = np.concatenate([fs - ys[n_fit:], fb - yb[n_fit:]])
    return float(np.sqrt(np.mean(err**2))) if np.all(np.isfinite(err)) else math.inf


#: The rival every lesde fit must beat held out (``Curves.rivals``).
RIVAL = "each margin growing exponentially at its own rate"


def _lines_in_log(
    steps: Array, logs: dict[str, Array], sign_of: dict[str, float]
) -> Callable[[Array], dict[str, Array]]:
    """Each margin a line in log fitted alone: the constant-rate law without the elasticities
    the two margins share. With two margins and two constant rates the L-model is exactly
    this (any two slopes are some alpha, beta), so it predicts nothing a pair of exponentials
    does not; the decaying rates must predict the later records better than it."""
    coefs = {n: np.polyfit(steps.astype(np.float64), y, 1) for n, y in logs.items()}

    def lines(at: Array) -> dict[str, Array]:
        t = np.asarray(at, dtype=np.float64)
        with np.errstate(over="ignore"):
            return {n: sign_of[n] * np.exp(np.polyval(c, t)) for n, c in coefs.items()}

    return lines


def choose_rate_law(
    fits: dict[str, MarginRateFit | None], heldout: dict[str, float]
) -> tuple[str, str]:
    """``(law, why)``: keep the power law only if AICc and held-out error both prefer it."""
    const, power = fits["constant"], fits.get("power-law")
    if const is None:
        raise ValueError("`fits` must hold the constant-rate fit.")
    if power is None or not math.isfinite(power.aicc):
        return "constant", "constant rates kept: too few records for the power law"
    d_aic = power.aicc - const.aicc
    h_c, h_p = heldout.get("constant", math.nan), heldout.get("power-law", math.nan)
    held = (
        f"held-out log-RMSE {h_p:.3g} vs {h_c:.3g}"
        if math.isfinite(h_c) and math.isfinite(h_p)
        else "no held-out comparison (too few records)"
    )
    aic = f"AICc {power.aicc:.4g} vs {const.aicc:.4g}"
    if not d_aic < -AIC_MARGIN:
        return "constant", f"constant rates kept: power-law {aic} (not lower by > 2); {held}"
    if math.isfinite(h_c) and math.isfinite(h_p) and h_p > h_c:
        return "constant", f"constant rates kept: power-law {aic}, but {held} is worse"
    return "power-law", f"power-law rates chosen: {aic}; {held}"


def _margin_logs(
    stream: Stream,
) -> tuple[Array, int, dict[str, tuple[Array, Array]], Array, Array]:
    """The records' steps, K, the observed margins, and ``log|S|``, ``log|b|`` (raising
    :class:`NotApplicable` / :class:`Undetermined` where the records cannot be fitted)."""
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or means.shape[1] != means.shape[2] or means.shape[1] < 2:
        raise NotApplicable(
            f"`class_means_logits` must have shape (T, K, K) with K >= 2 (class x logit); "
            f"got {means.shape}."
        )
    if steps.size < 3:
        raise Undetermined(f"the fit needs at least 3 records; the stream has {steps.size}.")
    obs = _observe(stream)
    if any(np.any(v == 0) for _, v in obs.values()):
        raise Undetermined("a margin projection is exactly zero at some record; log undefined.")
    ys, yb = (np.log(np.abs(obs[n][1])) for n in _OBSERVABLES)
    return steps, int(means.shape[1]), obs, ys, yb


def _fit_laws(
    steps: Array, ys: Array, yb: Array, k: int
) -> tuple[dict[str, MarginRateFit | None], dict[str, float], str, str]:
    """Every rate law fitted (``None`` where too few records), its held-out error, and the
    law chosen with the reason."""
    fits: dict[str, MarginRateFit | None] = {}
    for name in RATE_LAWS:
        try:
            fits[name] = fit_margin_rates(steps, ys, yb, k, law=name)
        except ValueError:  # too few records for the power law (3 or 4 need the constant)
            fits[name] = None
    heldout: dict[str, float] = {n: _heldout_rmse(n, steps, ys, yb, k) for n in RATE_LAWS}
    law, why = choose_rate_law(fits, heldout)
    return fits, heldout, law, why


def _beta0_interval(
    fit: MarginRateFit, steps: Array, linear: tuple[float, float]
) -> tuple[float, float]:
    """The 95% interval of the power law's ``beta0``, multiplicative where the records fix
    its sign, else ``linear`` (the symmetric one).

    ``beta0`` is the rate at step 0, extrapolated from the records through ``(1 + t)^-r_beta``:
    its error is mostly ``r_beta``'s times ``log(1 + t)``, a factor, so ``log|beta0|`` is about
    normal and ``beta0`` is not (on the calibration streams under AR(1) noise the fitted values
    spread from -0.33 to -0.03 about -0.1, and the symmetric interval missed the truth in 7 of
    40 seeds, each an estimate near zero with a narrow interval; ``log|beta0|`` spreads
    symmetrically). The sign of ``beta0`` is that of ``B``'s change over the records,
    ``beta0 (I(t_n; r_beta) - I(t_1; r_beta))`` (a power-law rate keeps its sign), which the
    records measure directly: where its interval excludes zero, the interval is the delta
    method on ``log|beta0|`` with the fit's t quantile; where it does not, the sign is not
    determined and the symmetric interval stands."""
    b0 = float(fit.theta[3])
    if not (np.all(np.isfinite(fit.cov)) and b0 != 0):
        return linear
    ends = np.array([steps[0], steps[-1]], dtype=np.float64)

    def change_and_log(th: Array) -> Array:
        i_first, i_last = th[3] * integrated_power_rate(ends, th[5])
        return np.array([i_last - i_first, math.log(abs(th[3]))])

    jac = numeric_jacobian(change_and_log, fit.theta)
    cov = jac @ fit.cov @ jac.T
    vals = change_and_log(fit.theta)
    (low, high), (log_low, log_high) = intervals_from_covariance(
        ["change", "log"], vals, cov, fit.dof, log_scale=[False, True]
    ).values()
    if low <= 0 <= high:
        return linear
    ends_b0 = sorted((math.copysign(log_low, b0), math.copysign(log_high, b0)))
    return float(ends_b0[0]), float(ends_b0[1])


def _reported(
    fit: MarginRateFit, law: str, steps: Array
) -> tuple[dict[str, float], dict[str, tuple[float, float]], dict[str, Any]]:
    """The reported parameters with their intervals, and the facts the law gives them:
    ``signs``, ``bounds``, and the predictions (margin gap, tail index, spread)."""
    names, values = _report(fit, float(steps[-1]))
    jac = numeric_jacobian(values, fit.theta)
    cov = (
        jac @ fit.cov @ jac.T
        if np.all(np.isfinite(fit.cov))
        else np.full((len(names),) * 2, np.inf)
    )
    vals = values(fit.theta)
    intervals = intervals_from_covariance(names, vals, cov, fit.dof)
    if law == "power-law":
        intervals["beta0"] = _beta0_interval(fit, steps, intervals["beta0"])
    params = {n: float(v) for n, v in zip(names, vals, strict=True)}
    if law == "constant":
        facts: dict[str, Any] = {
            "signs": {"alpha": 1, "rate_margin": 1},
            "bounds": {},
            "gap": params["alpha"] - params["beta"],
            "tail": 0.0,
            "spread_shrinks": bool(params["beta"] < 0),
        }
    else:
        facts = {
            "signs": {"alpha0": 1, "gap_last": 1},
            "bounds": {"r_alpha": TAIL_INDEX_BOUNDS, "r_beta": TAIL_INDEX_BOUNDS},
            "gap": params["gap_last"],
            "tail": min(params["r_alpha"], params["r_beta"]),
            "spread_shrinks": bool(params["beta_last"] < 0),
        }
    return params, intervals, facts


def _alternatives(
    fits: dict[str, MarginRateFit | None],
    heldout: dict[str, float],
    law: str,
    steps: Array,
    ys: Array,
    yb: Array,
) -> dict[str, dict[str, float]]:
    """The report's table of the rate laws: size, AIC, AICc, held-out error, R² in log."""
    alternatives: dict[str, dict[str, float]] = {}
    for variant, f in fits.items():
        alternatives[variant] = {
            "n_params": float(4 if variant == "constant" else 6),
            "aic": f.aic if f is not None else math.nan,
            "aicc": f.aicc if f is not None else math.nan,
            "heldout_rmse": heldout[variant],
            "chosen": float(variant == law),
        }
        if f is not None:
            fs, fb = f.curves(steps)
            alternatives[variant]["r2_log_mean_margin"] = r_squared(ys, fs)
            alternatives[variant]["r2_log_margin_spread"] = r_squared(yb, fb)
    return alternatives


def _band(
    fit: MarginRateFit, steps: Array, ys: Array, yb: Array, sign_of: dict[str, float]
) -> Callable[[Array], dict[str, tuple[Any, Any]]]:
    """``band(steps) -> {observable: (low, high)}``: the 95% forecast band of ``fit``'s margins."""
    scatter = dict(zip(_OBSERVABLES, fit.scatter, strict=True))
    # the noise model is estimated on the first call only: most fits (held-out origins,
    # windows) are never asked for a band, and a forecast asks many times
    raise_to = functools.cache(partial(_noise_raise, fit, steps, ys, yb))

    def band(at: Array) -> dict[str, tuple[Any, Any]]:
        """The delta method of :func:`~ncdynamics.theories.uncertainty.delta_band`, done on
        the log curves themselves (finite where the margins overflow), with the record noise's
        marginal variance (:func:`_noise_raise`, estimated once per fit) and a t quantile on
        the fit's degrees of freedom (:mod:`~ncdynamics.theories.forecast_bands`)."""
        t = np.asarray(at, dtype=np.float64)
        z = NormalDist().inv_cdf(0.5 + student_level(fit.dof) / 2)
        out: dict[str, tuple[Any, Any]] = {}
        for i, name in enumerate(_OBSERVABLES):
            mid = fit.curves(t)[i]
            if np.all(np.isfinite(fit.cov)):
                g = numeric_jacobian(partial(_log_curve, fit, t, i), fit.theta)
                var = np.einsum("ij,jk,ik->i", g, fit.cov, g) + raise_to() * scatter[name] ** 2
            else:
                var = np.full(mid.shape, np.inf)
            half = z * np.sqrt(np.maximum(var, 0.0))
            with np.errstate(over="ignore"):
                ends = np.sort(sign_of[name] * np.exp(np.stack([mid - half, mid + half])), axis=0)
            out[name] = (ends[0], ends[1])
        return out

    return band


def _fit(stream: Stream) -> TheoryFit:
    steps, k, obs, ys, yb = _margin_logs(stream)
    fits, heldout, law, why = _fit_laws(steps, ys, yb, k)
    fit = fits[law]
    if fit is None:  # choose_rate_law only names a law that was fitted
        raise RuntimeError(f"the {law} fit is missing.")
    params, intervals, facts = _reported(fit, law, steps)
    signs, bounds = facts["signs"], facts["bounds"]
    gap, tail, spread_shrinks = facts["gap"], facts["tail"], facts["spread_shrinks"]
    # Thm. 2.1 (constant rates: alpha > beta); Thm. 3.1 with Sec. 4's reading (tail index < 1)
    separable = bool(gap > 0 and tail < 1)
    names = list(params)
    unit = _time_unit(stream)
    units = {n: f"1/{unit}" for n in names if not n.startswith("r_")}
    units.update({n: "1" for n in names if n.startswith("r_")})
    sign_of = {n: float(np.sign(obs[n][1][-1])) or 1.0 for n in _OBSERVABLES}

    def predict_with(theta: Array, at: Array) -> dict[str, Array]:
        fs, fb = fit.curves(np.asarray(at, dtype=np.float64), theta)
        with np.errstate(over="ignore"):  # margins beyond float range forecast as inf
            return {
                "mean_margin": sign_of["mean_margin"] * np.exp(fs),
                "margin_spread": sign_of["margin_spread"] * np.exp(fb),
            }

    def predict(at: Array) -> dict[str, Array]:
        return predict_with(fit.theta, np.asarray(at, dtype=np.float64))

    band = _band(fit, steps, ys, yb, sign_of)

    if law == "constant":  # the constant law *is* a line in log per margin: the same curves
        lines: Callable[[Array], dict[str, Array]] = predict
    else:
        lines = _lines_in_log(steps, {"mean_margin": ys, "margin_spread": yb}, sign_of)

    curves = predict(steps)
    goodness = {
        f"r2_log_{n}": r_squared(y, np.log(np.abs(curves[n])))
        for n, y in zip(_OBSERVABLES, (ys, yb), strict=True)
    }
    alternatives = _alternatives(fits, heldout, law, steps, ys, yb)
    notes = [why, f"rates per {unit}; the power law counts time from step 0 as (1 + t) (D.17)"]
    if np.any(np.sign(obs["mean_margin"][1]) != sign_of["mean_margin"]):
        notes.append("the mean margin changes sign inside the records; the L-model keeps it")
    return TheoryFit(
        theory="lesde",
        params={
            n: Param(
                v,
                interval=intervals.get(n),
                unit=units.get(n, ""),
                bound=bounds.get(n),
                sign=signs.get(n, 0),
            )
            for n, v in params.items()
        },
        curves=Curves(
            fitted={n: (steps, curves[n]) for n in _OBSERVABLES},
            predict=predict,
            band=band,
            scales=dict.fromkeys(_OBSERVABLES, "log"),
            rivals={RIVAL: lines},
            # alpha, beta (and the tail indices) shape both margins (verdict rule 4)
            shared_parameters=True,
        ),
        uncertainty=Uncertainty(method=_METHOD, n_fitted=len(fit.names)),
        shown=Shown(
            goodness=goodness,
            predictions={
                "rate_law": law,
                "margins_grow": bool(gap > 0),
                "relative_spread_shrinks": spread_shrinks,
                "separable": separable,
                "min_tail_index": tail,
            },
            notes=tuple(notes),
            alternatives=alternatives,
        ),
    )


CONFRONTATION = Confrontation(
    theory="lesde",
    summary=(
        "L-model LE-ODE fitted to the margins of the class-mean logits, with constant or "
        "power-law-decaying elasticities alpha, beta (chosen by AICc and held-out error)"
    ),
    needs=_NEEDS,
    observe=_observe,
    fit=_fit,
    assumptions=ASSUMPTIONS,
)
