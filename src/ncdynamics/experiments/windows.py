"""Where a theory holds: the theory refitted on windows of a stream's training time.

A fit to a whole stream can fail because the run leaves the theory's regime part way (the
margins saturate, the learning rate drops, the terminal phase starts late). Refitting the
theory on windows of training time shows where it holds: :func:`window_plan` places a
handful of windows, :func:`fit_windows` fits and judges each one with the same rules as the
whole stream (:func:`ncdynamics.theories.verdict.judge`).

The plan is fixed, so that ``ncdyn compare`` stays fast (every window is one more fit) and
the same run always gives the same windows. With ``t0`` and ``t1`` the first and last record
of the stream, the windows are, in fractions of ``t1 - t0``:

- four octaves that tile the run and slide in log-time, ``[0, 1/8]``, ``[1/8, 1/4]``,
  ``[1/4, 1/2]`` and ``[1/2, 1]``: training dynamics change fastest early, so the early
  windows are short (a transient over in the first tenth of the run gets a window of its
  own) and the late ones long (the terminal phase);
- the first half, ``[0, 1/2]``, only when fewer than three octaves hold enough records (a
  short run, whose early octaves are too small to judge);
- each stretch of records at one recorded learning rate (the stream's ``lr`` metric), when
  the rate changes: a theory that assumes a constant rate can hold between two drops;
- from the regime's start to the end: the first record from which every assumption of the
  theory holds over the rest of the stream (:func:`regime_start`), when that is not the first
  record (a theory whose regime starts late, e.g. once the logits reach the Hadamard subspace).

A window's verdict is reached by the same rules as the whole stream, including the
out-of-sample test at one origin (:func:`ncdynamics.theories.verdict.assess` with
``WINDOW_ORIGINS``): a window ``holds`` only when
the theory, refitted on the window's earlier records, predicts its later ones better than the
generic curves. So every window's ``holds`` is confirmed on records its fits did not see, and
the windows are not an uncorrected search for a lucky fit; the verdict ``holds in a window``
says how many windows were tried.

Every window is checked against the theory's regime on its own records (a window between two
learning-rate drops is inside a constant-rate assumption that the whole stream breaks) and is
fitted only when inside it.

Each window is snapped to the records inside it and kept only when it holds at least
``max(MIN_WINDOW_RECORDS, n_free + 3)`` records (``n_free`` the fit's free parameters), so
that its fit has residual degrees of freedom to judge it by; identical windows are kept once.
Windows are in training time, not record index, so a run recorded on a log-spaced schedule
gets early windows with many records and late ones with few (or none).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

import numpy as np
from numpy.typing import NDArray

from ..theories.confrontation import Confrontation, Series, Stream, TheoryFit
from ..theories.verdict import WINDOW_ORIGINS, Verdict, assess, failed_fit_verdict

__all__ = [
    "FALLBACK_FRACTION",
    "MIN_WINDOW_RECORDS",
    "WINDOW_FRACTIONS",
    "WindowFit",
    "best_window",
    "fit_windows",
    "lr_segments",
    "min_window_records",
    "n_records_of",
    "regime_start",
    "regime_windows",
    "span_of",
    "tested_first",
    "window_plan",
]

#: Fewest records a window may hold (and at least ``n_free + 3``).
MIN_WINDOW_RECORDS = 5
#: The windows, as ``(start, end)`` fractions of the stream's step range (module docstring).
WINDOW_FRACTIONS: tuple[tuple[float, float], ...] = (
    (0.0, 0.125),
    (0.125, 0.25),
    (0.25, 0.5),
    (0.5, 1.0),
)
#: The window used when fewer than three octaves qualify.
FALLBACK_FRACTION = (0.0, 0.5)


@dataclass(frozen=True)
class WindowFit:
    """The theory fitted to the records at steps ``[since, until]`` of a stream, judged."""

    since: float
    until: float
    n_records: int
    verdict: Verdict
    params: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: Whether this is the window from the regime's start (:func:`regime_start`).
    from_regime_start: bool = False

    @property
    def label(self) -> str:
        return f"steps {self.since:g} to {self.until:g}"

    @property
    def span(self) -> tuple[float, float]:
        """``(since, until)``."""
        return (self.since, self.until)


def min_window_records(n_free: int) -> int:
    """The fewest records a window of a fit with ``n_free`` free parameters may hold:
    ``max(MIN_WINDOW_RECORDS, n_free + 3)``, so that it keeps residual degrees of freedom."""
    return max(MIN_WINDOW_RECORDS, n_free + 3)


def window_plan(steps: NDArray[np.float64], min_records: int) -> list[tuple[float, float]]:
    """The windows ``(first step, last step)`` of :data:`WINDOW_FRACTIONS` over ``steps``
    that hold at least ``min_records`` records, snapped to records, sorted, each once."""
    s = np.unique(np.asarray(steps, dtype=np.float64))
    if s.size < min_records or s[-1] <= s[0]:
        return []
    t0, span = float(s[0]), float(s[-1] - s[0])

    def snapped(a: float, b: float) -> tuple[float, float] | None:
        # a small tolerance so that a record exactly on a boundary is in both windows
        lo, hi = t0 + a * span - 1e-9 * span, t0 + b * span + 1e-9 * span
        inside = s[(s >= lo) & (s <= hi)]
        if inside.size >= min_records and inside.size < s.size:
            return float(inside[0]), float(inside[-1])
        return None

    found = {w for a, b in WINDOW_FRACTIONS if (w := snapped(a, b)) is not None}
    if len(found) < 3 and (w := snapped(*FALLBACK_FRACTION)) is not None:
        found.add(w)
    return sorted(found)


def lr_segments(
    stream: Stream, steps: NDArray[np.float64], min_records: int
) -> list[tuple[float, float]]:
    """Stretches of ``steps`` over which the stream's recorded ``lr`` stays the same, as
    ``(first step, last step)``, each with at least ``min_records`` records; empty when the
    stream records no ``lr`` or it never changes."""
    try:
        lr_steps, lr = stream.scalar("lr")
    except KeyError:
        return []
    if lr.size < 2 or np.all(lr == lr[0]):
        return []
    s = np.unique(np.asarray(steps, dtype=np.float64))
    # the rate in force at each record: the last one logged at or before it
    at = np.searchsorted(lr_steps, s, side="right") - 1
    rate = np.where(at >= 0, lr[np.maximum(at, 0)], np.nan)
    out = []
    start = 0
    for i in range(1, s.size + 1):
        if i == s.size or rate[i] != rate[start]:
            if i - start >= min_records and np.isfinite(rate[start]):
                out.append((float(s[start]), float(s[i - 1])))
            start = i
    return out


def _restrict(observed: Mapping[str, Series], since: float, until: float) -> dict[str, Series]:
    out = {}
    for name, (steps, values) in observed.items():
        keep = (steps >= since) & (steps <= until)
        out[name] = (steps[keep], values[keep])
    return out


def fit_windows(
    conf: Confrontation,
    stream: Stream,
    observed: Mapping[str, Series],
    *,
    n_free: int,
    plan_steps: NDArray[np.float64],
) -> list[WindowFit]:
    """Fit ``conf`` on each window of :func:`window_plan` over ``plan_steps`` and judge it.

    Holding windows that overlap or touch are joined, and their union is fitted and judged
    too (so a theory that holds over the first quarter is not reported on one octave of it).
    A window whose fit raises gets the verdict ``error`` (or ``out of regime`` for
    :class:`~ncdynamics.theories.confrontation.NotApplicable`) with the first line of the
    message; the other windows are still fitted.
    """
    min_records = min_window_records(n_free)
    plan, start = _plan(conf, stream, plan_steps, min_records)
    out = [_fit_one(conf, stream, observed, since, until) for since, until in sorted(plan)]
    out = [replace(w, from_regime_start=True) if w.span == start else w for w in out]
    steps = np.unique(np.asarray(plan_steps, dtype=np.float64))
    done = {(w.since, w.until) for w in out}
    if steps.size:
        done.add((float(steps[0]), float(steps[-1])))  # the whole stream is fitted already
    for since, until in _merged_spans(out, steps):
        if (since, until) not in done:
            out.append(_fit_one(conf, stream, observed, since, until))
    return out


def regime_start(
    conf: Confrontation, stream: Stream, steps: NDArray[np.float64], min_records: int
) -> tuple[float, float] | None:
    """``(first, last)``: the window from the first record from which every assumption of
    ``conf`` holds over the rest of ``stream`` to its last record; ``None`` when that is the
    first record (the whole stream), or when no such window keeps ``min_records`` records."""
    s = np.unique(np.asarray(steps, dtype=np.float64))
    if not conf.assumptions or s.size <= min_records:
        return None
    for i in range(s.size - min_records + 1):
        try:
            outside = conf.out_of_regime(stream.window(float(s[i]), float(s[-1])))
        except Exception:  # a check that cannot run does not decide where the regime starts
            return None
        if not outside:
            return None if i == 0 else (float(s[i]), float(s[-1]))
    return None


def _plan(
    conf: Confrontation, stream: Stream, steps: NDArray[np.float64], min_records: int
) -> tuple[list[tuple[float, float]], tuple[float, float] | None]:
    """Every window of the module docstring: the octaves (:func:`window_plan`), the
    learning-rate stretches (:func:`lr_segments`) and the regime's start
    (:func:`regime_start`), each once; and the last of these (``None`` when the regime
    starts at the first record)."""
    plan = window_plan(steps, min_records)
    plan += [w for w in lr_segments(stream, steps, min_records) if w not in plan]
    start = regime_start(conf, stream, steps, min_records)
    if start is not None and start not in plan:
        plan.append(start)
    return plan, start


def tested_first(
    spans: Iterable[tuple[float, float]], start: tuple[float, float] | None
) -> list[tuple[float, float]]:
    """``spans`` in the order a stream out of regime as a whole is judged by them: the window
    from the regime's start (``start``, the declared test of a regime that starts late)
    first, then the longest in training time, the later one on a tie."""
    return sorted(spans, key=lambda w: (w == start, w[1] - w[0], w[1]), reverse=True)


def regime_windows(
    conf: Confrontation, stream: Stream, steps: NDArray[np.float64], min_records: int
) -> list[tuple[float, float]]:
    """The windows of the plan (:func:`window_plan`, the learning-rate stretches and the
    regime's start) that lie inside ``conf``'s regime, in the order of :func:`tested_first`
    (the regime's start, then the longest): where a stream that is out of regime as a whole
    can still be forecast."""
    inside = []
    plan, start = _plan(conf, stream, steps, min_records)
    for since, until in plan:
        try:
            outside = conf.out_of_regime(stream.window(since, until))
        except Exception:  # a check that cannot run does not decide
            continue
        if not outside:
            inside.append((since, until))
    return tested_first(inside, start)


def _fit_one(
    conf: Confrontation, stream: Stream, observed: Mapping[str, Series], since: float, until: float
) -> WindowFit:
    seen = _restrict(observed, since, until)
    n = min((s.size for s, _ in seen.values()), default=0)
    window = stream.window(since, until)
    try:
        outside = conf.out_of_regime(window)
    except Exception:  # a check that cannot run does not put a window out of regime
        outside = []
    if outside:
        return WindowFit(since, until, n, Verdict("out of regime", "; ".join(outside)))
    try:
        fit = conf.fit(window)
    except Exception as exc:  # one window failing must not stop the others
        return WindowFit(since, until, n, failed_fit_verdict(exc))
    n = n_records_of(fit, seen)
    verdict, _ = assess(conf.fit, window, seen, fit, n_records=n, origins=WINDOW_ORIGINS)
    return WindowFit(since, until, n, verdict, fit.values, fit.intervals)


def _merged_spans(
    windows: list[WindowFit], steps: NDArray[np.float64]
) -> list[tuple[float, float]]:
    """Spans of two or more holding windows that overlap or touch (no record between them),
    joined: the theory may hold over their union (which :func:`fit_windows` then fits and
    judges too)."""
    holding = sorted((w.since, w.until) for w in windows if w.verdict.verdict == "holds")
    spans: list[tuple[float, float, int]] = []
    for since, until in holding:
        between = np.any((steps > spans[-1][1]) & (steps < since)) if spans else True
        if spans and not between:
            a, b, k = spans[-1]
            spans[-1] = (a, max(b, until), k + 1)
        else:
            spans.append((since, until, 1))
    return [(a, b) for a, b, k in spans if k > 1]


def n_records_of(fit: TheoryFit, observed: Mapping[str, Series]) -> int:
    """Records the fit's curves cover: the fewest over its fitted observables (those it has
    curves for and that were observed), else the fewest observed."""
    counts = [np.asarray(s).size for n, (s, _) in fit.curves.fitted.items() if n in observed]
    if counts:
        return int(min(counts))
    return int(min((s.size for s, _ in observed.values()), default=0))


def best_window(windows: list[WindowFit]) -> WindowFit | None:
    """The window that holds over the longest stretch of training time (the later one on a
    tie), or ``None`` when none holds."""
    holding = [w for w in windows if w.verdict.verdict == "holds"]
    if not holding:
        return None
    return max(holding, key=lambda w: (w.until - w.since, w.until))


def span_of(observed: Mapping[str, Series]) -> tuple[float, float]:
    """First and last step of any observed series (NaN for none)."""
    firsts = [float(s[0]) for s, _ in observed.values() if s.size]
    lasts = [float(s[-1]) for s, _ in observed.values() if s.size]
    if not firsts:
        return math.nan, math.nan
    return min(firsts), max(lasts)
