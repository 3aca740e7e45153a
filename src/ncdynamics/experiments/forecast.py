"""Theory against run, as forecasts: fit each theory on the early records, score the rest.

:func:`forecast` fits each theory on the records of a stream up to several cut points
(origins, placed by :func:`~ncdynamics.experiments.forecast_scoring.place_origins`) and
scores what it predicts for every later record beside two naive baselines, the last value and
a power law (:mod:`ncdynamics.experiments.forecast_scoring`). Streams are found and checked
against the theory's regime as for :func:`ncdynamics.experiments.compare.compare`
(:mod:`ncdynamics.experiments.streams`); a stream out of regime as a whole is forecast inside
the window within the regime that ``compare`` judges it by (the regime's start, else the
longest), and gets that window's verdict.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import runs
from .._reasons import one_line_reason
from .._validation import check_scalar
from ..theories.confrontation import Confrontation, Series, Stream, TheoryFit
from ..theories.verdict import Verdict, assess, failed_fit_verdict, observable_scale
from . import streams
from .forecast_scoring import (
    last_value_baseline,
    place_origins,
    power_law_baseline,
    score_method,
)
from .streams import (
    ENTRY_STATUS,
    RegimeCheck,
    check_regime,
    find_streams,
    missing_reason,
    open_streams,
    out_of_regime_reasons,
)
from .windows import n_records_of, regime_windows

__all__ = [
    "DEFAULT_AT",
    "DEFAULT_CHANGE",
    "MIN_FORECAST_WINDOW",
    "MISS_REASONS",
    "NO_WIN_VERDICTS",
    "ForecastEntry",
    "Origin",
    "forecast",
    "forecast_table",
    "origin_miss",
    "power_law_extrapolation",
]


#: Default forecast origins: fractions of the step range, and of the total change.
DEFAULT_AT: tuple[float, ...] = (0.3, 0.5, 0.7)
DEFAULT_CHANGE: tuple[float, ...] = (0.25, 0.5, 0.75)


def power_law_extrapolation(steps: Any, values: Any, at: Any, *, origin: float) -> Any:
    """The power-law baseline (:func:`~ncdynamics.experiments.forecast_scoring
    .power_law_baseline`: ``|v| = c (step - origin + 1)^p`` fitted to the later half of the
    records' time span, each weighted by its share of time) evaluated at ``at``; NaN with
    fewer than 2 usable points."""
    at_ = np.asarray(at, dtype=np.float64)
    out = power_law_baseline(
        np.asarray(steps, np.float64), np.asarray(values, np.float64), origin=origin
    ).predict(at_)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class Origin:
    """One forecast origin: the fit on the records up to ``cut``, and its scores.

    ``scores`` has one row per observable and method (theory, last value, power law), see
    :func:`~ncdynamics.experiments.forecast_scoring.score_method`; the theory's rows also
    hold its skill against each baseline.
    """

    cut: float
    placed_by: str
    verdict: Verdict
    fit: TheoryFit | None = None
    scores: list[dict[str, Any]] = field(default_factory=list)


@dataclass(frozen=True)
class ForecastEntry:
    """One theory on one stream, forecast from each origin and scored on the records after.

    ``verdict`` is ``holds`` when the theory beats both baselines (lower RMSE on every
    observable, whole post-cut trajectory) at half of the origins or more, else ``fails``;
    or ``missing``, ``out of regime``, ``error`` as for
    :func:`~ncdynamics.experiments.compare.compare`.
    """

    theory: str
    stream: str
    verdict: Verdict
    message: str = ""
    final_step: float = math.nan
    observed: dict[str, Series] = field(default_factory=dict)
    origins: list[Origin] = field(default_factory=list)
    regime: list[RegimeCheck] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``"fitted"`` when an origin was fitted, else as
        :attr:`~ncdynamics.experiments.compare.CompareEntry.status`."""
        if self.fit is not None:
            return "fitted"
        return ENTRY_STATUS.get(self.verdict.verdict, "failed")

    @property
    def fit(self) -> TheoryFit | None:
        """The fit of the first origin that has one."""
        return next((o.fit for o in self.origins if o.fit is not None), None)

    @property
    def scores(self) -> list[dict[str, Any]]:
        """Every origin's score rows, each with its ``cut`` and ``placed_by``."""
        return [
            {"cut": o.cut, "placed_by": o.placed_by, **row}
            for o in self.origins
            for row in o.scores
        ]


def _score_origin(fit: TheoryFit, observed: dict[str, Series], cut: float) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for name, (steps, values) in observed.items():
        after = steps > cut
        if not after.any() or not (steps <= cut).any():
            continue
        seen_s, seen_v = steps[~after], values[~after]
        at, actual = steps[after], values[after]
        scale = observable_scale(fit, name, values)
        try:  # a prediction that overflows is scored as infinitely wrong, quietly
            with np.errstate(all="ignore"):
                pred = np.asarray(fit.curves.predict(at)[name], dtype=np.float64)
        except Exception:  # a theory that cannot predict this far is scored as missing
            pred = np.full(at.shape, np.nan)
        band = None
        if fit.curves.band is not None:
            try:
                with np.errstate(all="ignore"):
                    band = fit.curves.band(at).get(name)
            except Exception:
                band = None
        last = last_value_baseline(seen_s, seen_v, scale=scale)
        law = power_law_baseline(seen_s, seen_v, origin=float(steps[0]))
        theory_row = score_method(f"theory ({fit.theory})", pred, actual, band, scale=scale)
        base_rows = [
            score_method(b.name, b.predict(at), actual, b.band(at), scale=scale)
            for b in (last, law)
        ]
        for b in base_rows:
            key = "skill_vs_" + b["method"].replace(" ", "_")
            theory_row[key] = _skill(theory_row["rmse"], b["rmse"])
        for r in (theory_row, *base_rows):
            rows.append({"observable": name, "scale": scale, "n_after": int(at.size), **r})
    return rows


#: Origin verdicts whose forecasts are scored but never count as a win: the records before
#: the cut could not determine the fit, the fit raised, or the cut's records are outside the
#: theory's regime.
NO_WIN_VERDICTS: tuple[str, ...] = ("degenerate", "error", "out of regime")

#: Why a forecast origin is not a win (:func:`origin_miss`), each code with its meaning.
MISS_REASONS: dict[str, str] = {
    "degenerate": "the fit on the records up to the cut is degenerate",
    "error": "the fit on the records up to the cut raised",
    "out of regime": "the records up to the cut are outside the theory's regime",
    "not scored": "no observable has records both up to and after the cut",
    "behind last value": "on some observable the theory's error after the cut is not below "
    "the last value's",
    "behind power law": "on some observable the theory's error after the cut is not below "
    "the power law's",
    "behind both": "the theory's error after the cut is not below the last value's on some "
    "observable and not below the power law's on some observable",
}


def _skill(rmse: float, base: float) -> float:
    if not math.isfinite(rmse):
        return -math.inf
    if not math.isfinite(base):
        return math.nan
    if base == 0:
        return 0.0 if rmse == 0 else -math.inf
    return 1.0 - (rmse / base) ** 2


def origin_miss(origin: Origin) -> str | None:
    """Whether a forecast origin is a win, and if not, why.

    An origin is won when its fit is not in :data:`NO_WIN_VERDICTS` and the theory beats both
    baselines (positive skill against the last value and against the power law, i.e. a
    lower RMSE over the whole post-cut trajectory) on every scored observable. This is the
    rule behind the forecast verdict (:func:`forecast`) and behind the counts of
    benchmarks/real_runs.py.

    Parameters
    ----------
    origin : Origin
        One origin of a :class:`ForecastEntry`.

    Returns
    -------
    str or None
        ``None`` when the origin is won; otherwise a key of :data:`MISS_REASONS`: the fit's
        verdict (``"degenerate"``, ``"error"``, ``"out of regime"``) when it is one that never
        wins, else ``"not scored"`` when no observable was scored, else ``"behind last
        value"``, ``"behind power law"`` or ``"behind both"`` by which baselines the theory
        failed to beat (on any observable; a skill that is missing or NaN is not a beat).

    Examples
    --------
    >>> from ncdynamics.theories.verdict import Verdict
    >>> rows = [{"method": "theory (t)", "skill_vs_last_value": 0.4,
    ...          "skill_vs_power_law": -0.1}]
    >>> origin_miss(Origin(10.0, "at 0.5", Verdict("holds", ""), scores=rows))
    'behind power law'
    >>> origin_miss(Origin(10.0, "at 0.5", Verdict("degenerate", ""), scores=rows))
    'degenerate'
    """
    if origin.verdict.verdict in NO_WIN_VERDICTS:
        return origin.verdict.verdict
    theory = [r for r in origin.scores if r["method"].startswith("theory")]
    if not theory:
        return "not scored"
    behind_last = not all(r.get("skill_vs_last_value", -1) > 0 for r in theory)
    behind_law = not all(r.get("skill_vs_power_law", -1) > 0 for r in theory)
    if behind_last and behind_law:
        return "behind both"
    if behind_last:
        return "behind last value"
    if behind_law:
        return "behind power law"
    return None


def _forecast_entry(
    conf: Confrontation,
    stream: Stream,
    at: Sequence[float],
    change: Sequence[float],
    force: bool,
) -> ForecastEntry:
    label = stream.prefix or "(no prefix)"
    try:
        observed = conf.observe(stream)
    except Exception as exc:
        return ForecastEntry(conf.theory, label, Verdict("error", one_line_reason(exc)))
    if not observed:
        return ForecastEntry(conf.theory, label, Verdict("error", "no observable could be read"))
    regime = check_regime(conf, stream)
    reasons = out_of_regime_reasons(regime)
    final = max(float(s[-1]) for s, _ in observed.values() if s.size)
    if reasons and not force:
        return _forecast_inside_regime(
            conf, stream, label, at, change, reasons, observed, final, regime
        )
    first_name = next(iter(observed))
    steps, values = observed[first_name]
    scale = "log" if values.size and bool(np.all(values > 0)) else "linear"
    cuts = place_origins(steps, values, scale=scale, at=at, change=change)
    origins = _forecast_origins(conf, stream, observed, cuts)
    v = _origins_verdict(origins, int(steps.size))
    if reasons:
        v = Verdict("out of regime", f"{'; '.join(reasons)}; forecast anyway: {v.reason}")
    notes = "; ".join(n for o in origins if o.fit is not None for n in o.fit.shown.notes)
    return ForecastEntry(conf.theory, label, v, notes, final, observed, origins, regime)


def _forecast_inside_regime(
    conf: Confrontation,
    stream: Stream,
    label: str,
    at: Sequence[float],
    change: Sequence[float],
    reasons: list[str],
    observed: dict[str, Series],
    final: float,
    regime: list[RegimeCheck],
) -> ForecastEntry:
    """Forecast an out-of-regime stream from its longest window inside the regime, if any."""
    why = "; ".join(reasons) + " (not forecast; --force does it anyway)"
    steps0 = next(s for s, _ in observed.values() if s.size)
    inside = regime_windows(conf, stream, steps0, MIN_FORECAST_WINDOW)
    if not inside:
        return ForecastEntry(
            conf.theory, label, Verdict("out of regime", why), "", final, observed, [], regime
        )
    # the window compare judges such a stream by: the regime's start, else the longest
    since, until = inside[0]
    entry = _forecast_entry(conf, stream.window(since, until), at, change, force=False)
    return _in_window(entry, since, until, why, observed, final, regime)


def _forecast_origins(
    conf: Confrontation,
    stream: Stream,
    observed: dict[str, Series],
    cuts: list[tuple[float, str]],
) -> list[Origin]:
    """Fit the theory on the records up to each cut and score its prediction of the rest."""
    origins = []
    for cut, how in cuts:
        part = stream.cut(cut)
        seen = {n: (s[s <= cut], v[s <= cut]) for n, (s, v) in observed.items()}
        try:
            fit = conf.fit(part)
        except Exception as exc:
            origins.append(Origin(cut, how, failed_fit_verdict(exc)))
            continue
        verdict, _ = assess(conf.fit, part, seen, fit, n_records=n_records_of(fit, seen))
        origins.append(Origin(cut, how, verdict, fit, _score_origin(fit, observed, cut)))
    return origins


def _origins_verdict(origins: list[Origin], n_steps: int) -> Verdict:
    """The forecast verdict: holds when the theory wins at half the scored origins or more."""
    scored = [o for o in origins if o.scores]
    if not origins:
        return Verdict("error", f"no cut leaves enough records before and after it ({n_steps})")
    if not scored:
        first = origins[0].verdict
        return Verdict(first.verdict, f"no origin could be fitted: {first.reason}")
    # an origin whose fit the records could not determine is never a win
    wins = sum(origin_miss(o) is None for o in scored)
    return Verdict(
        "holds" if 2 * wins >= len(scored) else "fails",
        f"beats both baselines on every observable at {wins} of {len(scored)} origins "
        "(RMSE over the whole post-cut trajectory)",
    )


#: Fewest records a window inside the regime needs to be forecast from several origins.
MIN_FORECAST_WINDOW = 10


def _in_window(
    entry: ForecastEntry,
    since: float,
    until: float,
    why: str,
    observed: dict[str, Series],
    final: float,
    regime: list[RegimeCheck],
) -> ForecastEntry:
    """A forecast made inside the window ``[since, until]`` of a stream out of regime as a
    whole, reported on the whole stream with the window named: ``holds in a window`` where it
    holds, and the window's ``fails`` or ``degenerate`` where it was tested and did not hold
    (as :func:`~ncdynamics.experiments.compare.compare` does); ``out of regime`` only when
    nothing inside could be forecast."""
    v = entry.verdict
    where = f"on steps {since:g} to {until:g}, inside the regime"
    span = (since, until)
    if v.verdict == "holds":
        v = Verdict("holds in a window", f"{where}: {v.reason}; the whole stream: {why}", span)
    elif v.verdict in ("fails", "degenerate"):
        v = Verdict(
            v.verdict,
            f"{v.verdict} {where}: {v.reason}; the whole stream is out of regime: {why}",
            span,
        )
    else:
        v = Verdict("out of regime", f"{why}; forecast {where}: {v.verdict}, {v.reason}")
    return ForecastEntry(
        entry.theory, entry.stream, v, entry.message, final, observed, entry.origins, regime
    )


def _fractions(values: float | Sequence[float], name: str) -> tuple[float, ...]:
    seq = [values] if isinstance(values, (int, float)) else list(values)
    return tuple(check_scalar(float(v), name, low=0.0, high=1.0, closed="neither") for v in seq)


def forecast(
    run: runs.Run | str | os.PathLike[str],
    at: float | Sequence[float] = DEFAULT_AT,
    *,
    change: Sequence[float] = DEFAULT_CHANGE,
    force: bool = False,
) -> list[ForecastEntry]:
    """Fit each applicable theory at several origins of each stream and score what it
    predicts for every later record, beside the baselines (module docstring).

    Parameters
    ----------
    run : Run or path
    at : float or sequence of floats in (0, 1), default=(0.3, 0.5, 0.7)
        Origins at these fractions of the stream's step range.
    change : sequence of floats in (0, 1), default=(0.25, 0.5, 0.75)
        Origins where the stream's first observable has made this fraction of its total
        change (on its scale); ``()`` for none.
    force : bool, default=False
        Forecast streams outside a theory's regime too.
    """
    at_ = _fractions(at, "at")
    change_ = _fractions(change, "change")
    run, wide = open_streams(run)  # read once, shared by every stream and origin
    entries = []
    for conf in streams.confrontations():  # looked up here, so a test may replace it
        prefixes = find_streams(conf, run, list(wide.columns))
        if not prefixes:
            why = missing_reason(conf, run)
            entries.append(ForecastEntry(conf.theory, "", Verdict("missing", why), why))
        for p in prefixes:
            stream = Stream(run, p, wide=wide)
            entries.append(_forecast_entry(conf, stream, at_, change_, force))
    return entries


def forecast_table(entries: list[ForecastEntry]) -> pd.DataFrame:
    """One row per (theory, stream, origin, observable, method); an entry or an origin
    without scores gets one row with its verdict and reason."""
    rows = []
    for e in entries:
        base = {
            "theory": e.theory,
            "stream": e.stream,
            "verdict": e.verdict.verdict,
            "status": e.status,
            "final_step": e.final_step,
        }
        if not e.origins:
            rows.append({**base, "reason": e.verdict.reason, "message": e.message})
        for o in e.origins:
            head = {**base, "cutoff": o.cut, "placed_by": o.placed_by}
            head["fit_verdict"] = o.verdict.verdict
            if not o.scores:
                rows.append({**head, "reason": o.verdict.reason})
            rows.extend({**head, **s} for s in o.scores)
    return pd.DataFrame(rows)
