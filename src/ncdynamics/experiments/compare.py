"""Theory against run: fit every applicable theory to a recorded run and judge each fit.

For every theory, on each stream of the run that carries what it needs
(:mod:`ncdynamics.experiments.streams`), :func:`compare` checks the stream against the
theory's assumptions, fits the theory to the whole stream and to a handful of windows of it
(:mod:`ncdynamics.experiments.windows`), and gives a verdict per theory and stream
(:class:`~ncdynamics.theories.verdict.Verdict`). :mod:`ncdynamics.experiments.forecast`
scores the same fits as forecasts.

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
    The whole stream is ``fails``, ``not distinguished`` or ``degenerate``, or out of regime
    as a whole, but the theory ``holds`` on one of the windows (one inside the regime, for a
    stream out of it); the verdict names the longest such window (in steps) and keeps the
    whole stream's reason.

A stream out of regime as a whole whose windows inside the regime were fitted and none held
gets the verdict of the window tested (``fails``, ``not distinguished`` or ``degenerate``,
with its window set): the window from the regime's start, else the longest inside. So
``out of regime`` means that nothing inside the regime could be fitted, never that a fit
inside it was tried and failed.
"""

from __future__ import annotations

import math
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from .. import runs
from .._reasons import one_line_reason
from ..theories.confrontation import Confrontation, Series, Stream, TheoryFit
from ..theories.verdict import Verdict, assess, failed_fit_verdict
from . import streams
from .streams import (
    ENTRY_STATUS,
    RegimeCheck,
    check_regime,
    find_streams,
    missing_reason,
    not_recorded_note,
    open_streams,
    out_of_regime_reasons,
    unrecorded_settings,
)
from .windows import (
    WindowFit,
    best_window,
    fit_windows,
    n_records_of,
    tested_first,
)

__all__ = [
    "CompareEntry",
    "chosen_confrontations",
    "compare",
    "compare_table",
    "windows_table",
]


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
    #: For a forced fit (``forced``), the verdict the fit got before its stream was put
    #: ``out of regime``: what the theory would say if its assumptions were not checked.
    forced_verdict: str = ""

    @property
    def status(self) -> str:
        """``"fitted"`` when the theory was fitted, ``"fitted in a window"`` when its stream is
        out of regime as a whole and the verdict is that of a window inside the regime, else
        ``"missing"``, ``"not applicable"`` (out of regime, not forced) or ``"failed"`` (the
        fit raised)."""
        if self.fit is not None:
            return "fitted"
        if self.verdict.window is not None:  # out of regime as a whole, judged on a window
            return "fitted in a window"
        return ENTRY_STATUS.get(self.verdict.verdict, "failed")

    def row(self) -> dict[str, Any]:
        """A flat table row: verdict, reason, parameters with intervals, goodness, skill."""
        row: dict[str, Any] = {
            "theory": self.theory,
            "stream": self.stream,
            "verdict": self.verdict.verdict,
            "reason": self.verdict.reason,
            "status": self.status,
            "forced": self.forced,
            **({"forced_verdict": self.forced_verdict} if self.forced else {}),
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
            for k, p in fit.params.items():
                row[f"params.{k}"] = p.value
                if p.interval is not None:
                    row[f"params.{k}.low"], row[f"params.{k}.high"] = p.interval
                if p.unit:
                    row[f"params.{k}.unit"] = p.unit
                if p.expected is not None:
                    row[f"params.{k}.expected"] = p.expected
            for group in ("goodness", "predictions"):
                for k, v in getattr(fit.shown, group).items():
                    row[f"{group}.{k}"] = v
        for k, v in self.verdict.skill.items():
            row[f"skill.{k}"] = v
        return row


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
        return CompareEntry(
            conf.theory,
            label,
            _inside_verdict(why, inside),
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
    forced_verdict = verdict.verdict if reasons else ""
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
        "; ".join(fit.shown.notes),
        fit,
        observed,
        regime,
        found,
        forced=bool(reasons),
        n_records=n,
        unrecorded=unrecorded,
        forced_verdict=forced_verdict,
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


#: Verdicts of a window that was fitted inside the regime and tested, short of ``holds``.
_TESTED = ("not distinguished", "fails", "degenerate")


def _inside_verdict(why: str, inside: list[WindowFit]) -> Verdict:
    """The verdict of a stream out of regime as a whole, from its windows inside the regime.

    ``holds in a window`` when one holds (e.g. a constant-rate theory between two
    learning-rate drops). When windows inside were fitted and none held, the verdict of the
    one tested is given, so that a tested failure is not hidden behind ``out of regime``:
    the first by :func:`~ncdynamics.experiments.windows.tested_first` (the window from the
    regime's start, the declared test of a regime that starts late, else the longest).
    ``out of regime`` only when no window inside could be fitted.
    """
    best = best_window(inside)
    if best is not None:
        return Verdict(
            "holds in a window",
            f"holds on steps {best.since:g} to {best.until:g} ({best.n_records} records; "
            f"{_tried(inside)}), inside its regime; the whole stream is out of regime: {why}",
            (best.since, best.until),
        )
    tested = [w for w in inside if w.verdict.verdict in _TESTED]
    if not tested:
        return Verdict("out of regime", why)
    start = next((w.span for w in inside if w.from_regime_start), None)
    span = tested_first([w.span for w in tested], start)[0]
    w = next(w for w in tested if w.span == span)
    return Verdict(
        w.verdict.verdict,
        f"{w.verdict.verdict} on steps {w.since:g} to {w.until:g}, inside its regime "
        f"({w.n_records} records; {_tried(inside)}): {w.verdict.reason}; the whole stream "
        f"is out of regime: {why}",
        (w.since, w.until),
        w.verdict.skill,
    )


def _plan_steps(fit: TheoryFit, observed: dict[str, Series]) -> Any:
    """The record steps the windows are placed on: those of the first fitted observable."""
    for name in fit.curves.fitted:
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


def _missing_entry(conf: Confrontation, run: runs.Run) -> CompareEntry:
    why = missing_reason(conf, run)
    return CompareEntry(conf.theory, "", Verdict("missing", why), why)


def compare(
    run: runs.Run | str | os.PathLike[str],
    *,
    force: bool = False,
    windows: bool = True,
    theories: Collection[str] | str | None = None,
) -> list[CompareEntry]:
    """Fit every theory whose needs ``run`` recorded, on each stream that has them, and
    judge each fit (module docstring).

    Parameters
    ----------
    run : Run or path
    force : bool, default=False
        Fit streams outside a theory's regime too (their verdict stays ``out of regime``;
        :attr:`CompareEntry.forced_verdict` is the one the fit got).
    windows : bool, default=True
        Also fit the windows of :mod:`ncdynamics.experiments.windows` (the figure of
        parameters against training time, and the verdict ``holds in a window``).
    theories : str or collection of str, optional
        Confront only this theory, or these (default: every registered one).

    Returns
    -------
    list of CompareEntry
        One per theory and stream; a theory with no stream gets one ``missing`` entry.
    """
    chosen = chosen_confrontations(theories)  # before reading: a bad name costs nothing
    run, wide = open_streams(run)  # read once, shared by every stream and window
    entries = []
    for conf in chosen:
        prefixes = find_streams(conf, run, list(wide.columns))
        if not prefixes:
            entries.append(_missing_entry(conf, run))
        for p in prefixes:
            stream = Stream(run, p, wide=wide)
            entries.append(_fit_entry(conf, stream, force=force, windows=windows))
    return entries


def chosen_confrontations(theories: Collection[str] | str | None = None) -> list[Confrontation]:
    """The confrontations named by ``theories`` (one name, or several), in the registry's
    order; every one when ``None``. An unknown name is refused in one line."""
    chosen = streams.confrontations()  # looked up here, so a test may replace it
    if theories is None:
        return chosen
    names = {theories} if isinstance(theories, str) else set(theories)
    known = [c.theory for c in chosen]
    unknown = sorted(names - set(known))
    if unknown:
        raise ValueError(f"`theories` must name confronted theories {known}; got {unknown}.")
    return [c for c in chosen if c.theory in names]


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
