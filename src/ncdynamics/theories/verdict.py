"""The verdict on one theory fitted to one stream: the rules, in one place.

A verdict is one of :data:`VERDICTS`, with a one-line reason. A verdict is only worth
something if it can come out the other way, so ``holds`` is earned against alternatives, on
records the fits did not see. :func:`assess` fits the theory to the whole stream and again
to the records before each of a few origins (``HOLDOUT_ORIGINS``: 50%, 62.5% and 75% of the
records, each leaving at least ``MIN_HELDOUT`` after it; a window uses ``WINDOW_ORIGINS``),
whose later records are *held out*, and :func:`judge` applies these rules in order:

1. ``degenerate`` (:func:`degeneracy`): a parameter or its interval is not finite, a
   parameter sits at a bound of its search (the data wanted it further), a parameter the
   theory requires to have a sign has the other one (unphysical), or its 95% interval holds
   zero (a rate indistinguishable from zero) or spans more than ``SPAN_MAX`` (a rate fitted in
   log that the records do not determine), or there are fewer than
   ``max(MIN_RECORDS, n_free + 2)`` records (too few to tell a fit from a coincidence). The
   fit raising :class:`~ncdynamics.theories.confrontation.Undetermined` is degenerate too.
2. ``fails``: for some observable, the theory's curve explains less than ``R2_MIN`` of the
   variance on the observable's scale, or it predicts the next record worse than carrying the
   last one forward (persistence); or a generic curve of the panel
   (:data:`ncdynamics.theories.alternatives.PANEL`) beats it *both* in-sample by AICc (by more
   than ``AICC_MARGIN``) *and* on the held-out records; or a parameter the theory predicts from
   the run's settings lies outside its fitted 95% interval.
3. ``degenerate`` again when there is no out-of-sample test: the stream is too short to hold
   records out and still fit the rest, or the fit on the earlier records raised.
4. ``not distinguished``: a generic curve with as many free parameters as the theory or fewer
   predicts the held-out records as well as the theory (held-out error ratio, below, at least
   1) or explains the records nearly as well in-sample (AICc not above the theory's by more
   than ``AICC_MARGIN``). The theory fits, but so does that curve: these records cannot tell
   them apart.
   The same when one of the theory's own *rivals* (``Curves.rivals``: its form without
   what only it predicts, e.g. the NTK flow under a frozen or shuffled kernel instead of the
   recorded one) predicts the held-out records as well.
   A fit whose free parameters are shared by all its observables
   (``Curves.shared_parameters``) counts a generic curve's parameters honestly, as its AICc
   does: ``k`` per observable times the observables it is fitted to. A curve with more
   parameters than the theory so counted does not need to be beaten by ``AICC_MARGIN``; it
   makes the verdict ``not distinguished`` only when its AICc is *lower* than the theory's
   by more than ``AICC_MARGIN`` (the records favour it even with its extra parameters paid
   for).
5. ``holds`` otherwise: the theory fits, beats persistence one record ahead, and beats every
   generic curve with as many parameters or fewer both on the held-out records and by AICc,
   and every rival on the held-out records.

The *held-out error ratio* against an alternative is the geometric mean, over the fitted
observables, of ``SSE_theory / SSE_alternative`` on the held-out records, each on the
observable's scale (``log|v|`` for positive observables spanning decades, see
:func:`observable_scale`); both curves were fitted to the same earlier records. AICc is
``sum_o n_o log(SSE_o / n_o) + 2k + 2k(k+1)/(N-k-1)`` over the fitted observables ``o``
(``N`` terms in all), where the SSE is that of the AR(1) innovations of each curve's residuals
(:mod:`ncdynamics.theories.alternatives`: training curves have correlated residuals, and the
random walk is the AR(1) case ``rho = 1``), and ``k`` counts the theory's free parameters, or
an alternative's times the number of observables (it is fitted to each separately), plus one
AR(1) coefficient per observable; a lower value is better.

Where the theory predicts a parameter from the run's settings (``Param.expected``, e.g. the
Hadamard time scale ``c = 2 eta``), that prediction is part of the test: a value outside the
fitted parameter's 95% interval makes the verdict ``fails`` (rule 2: the theory describes the
shape on a clock the settings do not give), and the reason always says where it lies
(:func:`expected_notes`).

The others come from the engine that runs the fits (``ncdynamics.experiments.compare``
and ``.streams``): ``missing`` (no stream has the records), ``out of regime`` (an
:class:`~ncdynamics.theories.confrontation.Assumption` fails), ``error`` (the fit raised) and
``holds in a window`` (the whole stream does not hold but a window of it does).

Skill against a baseline is ``1 - SSE_theory / SSE_baseline`` on the observable's scale:
positive when the theory is better. One record ahead, the theory predicts ``v[i+1]`` as
``v[i]`` plus its own curve's increment from ``t[i]`` to ``t[i+1]`` (or its ``ahead``
predictions when it gives them), persistence as ``v[i]``, and the power law as ``v[i]`` plus
the power law's increment. The power law ``|v| = c (t + 1)^p`` is fitted in training time
``t`` (steps from 0), not record index, so it does not depend on how the records are spaced.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, get_args

import numpy as np
from numpy.typing import NDArray

from .confrontation import NotApplicable, Series, Stream, TheoryFit, Undetermined

__all__ = [
    "AICC_MARGIN",
    "BOUND_TOL",
    "EXACT",
    "HOLDOUT_ORIGINS",
    "WINDOW_ORIGINS",
    "MIN_HELDOUT",
    "Holdout",
    "assess",
    "holdout_splits",
    "MIN_RECORDS",
    "R2_MIN",
    "SPAN_MAX",
    "VERDICTS",
    "Verdict",
    "alternatives_scores",
    "degeneracy",
    "failed_fit_verdict",
    "expected_notes",
    "judge",
    "observable_scale",
    "panel_size",
    "power_law_in_time",
    "skill",
]

VerdictName = Literal[
    "holds",
    "holds in a window",
    "not distinguished",
    "fails",
    "degenerate",
    "out of regime",
    "missing",
    "error",
]
#: Every verdict, best first.
VERDICTS: tuple[VerdictName, ...] = get_args(VerdictName)
#: Fewest records a fit is judged on (and at least ``n_free + 2``).
MIN_RECORDS = 5
#: Least fraction of an observable's variance (on its scale) the theory's curve must explain.
R2_MIN = 0.9
#: A signed parameter whose 95% interval spans more than this factor is not determined by the
#: records (a rate fitted in log never has an interval holding zero; this is its analogue).
SPAN_MAX = 100.0
#: A parameter within this relative distance of a search bound (in log for positive bounds)
#: is at the bound.
BOUND_TOL = 1e-3
#: Origins of the out-of-sample test, as fractions of a stream's records: the theory and
#: every generic curve are refitted on the records before each and scored on all after it.
#: Several origins, so that the score does not hang on the noise of one record.
HOLDOUT_ORIGINS = (0.5, 0.625, 0.75)
#: The one origin of a window's out-of-sample test: every window is a refit, and the engine
#: fits several per stream, so a window's holds is confirmed on its latest records once.
WINDOW_ORIGINS = (0.625,)
#: Fewest records after an origin.
MIN_HELDOUT = 2
#: AICc difference that counts as evidence, both ways: a generic curve lower by more than
#: this (and better held out) fails the theory; the theory must be lower than every curve with
#: as many parameters or fewer by more than this to hold. 6 is where the worse model has
#: considerably less support; calibrated on a two-parameter theory (a line in log), where it
#: separates the theory's own streams (AICc margin over the random walk 20-33 at the 10th-90th
#: percentiles for 40 records with independent noise) from drifting random walks (-2 to 4).
AICC_MARGIN = 6.0


@dataclass(frozen=True)
class Verdict:
    """A verdict, its one-line reason, the window it names and the skill numbers behind it."""

    verdict: VerdictName
    reason: str
    window: tuple[float, float] | None = None
    skill: dict[str, float] = field(default_factory=dict)


def _at_bound(value: float, bound: float) -> bool:
    if not math.isfinite(bound):
        return False
    if value > 0 and bound > 0:
        return abs(math.log(value / bound)) < BOUND_TOL
    return abs(value - bound) <= BOUND_TOL * max(abs(bound), 1e-12)


def degeneracy(fit: TheoryFit, n_records: int | None = None) -> str | None:
    """Why ``fit`` is degenerate (one line), or ``None`` (module docstring, rule 1)."""
    for name, p in fit.params.items():
        if not math.isfinite(value := p.value):
            return f"{name} = {value} is not finite"
    need = max(MIN_RECORDS, fit.n_free + 2)
    if n_records is not None and n_records < need:
        return f"{n_records} records for {fit.n_free} free parameters (need at least {need})"
    for name, p in fit.params.items():
        if p.bound is None:
            continue
        value, (low, high) = p.value, p.bound
        for bound, side in ((low, "lower"), (high, "upper")):
            if _at_bound(value, bound):
                return f"{name} = {value:.4g} is at the {side} bound {bound:.4g} of its search"
    for name, p in fit.params.items():
        if not (sign := p.sign):
            continue
        value = p.value
        low, high = p.interval if p.interval is not None else (value, value)
        if not (math.isfinite(low) and math.isfinite(high)):
            return f"{name} is not identifiable from these records (its interval is infinite)"
        if low <= 0 <= high:
            return (
                f"{name} = {value:.3g} is indistinguishable from zero "
                f"(95% interval {low:.3g} to {high:.3g})"
            )
        if value * sign <= 0:
            want = "positive" if sign > 0 else "negative"
            return f"{name} = {value:.4g} is unphysical (the theory needs it {want})"
        if low * high > 0 and max(abs(low), abs(high)) > SPAN_MAX * min(abs(low), abs(high)):
            return (
                f"{name} = {value:.3g} is not determined by these records "
                f"(95% interval {low:.3g} to {high:.3g} spans more than {SPAN_MAX:g}×)"
            )
    return None


def observable_scale(fit: TheoryFit, name: str, values: NDArray[np.float64]) -> str:
    """``fit.curves.scales[name]``, else ``"log"`` when every value is positive, else
    ``"linear"``."""
    if name in fit.curves.scales:
        return fit.curves.scales[name]
    return "log" if values.size and bool(np.all(values > 0)) else "linear"


def _transform(values: NDArray[np.float64], scale: str) -> NDArray[np.float64]:
    if scale == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log(np.abs(values))
    return values


def power_law_in_time(
    steps: NDArray[np.float64], values: NDArray[np.float64]
) -> NDArray[np.float64] | None:
    """Least-squares ``log|v| = a + p log(t + 1)`` at ``steps`` (``t`` from 0), signed as
    the last value; ``None`` when it cannot be fitted (zeros, sign changes, < 2 times)."""
    t = np.asarray(steps, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if v.size < 2 or np.unique(t).size < 2 or np.any(v == 0) or np.any(t <= -1):
        return None
    if np.any(np.sign(v) != np.sign(v[-1])):
        return None
    x = np.log(t + 1.0)
    p, a = np.polyfit(x, np.log(np.abs(v)), 1)
    return np.asarray(np.sign(v[-1]) * np.exp(a + p * x), dtype=np.float64)


def _skill(sse: float, sse_base: float) -> float:
    if not math.isfinite(sse):
        return -math.inf
    if sse_base <= 0:
        return 0.0 if sse <= 0 else -math.inf
    return 1.0 - sse / sse_base


def _matched(
    observed: Series, curve: Series
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """``(steps, observed, curve)`` at the steps both have."""
    steps, idx_obs, idx_fit = np.intersect1d(observed[0], curve[0], return_indices=True)
    return steps, observed[1][idx_obs], curve[1][idx_fit]


def skill(fit: TheoryFit, observed: Mapping[str, Series]) -> dict[str, float]:
    """Skill numbers per fitted observable (module docstring), keyed ``"<observable>.<what>"``.

    ``what`` is ``r2`` (in-sample, on the observable's scale), ``skill_vs_power_law``
    (in-sample), ``ahead_skill_vs_persistence`` and ``ahead_skill_vs_power_law`` (one record
    ahead), and ``n`` (records compared).
    """
    out: dict[str, float] = {}
    for name, curve in fit.curves.fitted.items():
        if name not in observed:
            continue
        steps, obs, fitted = _matched(observed[name], curve)
        if steps.size < 2:
            continue
        scale = observable_scale(fit, name, obs)
        y, f = _transform(obs, scale), _transform(fitted, scale)
        ok = np.isfinite(y)
        sse = float(np.sum((y - f)[ok] ** 2)) if np.all(np.isfinite(f[ok])) else math.inf
        tot = float(np.sum((y[ok] - y[ok].mean()) ** 2))
        out[f"{name}.n"] = float(steps.size)
        out[f"{name}.r2"] = 1.0 - sse / tot if tot > 0 else math.nan
        law = power_law_in_time(steps, obs)
        g = _transform(law, scale) if law is not None else None
        if g is not None:
            out[f"{name}.skill_vs_power_law"] = _skill(sse, float(np.sum((y - g)[ok] ** 2)))
        ahead = _ahead(fit, name, observed[name], steps, y, f, scale)
        if ahead is not None:
            target, pred = ahead
            err = float(np.sum((target[1:] - pred) ** 2)) if np.all(np.isfinite(pred)) else math.inf
            persist = float(np.sum(np.diff(target) ** 2))
            out[f"{name}.ahead_skill_vs_persistence"] = _skill(err, persist)
            law_at = _law_at(observed[name], steps, target.size)
            if law_at is not None:
                law_pred = target[:-1] + np.diff(_transform(law_at, scale))
                out[f"{name}.ahead_skill_vs_power_law"] = _skill(
                    err, float(np.sum((target[1:] - law_pred) ** 2))
                )
    return out


def _law_at(
    observed: Series, steps: NDArray[np.float64], n_target: int
) -> NDArray[np.float64] | None:
    """The power law in time fitted to the observed records from the one before ``steps[0]``
    (when the theory's predictions start one record late) to ``steps[-1]``, at those records;
    ``None`` when it cannot be fitted or does not line up with the ``n_target`` targets."""
    all_steps, values = observed
    first = int(np.searchsorted(all_steps, steps[0])) - (n_target - steps.size)
    last = int(np.searchsorted(all_steps, steps[-1])) + 1
    if first < 0 or last - first != n_target:
        return None
    return power_law_in_time(all_steps[first:last], values[first:last])


def _ahead(
    fit: TheoryFit,
    name: str,
    observed: Series,
    steps: NDArray[np.float64],
    y: NDArray[np.float64],
    f: NDArray[np.float64],
    scale: str,
) -> tuple[NDArray[np.float64], NDArray[np.float64]] | None:
    """``(target, pred)``: the observed values on the scale and the theory's one-record-ahead
    predictions of ``target[1:]``."""
    if name not in fit.curves.ahead:
        return y, y[:-1] + np.diff(f)
    a_steps, obs, pred = _matched(observed, fit.curves.ahead[name])
    keep = np.isin(observed[0], a_steps)
    before = np.flatnonzero(keep) - 1  # the record each prediction starts from
    if a_steps.size < 1 or np.any(before < 0):
        return None
    full = _transform(observed[1], scale)
    target = np.concatenate([[full[before[0]]], _transform(obs, scale)])
    # only consecutive records are one record ahead of each other
    if not np.all(np.diff(np.concatenate([[before[0]], np.flatnonzero(keep)])) == 1):
        return None
    return target, _transform(pred, scale)


def expected_notes(fit: TheoryFit) -> list[str]:
    """For each parameter with a value expected from the run's settings: whether it lies
    inside the fitted 95% interval (or, without an interval, the relative difference)."""
    notes = []
    for name, p in fit.params.items():
        if (want := p.expected) is None:
            continue
        got = p.value
        if p.interval is not None:
            low, high = p.interval
            where = "inside" if low <= want <= high else "outside"
            notes.append(
                f"{name} = {got:.3g} against {want:.3g} from the settings ({where} its 95% "
                f"interval {low:.3g} to {high:.3g})"
            )
        else:
            off = abs(got - want) / abs(want) if want != 0 else math.inf
            notes.append(f"{name} = {got:.3g} against {want:.3g} from the settings ({off:.0%} off)")
    return notes


@dataclass(frozen=True)
class Holdout:
    """The theory refitted at each origin of the out-of-sample test: ``folds`` holds
    ``(split, fit)``, the fit seeing only the records up to ``split``; ``reason`` says why
    there are none (one line)."""

    folds: tuple[tuple[float, TheoryFit], ...]
    reason: str = ""

    @property
    def split(self) -> float:
        """The earliest origin (NaN without folds)."""
        return self.folds[0][0] if self.folds else math.nan


def holdout_splits(
    steps: NDArray[np.float64], n_free: int, origins: Sequence[float] = HOLDOUT_ORIGINS
) -> list[float]:
    """The origins of the out-of-sample test: for each fraction of ``origins``, the last step
    of the first ``fraction * n`` records, kept when those are at least
    ``max(MIN_RECORDS, n_free + 2)`` and at least ``MIN_HELDOUT`` records come after."""
    s = np.unique(np.asarray(steps, dtype=np.float64))
    need = max(MIN_RECORDS, n_free + 2)
    out = []
    for fraction in origins:
        seen = min(int(math.floor(fraction * s.size)), s.size - MIN_HELDOUT)
        if seen >= need and float(s[seen - 1]) not in out:
            out.append(float(s[seen - 1]))
    return out


def _aicc(sse: list[float], counts: list[int], k: int) -> float:
    n = sum(counts)
    if n - k - 1 <= 0:
        return math.inf
    tiny = 1e-300  # an exact fit: the likelihood is bounded by the records' precision
    total = sum(c * math.log(max(e, tiny) / c) for e, c in zip(sse, counts, strict=True))
    return total + 2 * k + 2 * k * (k + 1) / (n - k - 1)


#: Residuals below this fraction of an observable's magnitude are rounding, not misfit: an
#: exact fit and a generic curve that is exact too (an exponential is a line in log) tie.
EXACT = 1e-9


def _sse(y: NDArray[np.float64], f: Any, floor: float = 0.0) -> float:
    """Sum of squares of ``y - f``, at least ``floor`` per term (``inf`` if not finite)."""
    with np.errstate(all="ignore"):
        r = np.asarray(y - f, np.float64)
        if not (r.size and np.all(np.isfinite(r))):
            return math.inf
        # a residual too large to square (a diverging extrapolation) is the worst score: inf
        return float(np.sum(np.maximum(r * r, floor)))


def _floor(y: NDArray[np.float64]) -> float:
    finite = np.abs(y[np.isfinite(y)])
    return (EXACT * max(1.0, float(finite.max()) if finite.size else 1.0)) ** 2


def _predict(fit: TheoryFit, name: str, at: NDArray[np.float64]) -> NDArray[np.float64]:
    return _predict_with(fit.curves.predict, name, at)


def _predict_with(
    predict: Callable[[NDArray[np.float64]], Mapping[str, Any]],
    name: str,
    at: NDArray[np.float64],
) -> NDArray[np.float64]:
    try:
        with np.errstate(all="ignore"):
            return np.asarray(predict(at)[name], dtype=np.float64)
    except Exception:  # a theory that cannot predict this far is scored as infinitely wrong
        return np.full(at.shape, np.nan)


@dataclass
class _Score:
    """Per alternative: in-sample SSE and record count per observable, held-out SSE ratios
    (theory over alternative) per observable."""

    n_params: int
    sse: list[float] = field(default_factory=list)
    counts: list[int] = field(default_factory=list)
    log_ratios: list[float] = field(default_factory=list)


def alternatives_scores(
    fit: TheoryFit, observed: Mapping[str, Series], holdout: Holdout | None
) -> dict[str, float]:
    """AICc of the theory and of each generic curve, and the held-out error ratio of the
    theory against each (module docstring), keyed ``aicc.theory``, ``aicc.<curve>`` and
    ``heldout_ratio.<curve>``; a curve that cannot be fitted to some observable is left out."""
    from .alternatives import PANEL

    names = [n for n in fit.curves.fitted if n in observed]
    theory_sse, counts = [], []
    rivals: dict[str, list[float]] = {}
    scores = {a.name: _Score(a.n_params) for a in PANEL}
    for name in names:
        scale, floor, sse, count = _score_in_sample(fit, name, observed[name], scores)
        theory_sse.append(sse)
        counts.append(count)
        if holdout is None or not holdout.folds:
            continue
        _score_held_out(name, observed[name], scale, floor, holdout, scores, rivals)
    return _scores_table(fit, names, theory_sse, counts, scores, rivals)


def _score_in_sample(
    fit: TheoryFit, name: str, series: Series, scores: dict[str, _Score]
) -> tuple[str, float, float, int]:
    """In-sample residuals of the theory and of every generic curve on one observable: the
    curves' SSE and counts are appended to ``scores``; returns the observable's scale, its
    residual floor, and the theory's SSE and record count."""
    from .alternatives import PANEL, fit_alternatives, in_sample_residuals, innovations

    steps, obs, fitted = _matched(series, fit.curves.fitted[name])
    scale = observable_scale(fit, name, obs)
    y, f = _transform(obs, scale), _transform(fitted, scale)
    with np.errstate(all="ignore"):
        mine = innovations(np.asarray(y - f, np.float64))
    floor = _floor(y)
    theory_sse = _sse(mine, 0.0, floor)
    curves = fit_alternatives(steps, y, on_log=scale == "log")
    for alt in PANEL:
        curve = curves[alt.name]
        res = in_sample_residuals(alt, steps, y, curve) if curve is not None else None
        sse = _sse(res, 0.0, floor) if res is not None else math.nan
        scores[alt.name].sse.append(sse)
        scores[alt.name].counts.append(res.size if res is not None else 0)
    return scale, floor, theory_sse, int(mine.size)


def _score_held_out(
    name: str,
    series: Series,
    scale: str,
    floor: float,
    holdout: Holdout,
    scores: dict[str, _Score],
    rivals: dict[str, list[float]],
) -> None:
    """Held-out errors on one observable, summed over the folds: the log ratio of the
    theory's to each generic curve's is appended to ``scores``, to each rival's to
    ``rivals``."""
    from .alternatives import fit_alternatives

    theirs_total, alt_total = 0.0, dict.fromkeys(scores, 0.0)
    rival_total: dict[str, float] = {}
    all_steps, values = series
    y_all = _transform(values, scale)
    for split, early_fit in holdout.folds:
        later = all_steps > split
        if not np.any(later) or not np.any(~later):
            continue
        at, target = all_steps[later], y_all[later]
        theirs_total += _sse(target, _transform(_predict(early_fit, name, at), scale), floor)
        for key, rival in early_fit.curves.rivals.items():
            pred = _transform(_predict_with(rival, name, at), scale)
            rival_total[key] = rival_total.get(key, 0.0) + _sse(target, pred, floor)
        early = fit_alternatives(all_steps[~later], y_all[~later], on_log=scale == "log")
        for key, curve in early.items():
            alt_total[key] += _sse(target, curve(at), floor) if curve is not None else math.nan
    for key in scores:
        scores[key].log_ratios.append(_log_ratio(theirs_total, alt_total[key]))
    for key, total in rival_total.items():
        rivals.setdefault(key, []).append(_log_ratio(theirs_total, total))


def _scores_table(
    fit: TheoryFit,
    names: list[str],
    theory_sse: list[float],
    counts: list[int],
    scores: dict[str, _Score],
    rivals: dict[str, list[float]],
) -> dict[str, float]:
    """The keyed numbers of :func:`alternatives_scores` from the per-observable sums: an
    AICc or ratio only where every observable has a finite one."""
    from .alternatives import PANEL

    # every curve but the walk has one AR(1) coefficient per observable besides its own
    out = {"aicc.theory": _aicc(theory_sse, counts, max(fit.n_free, 0) + len(names))}
    walks = {a.name for a in PANEL if a.walk}
    for key, sc in scores.items():
        if len(sc.sse) == len(names) and not any(math.isnan(e) for e in sc.sse):
            k = (sc.n_params + (key not in walks)) * len(names)
            out[f"aicc.{key}"] = _aicc(sc.sse, sc.counts, k)
        if sc.log_ratios and len(sc.log_ratios) == len(names):
            if not any(math.isnan(r) for r in sc.log_ratios):
                out[f"heldout_ratio.{key}"] = math.exp(min(float(np.mean(sc.log_ratios)), 700.0))
    for key, logs in rivals.items():
        if len(logs) == len(names) and not any(math.isnan(r) for r in logs):
            out[f"rival_ratio.{key}"] = math.exp(min(float(np.mean(logs)), 700.0))
    return out


def panel_size(fit: TheoryFit, n_params: int) -> int:
    """The parameters a generic curve of ``n_params`` per observable is counted with against
    ``fit`` in rule 4: ``n_params`` times the fitted observables when the fit's parameters
    are shared by them (``Curves.shared_parameters``), else ``n_params``."""
    if fit.curves.shared_parameters:
        return n_params * max(len(fit.curves.fitted), 1)
    return n_params


def _log_ratio(theirs: float, alt: float) -> float:
    """``log(theirs / alt)``: NaN when the alternative has no prediction, 0 when both are
    exact, ``+inf`` when only the theory's prediction is not finite."""
    if math.isnan(alt):
        return math.nan
    if not math.isfinite(theirs):
        return math.inf if math.isfinite(alt) else 0.0
    if not math.isfinite(alt):
        return -math.inf
    if theirs == 0 and alt == 0:
        return 0.0
    if alt == 0:
        return math.inf
    if theirs == 0:
        return -math.inf
    return math.log(theirs / alt)


def judge(
    fit: TheoryFit,
    observed: Mapping[str, Series],
    *,
    n_records: int | None = None,
    holdout: Holdout | None = None,
) -> Verdict:
    """The verdict on ``fit`` against ``observed`` (module docstring, rules 1-5).

    ``holdout`` is the theory refitted at the origins of the out-of-sample test (see
    :func:`assess`, which builds it); without it the verdict is never ``holds``.
    """
    why = degeneracy(fit, n_records)
    if why is not None:
        return Verdict("degenerate", why)
    verdict = _judge(fit, observed, holdout)
    notes = expected_notes(fit) if verdict.verdict not in ("degenerate", "error") else []
    if notes:
        reason = f"{verdict.reason}; {'; '.join(notes)}"
        return Verdict(verdict.verdict, reason, verdict.window, verdict.skill)
    return verdict


def _judge(fit: TheoryFit, observed: Mapping[str, Series], holdout: Holdout | None) -> Verdict:
    numbers = skill(fit, observed)
    if not numbers:
        return Verdict("error", "no fitted observable matches a recorded one", skill=numbers)
    for name in fit.curves.fitted:
        r2 = numbers.get(f"{name}.r2", math.nan)
        if not r2 >= R2_MIN:
            return Verdict("fails", f"{name}: R² {r2:.4g} < {R2_MIN} on its scale", skill=numbers)
        vs_persist = numbers.get(f"{name}.ahead_skill_vs_persistence", math.nan)
        if not vs_persist > 0:
            return Verdict(
                "fails",
                f"{name}: one record ahead, no better than the last value carried forward "
                f"(skill {vs_persist:.3g})",
                skill=numbers,
            )
    numbers.update(alternatives_scores(fit, observed, holdout))
    worst = min(numbers[f"{n}.r2"] for n in fit.curves.fitted if f"{n}.r2" in numbers)
    return _against_alternatives(fit, numbers, holdout, worst)


def _refuted(fit: TheoryFit, name: str) -> bool:
    """Whether the value of ``name`` predicted from the settings lies outside its fitted 95%
    interval, widened by the relative error the theory allows itself (``expected_rtol``)."""
    p = fit.params[name]
    if p.interval is None or p.expected is None:
        return False
    want = p.expected
    slack = abs(p.expected_rtol * want)
    low, high = p.interval
    return not low - slack <= want <= high + slack


def _against_alternatives(
    fit: TheoryFit, numbers: dict[str, float], holdout: Holdout | None, worst: float
) -> Verdict:
    """Rules 3-5 of the module docstring, in order: a refuted prediction from the settings or
    a generic curve better both ways (``fails``), no held-out records (``degenerate``), a
    generic curve or a rival as good (``not distinguished``), else ``holds``."""
    failed = _refuted_by_settings(fit, numbers) or _beaten_both_ways(numbers)
    if failed is not None:
        return failed
    if holdout is None or not holdout.folds:
        why = holdout.reason if holdout is not None else "no records were held out"
        return Verdict("degenerate", f"cannot be tested out of sample: {why}", skill=numbers)
    held = f"after each of {len(holdout.folds)} origins from step {holdout.split:g}"
    tied = _curve_as_good(fit, numbers, held, worst) or _rival_as_good(numbers, held, worst)
    return tied if tied is not None else _holds(fit, numbers, held, worst)


def _refuted_by_settings(fit: TheoryFit, numbers: dict[str, float]) -> Verdict | None:
    """``fails`` when a parameter's value predicted from the run's settings lies outside its
    fitted interval."""
    refuted = [name for name in fit.params if _refuted(fit, name)]
    if not refuted:
        return None
    return Verdict(
        "fails",
        f"the value of {', '.join(refuted)} that the theory predicts from the run's settings "
        "lies outside the fitted 95% interval: the curve fits on a clock the settings do "
        "not give",
        skill=numbers,
    )


def _beaten_both_ways(numbers: dict[str, float]) -> Verdict | None:
    """``fails`` when a generic curve, of any size, wins by the AICc margin in-sample *and*
    predicts the held-out records better."""
    from .alternatives import PANEL

    mine = numbers["aicc.theory"]
    for alt in PANEL:
        aicc = numbers.get(f"aicc.{alt.name}", math.nan)
        ratio = numbers.get(f"heldout_ratio.{alt.name}", math.nan)
        if aicc < mine - AICC_MARGIN and ratio > 1:
            return Verdict(
                "fails",
                f"{alt.describe} ({alt.n_params} parameters per observable) explains these "
                f"records better in-sample (AICc {aicc:.4g} against {mine:.4g}) and on the "
                f"held-out records (error ratio {ratio:.3g})",
                skill=numbers,
            )
    return None


def _curve_as_good(
    fit: TheoryFit, numbers: dict[str, float], held: str, worst: float
) -> Verdict | None:
    """``not distinguished`` when a generic curve no bigger than the theory is not beaten on
    the held-out records or by the AICc margin (rule 4), or a bigger one wins in-sample with
    its parameters paid for (a fit with ``Curves.shared_parameters``)."""
    from .alternatives import PANEL

    mine = numbers["aicc.theory"]
    for alt in PANEL:
        size = panel_size(fit, alt.n_params)
        aicc = numbers.get(f"aicc.{alt.name}", math.nan)
        if size > fit.n_free:
            if fit.curves.shared_parameters and aicc < mine - AICC_MARGIN:
                return Verdict(
                    "not distinguished",
                    f"fits (R² ≥ {worst:.3f}), but {alt.describe} with {size} parameters "
                    f"({alt.n_params} per observable) explains these records better in-sample "
                    f"with its extra parameters paid for (AICc {aicc:.4g} against the theory's "
                    f"{mine:.4g}); these records cannot tell them apart",
                    skill=numbers,
                )
            continue
        ratio = numbers.get(f"heldout_ratio.{alt.name}", math.nan)
        if ratio >= 1 or aicc <= mine + AICC_MARGIN:
            how = (
                f"held-out error ratio {ratio:.3g} on the records {held}"
                if ratio >= 1
                else f"in-sample AICc {aicc:.4g} against the theory's {mine:.4g}"
            )
            return Verdict(
                "not distinguished",
                f"fits (R² ≥ {worst:.3f}), but so does {alt.describe} with {alt.n_params} "
                f"parameter{'s' if alt.n_params > 1 else ''} ({how}); these records cannot "
                "tell them apart",
                skill=numbers,
            )
    return None


def _rival_as_good(numbers: dict[str, float], held: str, worst: float) -> Verdict | None:
    """``not distinguished`` when one of the theory's own rivals predicts the held-out records
    as well as the theory."""
    for key in sorted(k[len("rival_ratio.") :] for k in numbers if k.startswith("rival_ratio.")):
        ratio = numbers[f"rival_ratio.{key}"]
        if ratio >= 1:
            return Verdict(
                "not distinguished",
                f"fits (R² ≥ {worst:.3f}), but {key} predicts the records {held} as well "
                f"(error ratio {ratio:.3g}): what only the theory predicts is not borne out",
                skill=numbers,
            )
    return None


def _holds(fit: TheoryFit, numbers: dict[str, float], held: str, worst: float) -> Verdict:
    """``holds``, saying which generic curves the theory out-predicted and by how much."""
    from .alternatives import PANEL

    rivals = [a.name for a in PANEL if panel_size(fit, a.n_params) <= fit.n_free]
    ratios = [numbers[f"heldout_ratio.{r}"] for r in rivals if f"heldout_ratio.{r}" in numbers]
    curves = "generic curve" if len(ratios) == 1 else "generic curves"
    beaten = f"; predicts the records {held} better than {len(ratios)} {curves} with " + (
        f"≤ {fit.n_free} parameters (largest held-out error ratio {max(ratios):.3g})"
        if ratios
        else f"≤ {fit.n_free} parameters (none could be fitted)"
    )
    return Verdict(
        "holds",
        f"R² ≥ {worst:.3f} on every observable; beats persistence one record ahead{beaten}",
        skill=numbers,
    )


def assess(
    fit_stream: Callable[[Stream], TheoryFit],
    stream: Stream,
    observed: Mapping[str, Series],
    fit: TheoryFit,
    *,
    n_records: int | None = None,
    plan_steps: NDArray[np.float64] | None = None,
    origins: Sequence[float] = HOLDOUT_ORIGINS,
) -> tuple[Verdict, Holdout]:
    """Judge ``fit`` (``fit_stream`` on ``stream``) with its out-of-sample test: the theory
    refitted on ``stream`` cut before its latest records at each of ``origins``
    (:func:`holdout_splits` over ``plan_steps``, by default the first fitted observable's
    steps; a window uses :data:`WINDOW_ORIGINS`)."""
    steps = plan_steps
    if steps is None:
        steps = next((observed[n][0] for n in fit.curves.fitted if n in observed), np.empty(0))
    splits = holdout_splits(np.asarray(steps, np.float64), fit.n_free, origins)
    if not splits:
        need = max(MIN_RECORDS, fit.n_free + 2) + MIN_HELDOUT
        holdout = Holdout((), f"{np.unique(steps).size} records; need at least {need}")
    else:
        holdout = _refit(fit_stream, stream, splits)
    return judge(fit, observed, n_records=n_records, holdout=holdout), holdout


def failed_fit_verdict(exc: BaseException) -> Verdict:
    """The verdict of a fit that raised: ``out of regime`` for
    :class:`~ncdynamics.theories.confrontation.NotApplicable`, ``degenerate`` for
    :class:`~ncdynamics.theories.confrontation.Undetermined`, else ``error``."""
    from .._reasons import one_line_reason

    if isinstance(exc, NotApplicable):
        return Verdict("out of regime", str(exc))
    if isinstance(exc, Undetermined):
        return Verdict("degenerate", one_line_reason(exc))
    return Verdict("error", one_line_reason(exc))


def _refit(
    fit_stream: Callable[[Stream], TheoryFit], stream: Stream, splits: list[float]
) -> Holdout:
    from .._reasons import one_line_reason

    folds, why = [], ""
    for split in splits:
        try:
            folds.append((split, fit_stream(stream.cut(split))))
        except Exception as exc:  # the earlier records alone do not determine the theory
            why = f"fitted to the records up to step {split:g}, {one_line_reason(exc)}"
    return Holdout(tuple(folds), "" if folds else why)
