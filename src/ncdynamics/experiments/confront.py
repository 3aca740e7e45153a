"""Theory against run: fit every applicable theory to a recorded run, judge it, forecast it.

Each theory declares what it needs from a run and the regime it assumes
(:class:`ncdynamics.theories.Confrontation`, named by its
:class:`~ncdynamics.theories.Theory` declaration); this module gets those declarations from
the theory registry, finds the streams of a run that carry what each needs, and

- :func:`compare` checks each stream against the theory's assumptions, fits the theory to
  the whole stream and to a handful of windows of it (:mod:`ncdynamics.experiments.windows`),
  and gives a verdict per theory and stream (:class:`~ncdynamics.theories.verdict.Verdict`);
- :func:`forecast` fits each theory on the records up to several cut points (origins), and
  scores what it predicts for every later record beside two naive baselines
  (:mod:`ncdynamics.experiments.forecast_scoring`).

The verdicts, in the order they are decided:

``missing``
    No stream of the run has the records the theory needs (the entry names them).
``out of regime``
    An assumption of the theory fails on the stream (the reasons are listed), or its fit
    raised :class:`~ncdynamics.theories.confrontation.NotApplicable` (a structural
    requirement, such as a class count). Such a stream is not fitted unless ``force=True``;
    a forced fit keeps the verdict and adds the verdict the fit would have had to the reason.
``error``
    Reading or fitting the stream raised (first line of the message).
``degenerate``, ``fails``, ``holds``
    The fit to the whole stream, judged by :func:`ncdynamics.theories.verdict.judge`.
``holds in a window``
    The whole stream is ``fails`` or ``degenerate`` but the theory ``holds`` on one of the
    windows; the verdict names the longest such window (in steps) and keeps the whole
    stream's reason.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from .. import runs, theories
from .._reasons import one_line_reason
from .._validation import check_scalar
from ..runs._outputs import OUTPUT_FORMAT as OUTPUT_FORMAT
from ..runs._outputs import check_output_dir as check_output_dir
from ..runs._outputs import write_output_marker as write_output_marker
from ..theories.confrontation import (
    Assumption,
    Confrontation,
    Series,
    Stream,
    TheoryFit,
)
from ..theories.verdict import Verdict, assess, failed_fit_verdict, observable_scale
from .forecast_scoring import decades_off as decades_off
from .forecast_scoring import (
    last_value_baseline,
    place_origins,
    power_law_baseline,
    score_method,
)
from .windows import WindowFit, best_window, fit_windows, n_records_of, regime_windows

__all__ = [
    "DEFAULT_AT",
    "DEFAULT_CHANGE",
    "OUTPUT_FORMAT",
    "CompareEntry",
    "ForecastEntry",
    "Origin",
    "check_output_dir",
    "compare",
    "compare_table",
    "confrontations",
    "decades_off",
    "find_streams",
    "forecast",
    "forecast_table",
    "power_law_extrapolation",
    "read_run",
    "write_output_marker",
]

#: Default forecast origins: fractions of the step range, and of the total change.
DEFAULT_AT: tuple[float, ...] = (0.3, 0.5, 0.7)
DEFAULT_CHANGE: tuple[float, ...] = (0.25, 0.5, 0.75)


def confrontations() -> list[Confrontation]:
    """Every theory's confrontation with recorded runs, by theory name."""
    found = [theories.get(n).load_confrontation() for n in theories.available()]
    return sorted((c for c in found if c is not None), key=lambda c: c.theory)


def theories_without_confrontation() -> list[str]:
    """Theories that declare no confrontation with network runs."""
    return [n for n in theories.available() if theories.get(n).confrontation is None]


def _prefixes(names: list[str], suffix: str) -> set[str]:
    out = set()
    for n in names:
        if n.endswith(suffix):
            p = n[: -len(suffix)]
            if p == "" or p.endswith(("/", ".")):
                out.add(p)
    return out


def _normal(prefix: str) -> str:
    """Array names spell a metric prefix with ``.`` for ``/`` (the run store's rule)."""
    return prefix.replace("/", ".")


def find_streams(
    conf: Confrontation, run: runs.Run, metric_names: list[str] | None = None
) -> list[str]:
    """Prefixes of ``run`` under which every record ``conf`` needs exists, sorted.

    A prefix is given in its metric spelling (``mse/``) where the run has metrics under it.
    ``metric_names`` saves reading them again when the caller has them.
    """
    if metric_names is None:
        metric_names = list(run.metrics["name"].unique())
    pools = {"scalar": metric_names, "array": run.array_names()}
    keys = set.intersection(
        *({_normal(p) for p in _prefixes(pools[n.kind], n.name)} for n in conf.needs)
    )
    spelled = {n[: i + 1] for n in metric_names for i, c in enumerate(n) if c == "/"}
    spelling = {_normal(p): p for p in spelled} | {"": ""}
    return sorted(spelling.get(k, k) for k in keys)


#: ``(assumption, reason)``: the reason the stream is outside it, ``None`` when inside or
#: not recorded.
RegimeCheck = tuple[Assumption, str | None]

_STATUS = {
    "missing": "missing",
    "out of regime": "not applicable",
    "error": "failed",
}


@dataclass(frozen=True)
class CompareEntry:
    """One theory on one stream: its verdict, its fit (when fitted), and the windows."""

    theory: str
    stream: str
    verdict: Verdict
    message: str = ""
    fit: TheoryFit | None = None
    observed: dict[str, Series] = field(default_factory=dict)
    regime: list[RegimeCheck] = field(default_factory=list)
    windows: list[WindowFit] = field(default_factory=list)
    forced: bool = False
    n_records: int = 0
    unrecorded: list[str] = field(default_factory=list)

    @property
    def status(self) -> str:
        """``"fitted"`` when the theory was fitted, else ``"missing"``, ``"not applicable"``
        (out of regime, not forced) or ``"failed"`` (the fit raised)."""
        if self.fit is not None:
            return "fitted"
        return _STATUS.get(self.verdict.verdict, "failed")

    def row(self) -> dict[str, Any]:
        """A flat table row: verdict, reason, parameters with intervals, goodness, skill."""
        row: dict[str, Any] = {
            "theory": self.theory,
            "stream": self.stream,
            "verdict": self.verdict.verdict,
            "reason": self.verdict.reason,
            "status": self.status,
            "forced": self.forced,
            "window_start": self.verdict.window[0] if self.verdict.window else math.nan,
            "window_end": self.verdict.window[1] if self.verdict.window else math.nan,
            "n_records": self.n_records,
            "message": self.message,
        }
        for a, reason in self.regime:
            row[f"regime.{a.name}"] = reason or (
                "not recorded" if a.name in self.unrecorded else ""
            )
        if self.fit is not None:
            fit = self.fit
            for k, v in fit.params.items():
                row[f"params.{k}"] = v
                if k in fit.intervals:
                    row[f"params.{k}.low"], row[f"params.{k}.high"] = fit.intervals[k]
                if k in fit.units:
                    row[f"params.{k}.unit"] = fit.units[k]
                if k in fit.expected:
                    row[f"params.{k}.expected"] = fit.expected[k]
            for group in ("goodness", "predictions"):
                for k, v in getattr(fit, group).items():
                    row[f"{group}.{k}"] = v
        for k, v in self.verdict.skill.items():
            row[f"skill.{k}"] = v
        return row


def read_run(path: str | os.PathLike[str]) -> runs.Run:
    """Open the run at ``path`` for reading, its JSON files checked first.

    ``status.json``, ``config.json`` and (when present) ``summary.json`` must each hold a
    JSON object; a file that is not valid JSON, or holds a list or a number, is a
    ``ValueError`` naming it, instead of a bare decoding error or an ``AttributeError``
    later on. Then :func:`ncdynamics.runs.open`.
    """
    p = Path(path)
    for name in ("status.json", "config.json", "summary.json"):
        f = p / name
        if not f.is_file():
            continue  # runs.open says which files a run directory needs
        try:
            value = json.loads(f.read_text())
        except ValueError as exc:  # json.JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{str(f)!r} is not valid JSON: {exc}.") from exc
        if not isinstance(value, dict):
            raise ValueError(f"{str(f)!r} must hold a JSON object; got {type(value).__name__}.")
    return runs.open(p)


def _open(run: runs.Run | str | os.PathLike[str]) -> runs.Run:
    return run if isinstance(run, runs.Run) else read_run(run)


class _ReadOnce:
    """A run whose arrays and config are read from disk once.

    ``compare`` fits every theory to a stream and to each of its windows, and every fit
    reads the stream's arrays (one ``.npy`` file per record) and settings again; this
    wrapper keeps what was read. Everything else is the run's own.
    """

    def __init__(self, run: runs.Run) -> None:
        self._run = run
        self._arrays: dict[str, dict[int, Any]] = {}
        self._config: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)

    def arrays(self, name: str) -> dict[int, Any]:
        if name not in self._arrays:
            self._arrays[name] = self._run.arrays(name)
        return self._arrays[name]

    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = self._run.config
        return self._config


def _streams_of(run: runs.Run) -> tuple[runs.Run, pd.DataFrame]:
    """The run wrapped by :class:`_ReadOnce` (typed as a run) and its wide metrics."""
    return cast("runs.Run", _ReadOnce(run)), run.metrics_wide()


def check_regime(conf: Confrontation, stream: Stream) -> list[RegimeCheck]:
    """Each assumption of ``conf`` with the reason ``stream`` is outside it (or ``None``).

    A check that raises is reported as the reason, prefixed ``could not check``, and does
    not put the stream out of regime (see :func:`out_of_regime_reasons`).
    """
    out: list[RegimeCheck] = []
    for a in conf.assumptions:
        try:
            out.append((a, a.check(stream)))
        except Exception as exc:  # a broken check must not hide the fit
            out.append((a, f"could not check: {one_line_reason(exc)}"))
    return out


def unrecorded_settings(
    conf: Confrontation, stream: Stream, regime: Iterable[RegimeCheck]
) -> list[str]:
    """Names of the assumptions that passed only because the run records none of the
    settings they read (:meth:`Assumption.unrecorded`): not checked, not inside."""
    return [a.name for a, reason in regime if reason is None and a.unrecorded(stream)]


def not_recorded_note(conf: Confrontation, names: Sequence[str]) -> str:
    """One line: which assumptions could not be checked, which settings they read, and how
    to record them."""
    keys = sorted({k for a in conf.assumptions if a.name in names for k in a.settings})
    return (
        f"regime not checked for {', '.join(names)}: the run records none of "
        f"{', '.join(keys)} (record them with Recorder(..., optimizer=opt, loss=...) or in "
        "the run's config)"
    )


def out_of_regime_reasons(regime: Iterable[RegimeCheck]) -> list[str]:
    """The reasons of the failed assumptions (checks that could not run excluded)."""
    return [r for _, r in regime if r and not r.startswith("could not check")]


def _fit_entry(
    conf: Confrontation, stream: Stream, *, force: bool = False, windows: bool = True
) -> CompareEntry:
    label = stream.prefix or "(no prefix)"
    try:
        observed = conf.observe(stream)
    except Exception as exc:
        return CompareEntry(conf.theory, label, Verdict("error", one_line_reason(exc)))
    regime = check_regime(conf, stream)
    reasons = out_of_regime_reasons(regime)
    unrecorded = unrecorded_settings(conf, stream, regime)
    if reasons and not force:
        why = "; ".join(reasons) + " (not fitted; --force fits it anyway)"
        inside = _regime_windows(conf, stream, observed) if windows else []
        best = best_window(inside)
        verdict = Verdict("out of regime", why)
        if best is not None:  # e.g. a constant-rate theory between two learning-rate drops
            verdict = Verdict(
                "holds in a window",
                f"holds on steps {best.since:g} to {best.until:g} ({best.n_records} records; "
                f"{_tried(inside)}), inside its regime; the whole stream is out of regime: "
                f"{why}",
                (best.since, best.until),
            )
        return CompareEntry(
            conf.theory,
            label,
            verdict,
            observed=observed,
            regime=regime,
            windows=inside,
            unrecorded=unrecorded,
        )
    try:
        fit = conf.fit(stream)
    except Exception as exc:  # one theory failing on one stream must not stop the others
        return CompareEntry(
            conf.theory, label, failed_fit_verdict(exc), observed=observed, regime=regime
        )
    n = n_records_of(fit, observed)
    verdict, _ = assess(conf.fit, stream, observed, fit, n_records=n)
    found: list[WindowFit] = []
    if windows and verdict.verdict not in ("error",):
        plan = _plan_steps(fit, observed)
        found = fit_windows(conf, stream, observed, n_free=fit.n_free, plan_steps=plan)
    verdict = _with_windows(verdict, found)
    if unrecorded:
        verdict = Verdict(
            verdict.verdict,
            f"{verdict.reason}; {not_recorded_note(conf, unrecorded)}",
            verdict.window,
            verdict.skill,
        )
    if reasons:  # forced
        verdict = Verdict(
            "out of regime",
            f"{'; '.join(reasons)}; fitted anyway (--force): {verdict.verdict}, {verdict.reason}",
            verdict.window,
            verdict.skill,
        )
    return CompareEntry(
        conf.theory,
        label,
        verdict,
        "; ".join(fit.notes),
        fit,
        observed,
        regime,
        found,
        forced=bool(reasons),
        n_records=n,
        unrecorded=unrecorded,
    )


#: Free parameters assumed when placing the windows of a stream that was not fitted.
_WINDOW_FREE_GUESS = 2


def _regime_windows(
    conf: Confrontation, stream: Stream, observed: dict[str, Series]
) -> list[WindowFit]:
    """Windows of an out-of-regime stream, each checked against the regime and fitted where
    it is inside (:func:`~ncdynamics.experiments.windows.fit_windows`)."""
    steps = next((s for s, _ in observed.values() if s.size), None)
    if steps is None:
        return []
    return fit_windows(conf, stream, observed, n_free=_WINDOW_FREE_GUESS, plan_steps=steps)


def _plan_steps(fit: TheoryFit, observed: dict[str, Series]) -> Any:
    """The record steps the windows are placed on: those of the first fitted observable."""
    for name in fit.fitted:
        if name in observed:
            return observed[name][0]
    return next(iter(observed.values()))[0] if observed else np.empty(0)


def _tried(windows: list[WindowFit]) -> str:
    held = sum(w.verdict.verdict == "holds" for w in windows)
    return (
        f"{held} of {len(windows)} windows tried hold, each confirmed on records its fits "
        "did not see"
    )


def _with_windows(verdict: Verdict, found: list[WindowFit]) -> Verdict:
    if verdict.verdict not in ("fails", "degenerate", "not distinguished"):
        return verdict
    best = best_window(found)
    if best is None:
        return verdict
    return Verdict(
        "holds in a window",
        f"holds on steps {best.since:g} to {best.until:g} ({best.n_records} records; "
        f"{_tried(found)}); on the whole stream {verdict.verdict}: {verdict.reason}",
        (best.since, best.until),
        verdict.skill,
    )


def _missing_entry(conf: Confrontation, run: runs.Run | None = None) -> CompareEntry:
    needs = ", ".join(n.describe() for n in conf.needs)
    why = f"needs {needs}"
    note = _not_recorded(run, conf.theory) if run is not None else None
    if note:
        why = f"{why}; the run says why not: {note}"
    return CompareEntry(conf.theory, "", Verdict("missing", why), why)


def _not_recorded(run: runs.Run, theory: str) -> str | None:
    """``config["not_recorded"][theory]``: an experiment's own line on why it does not
    record what a theory needs (the demo's, for ``ntk_collapse``)."""
    if not (run.path / "config.json").is_file():
        return None
    notes = run.config.get("not_recorded")
    if isinstance(notes, dict) and isinstance(notes.get(theory), str):
        return str(notes[theory])
    return None


def compare(
    run: runs.Run | str | os.PathLike[str], *, force: bool = False, windows: bool = True
) -> list[CompareEntry]:
    """Fit every theory whose needs ``run`` recorded, on each stream that has them, and
    judge each fit (module docstring).

    Parameters
    ----------
    run : Run or path
    force : bool, default=False
        Fit streams outside a theory's regime too (their verdict stays ``out of regime``).
    windows : bool, default=True
        Also fit the windows of :mod:`ncdynamics.experiments.windows` (the figure of
        parameters against training time, and the verdict ``holds in a window``).

    Returns
    -------
    list of CompareEntry
        One per theory and stream; a theory with no stream gets one ``missing`` entry.
    """
    run, wide = _streams_of(_open(run))  # read once, shared by every stream and window
    entries = []
    for conf in confrontations():
        prefixes = find_streams(conf, run, list(wide.columns))
        if not prefixes:
            entries.append(_missing_entry(conf, run))
        for p in prefixes:
            stream = Stream(run, p, wide=wide)
            entries.append(_fit_entry(conf, stream, force=force, windows=windows))
    return entries


# ---------------------------------------------------------------------------- forecast
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
    or ``missing``, ``out of regime``, ``error`` as for :func:`compare`.
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
        """``"fitted"`` when an origin was fitted, else as :attr:`CompareEntry.status`."""
        if self.fit is not None:
            return "fitted"
        return _STATUS.get(self.verdict.verdict, "failed")

    @property
    def fit(self) -> TheoryFit | None:
        """The fit of the first origin that has one."""
        return next((o.fit for o in self.origins if o.fit is not None), None)

    @property
    def cutoff(self) -> float:
        """The first origin's cut (NaN without origins)."""
        return self.origins[0].cut if self.origins else math.nan

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
                pred = np.asarray(fit.predict(at)[name], dtype=np.float64)
        except Exception:  # a theory that cannot predict this far is scored as missing
            pred = np.full(at.shape, np.nan)
        band = None
        if fit.band is not None:
            try:
                with np.errstate(all="ignore"):
                    band = fit.band(at).get(name)
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


#: Origin verdicts whose forecasts are scored but never count as a win.
_NO_WIN = ("degenerate", "error", "out of regime")


def _skill(rmse: float, base: float) -> float:
    if not math.isfinite(rmse):
        return -math.inf
    if not math.isfinite(base):
        return math.nan
    if base == 0:
        return 0.0 if rmse == 0 else -math.inf
    return 1.0 - (rmse / base) ** 2


def _beats(rows: list[dict[str, Any]]) -> bool:
    theory = [r for r in rows if r["method"].startswith("theory")]
    return bool(theory) and all(
        r.get("skill_vs_last_value", -1) > 0 and r.get("skill_vs_power_law", -1) > 0 for r in theory
    )


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
        why = "; ".join(reasons) + " (not forecast; --force does it anyway)"
        steps0 = next(s for s, _ in observed.values() if s.size)
        inside = regime_windows(conf, stream, steps0, MIN_FORECAST_WINDOW)
        if not inside:
            return ForecastEntry(
                conf.theory, label, Verdict("out of regime", why), "", final, observed, [], regime
            )
        # the longest window inside the regime, as compare's windows find it
        since, until = inside[0]
        entry = _forecast_entry(conf, stream.window(since, until), at, change, force)
        return _in_window(entry, since, until, why, observed, final, regime)
    first_name = next(iter(observed))
    steps, values = observed[first_name]
    scale = "log" if values.size and bool(np.all(values > 0)) else "linear"
    cuts = place_origins(steps, values, scale=scale, at=at, change=change)
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
    scored = [o for o in origins if o.scores]
    if not origins:
        v = Verdict("error", f"no cut leaves enough records before and after it ({steps.size})")
    elif not scored:
        first = origins[0].verdict
        v = Verdict(first.verdict, f"no origin could be fitted: {first.reason}")
    else:
        # an origin whose fit the records could not determine is never a win
        wins = sum(_beats(o.scores) and o.verdict.verdict not in _NO_WIN for o in scored)
        v = Verdict(
            "holds" if 2 * wins >= len(scored) else "fails",
            f"beats both baselines on every observable at {wins} of {len(scored)} origins "
            "(RMSE over the whole post-cut trajectory)",
        )
    if reasons:
        v = Verdict("out of regime", f"{'; '.join(reasons)}; forecast anyway: {v.reason}")
    notes = "; ".join(n for o in origins if o.fit is not None for n in o.fit.notes)
    return ForecastEntry(conf.theory, label, v, notes, final, observed, origins, regime)


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
    whole, reported on the whole stream: ``holds in a window`` where it holds."""
    v = entry.verdict
    where = f"on steps {since:g} to {until:g}, inside the regime"
    if v.verdict == "holds":
        v = Verdict("holds in a window", f"{where}: {v.reason}; the whole stream: {why}")
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
    run, wide = _streams_of(_open(run))  # read once, shared by every stream and origin
    entries = []
    for conf in confrontations():
        prefixes = find_streams(conf, run, list(wide.columns))
        if not prefixes:
            m = _missing_entry(conf, run)
            entries.append(ForecastEntry(m.theory, m.stream, m.verdict, m.message))
        for p in prefixes:
            stream = Stream(run, p, wide=wide)
            entries.append(_forecast_entry(conf, stream, at_, change_, force))
    return entries


def compare_table(entries: list[CompareEntry]) -> pd.DataFrame:
    """One row per entry (see :meth:`CompareEntry.row`)."""
    return pd.DataFrame([e.row() for e in entries])


def windows_table(entries: list[CompareEntry]) -> pd.DataFrame:
    """One row per window fitted: theory, stream, window, records, verdict, parameters."""
    rows = []
    for e in entries:
        for w in e.windows:
            row: dict[str, Any] = {
                "theory": e.theory,
                "stream": e.stream,
                "since": w.since,
                "until": w.until,
                "n_records": w.n_records,
                "verdict": w.verdict.verdict,
                "reason": w.verdict.reason,
            }
            for k, v in w.params.items():
                row[f"params.{k}"] = v
                if k in w.intervals:
                    row[f"params.{k}.low"], row[f"params.{k}.high"] = w.intervals[k]
            rows.append(row)
    return pd.DataFrame(rows)


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


def default_out(run_dir: str | os.PathLike[str], kind: str, at: float | None = None) -> Path:
    """``RUN_DIR/compare``, ``RUN_DIR/forecast`` or ``RUN_DIR/forecast-<at>``.

    Whatever the directory, it is replaced only when it holds this command's own output
    (:func:`check_output_dir`).
    """
    name = kind if at is None else f"{kind}-{at:g}"
    return Path(run_dir) / name
