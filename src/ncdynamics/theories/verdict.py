"""The verdict on one theory fitted to one stream: the rules, in one place.

A verdict is one of :data:`VERDICTS`, with a one-line reason. This module decides the three
that depend on the fit alone, in this order:

1. ``degenerate`` (:func:`degeneracy`): a parameter or its interval is not finite, a
   parameter sits at a bound of its search (the data wanted it further), a parameter the
   theory requires to have a sign has the other one (unphysical), or its 95% interval holds
   zero (a rate indistinguishable from zero) or spans more than ``SPAN_MAX`` (a rate fitted in
   log that the records do not determine), or there are fewer than
   ``max(MIN_RECORDS, n_free + 2)`` records (too few to tell a fit from a coincidence: with
   four records, three one-record-ahead steps decide the skill).
2. ``fails`` (:func:`judge`): for some observable, the theory's curve explains less than
   ``R2_MIN`` of the variance on the observable's scale, or it predicts the next record worse
   than carrying the last one forward (persistence), or a power law in training time beats
   it both in-sample and one record ahead.
3. ``holds`` otherwise.

Where the theory predicts a parameter from the run's settings (``fit.expected``, e.g. the
Hadamard time scale ``c = 2 eta``), the reason of a ``holds`` or ``fails`` verdict also says
whether that value lies inside the fitted parameter's 95% interval (:func:`expected_notes`):
the parameter-free check is reported, not folded into the verdict, since a theory can
describe the shape of a run with a rescaled time.

The others come from the engine that runs the fits (``ncdynamics.experiments.confront``):
``missing`` (no stream has the records), ``out of regime`` (an
:class:`~ncdynamics.theories.confrontation.Assumption` fails), ``error`` (the fit raised) and
``holds in a window`` (the whole stream fails but a window of it holds).

Skill against a baseline is ``1 - SSE_theory / SSE_baseline`` on the observable's scale
(``log|v|`` for positive observables spanning decades, see :func:`observable_scale`): positive
when the theory is better. One record ahead, the theory predicts ``v[i+1]`` as ``v[i]`` plus its
own curve's increment from ``t[i]`` to ``t[i+1]`` (or its ``ahead`` predictions when it gives
them), persistence as ``v[i]``, and the power law as ``v[i]`` plus the power law's increment.
The power law ``|v| = c (t + 1)^p`` is fitted in training time ``t`` (steps from 0), not record
index, so it does not depend on how the records are spaced.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from .confrontation import Series, TheoryFit

__all__ = [
    "BOUND_TOL",
    "MIN_RECORDS",
    "R2_MIN",
    "SPAN_MAX",
    "VERDICTS",
    "Verdict",
    "degeneracy",
    "expected_notes",
    "judge",
    "observable_scale",
    "power_law_in_time",
    "skill",
]

VerdictName = Literal[
    "holds", "holds in a window", "fails", "degenerate", "out of regime", "missing", "error"
]
#: Every verdict, best first.
VERDICTS: tuple[VerdictName, ...] = (
    "holds",
    "holds in a window",
    "fails",
    "degenerate",
    "out of regime",
    "missing",
    "error",
)
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
    for name, value in fit.params.items():
        if not math.isfinite(value):
            return f"{name} = {value} is not finite"
    need = max(MIN_RECORDS, fit.n_free + 2)
    if n_records is not None and n_records < need:
        return f"{n_records} records for {fit.n_free} free parameters (need at least {need})"
    for name, (low, high) in fit.bounds.items():
        value = fit.params[name]
        for bound, side in ((low, "lower"), (high, "upper")):
            if _at_bound(value, bound):
                return f"{name} = {value:.4g} is at the {side} bound {bound:.4g} of its search"
    for name, sign in fit.signs.items():
        value = fit.params[name]
        low, high = fit.intervals.get(name, (value, value))
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
    """``fit.scales[name]``, else ``"log"`` when every value is positive, else ``"linear"``."""
    if name in fit.scales:
        return fit.scales[name]
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
    for name, curve in fit.fitted.items():
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
    if name not in fit.ahead:
        return y, y[:-1] + np.diff(f)
    a_steps, obs, pred = _matched(observed, fit.ahead[name])
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
    for name, want in fit.expected.items():
        if name not in fit.params:
            continue
        got = fit.params[name]
        if name in fit.intervals:
            low, high = fit.intervals[name]
            where = "inside" if low <= want <= high else "outside"
            notes.append(
                f"{name} = {got:.3g} against {want:.3g} from the settings ({where} its 95% "
                f"interval {low:.3g} to {high:.3g})"
            )
        else:
            off = abs(got - want) / abs(want) if want != 0 else math.inf
            notes.append(f"{name} = {got:.3g} against {want:.3g} from the settings ({off:.0%} off)")
    return notes


def judge(
    fit: TheoryFit, observed: Mapping[str, Series], *, n_records: int | None = None
) -> Verdict:
    """``degenerate``, ``fails`` or ``holds`` for ``fit`` against ``observed`` (module
    docstring, rules 1-3)."""
    why = degeneracy(fit, n_records)
    if why is not None:
        return Verdict("degenerate", why)
    verdict = _judge_skill(fit, observed)
    notes = expected_notes(fit) if verdict.verdict in ("holds", "fails") else []
    if notes:
        reason = f"{verdict.reason}; {'; '.join(notes)}"
        return Verdict(verdict.verdict, reason, verdict.window, verdict.skill)
    return verdict


def _judge_skill(fit: TheoryFit, observed: Mapping[str, Series]) -> Verdict:
    numbers = skill(fit, observed)
    if not numbers:
        return Verdict("error", "no fitted observable matches a recorded one", skill=numbers)
    for name in fit.fitted:
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
        in_law = numbers.get(f"{name}.skill_vs_power_law", math.nan)
        ahead_law = numbers.get(f"{name}.ahead_skill_vs_power_law", math.nan)
        if in_law < 0 and ahead_law < 0:
            return Verdict(
                "fails",
                f"{name}: a power law in time does better in-sample (skill {in_law:.3g}) and "
                f"one record ahead (skill {ahead_law:.3g})",
                skill=numbers,
            )
    worst = min(numbers[f"{n}.r2"] for n in fit.fitted if f"{n}.r2" in numbers)
    return Verdict(
        "holds",
        f"R² ≥ {worst:.3f} on every observable; beats persistence one record ahead",
        skill=numbers,
    )
