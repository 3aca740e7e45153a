"""``ncdyn compare`` on many runs: every run confronted, one summary table of verdicts.

:func:`compare_runs` runs :func:`ncdynamics.experiments.compare.compare` on each run of a
list of run directories and sweep directories (a sweep's runs are its subdirectories that
hold a ``status.json``), and :func:`summary_table` lays the results out as one row per run and
one column per theory and stream: the verdict, and the key parameters with their 95%
intervals. :func:`long_table` has every number, one row per run, theory and stream.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from .compare import CompareEntry, compare
from .streams import read_run
from .sweep import is_sweep

__all__ = [
    "verdict_table",
    "RunResult",
    "compare_runs",
    "expand_run_dirs",
    "format_param",
    "key_params",
    "long_table",
    "summary_table",
]

#: Most parameters a summary cell shows per theory (those with intervals first).
MAX_KEY_PARAMS = 3


@dataclass(frozen=True)
class RunResult:
    """One run's entries, or the one-line reason it could not be read."""

    label: str
    path: Path
    entries: tuple[CompareEntry, ...] = ()
    error: str = ""
    grid: tuple[tuple[str, Any], ...] = ()


def expand_run_dirs(paths: Sequence[str | os.PathLike[str]]) -> list[tuple[str, Path]]:
    """``(label, run directory)`` for each path: a sweep directory gives its runs (labelled
    ``sweep/run-id``), any other path is taken as a run. Raises ``FileNotFoundError`` for
    a path that does not exist."""
    out: list[tuple[str, Path]] = []
    for raw in paths:
        p = Path(raw)
        if not p.exists():
            raise FileNotFoundError(f"`run_dir` {str(p)!r} does not exist.")
        if is_sweep(p):
            for sub in sorted(q for q in p.iterdir() if (q / "status.json").is_file()):
                out.append((f"{p.name}/{sub.name}", sub))
        else:
            out.append((p.name or str(p), p))
    return out


def _grid(path: Path) -> tuple[tuple[str, Any], ...]:
    """The run's scalar config values (:func:`summary_table` shows those that differ
    between the runs: a sweep's grid and seeds)."""
    try:
        config = read_run(path).config
    except Exception:
        return ()
    return tuple(
        (k, v) for k, v in sorted(config.items()) if isinstance(v, (int, float, str, bool))
    )


def compare_runs(
    paths: Sequence[str | os.PathLike[str]],
    *,
    force: bool = False,
    windows: bool = True,
    progress: bool = False,
    theories: Sequence[str] | None = None,
) -> list[RunResult]:
    """:func:`~ncdynamics.experiments.compare.compare` on every run of ``paths`` (see
    :func:`expand_run_dirs`); a run that cannot be read or compared gets its reason.
    ``progress`` shows a bar over the runs (each is seconds of fits); ``theories`` names the
    theories to confront (default: every one; an unknown name is refused before any run)."""
    from tqdm.auto import tqdm

    from .compare import chosen_confrontations

    chosen_confrontations(theories)
    found = expand_run_dirs(paths)
    out = []
    for label, path in tqdm(found, desc="compare", unit="run", disable=not progress, leave=False):
        try:
            entries = compare(path, force=force, windows=windows, theories=theories)
        except Exception as exc:  # one damaged run must not hide the others
            msg = str(exc).splitlines()[0] if str(exc) else ""
            out.append(RunResult(label, path, error=f"{type(exc).__name__}: {msg}"))
            continue
        out.append(RunResult(label, path, tuple(entries), grid=_grid(path)))
    return out


def key_params(entry: CompareEntry) -> list[str]:
    """The parameters a summary shows: those with an interval (fitted ones), else all,
    at most :data:`MAX_KEY_PARAMS`."""
    if entry.fit is None:
        return []
    fit = entry.fit
    names = [n for n, p in fit.params.items() if p.interval is not None] or list(fit.params)
    return names[:MAX_KEY_PARAMS]


def format_param(entry: CompareEntry, name: str) -> str:
    """``name = value [low, high] unit`` (interval and unit where the fit gives them)."""
    fit = entry.fit
    if fit is None or name not in fit.params:
        return name
    p = fit.params[name]
    text = f"{name} = {p.value:.3g}"
    if p.interval is not None:
        lo, hi = p.interval
        text += f" [{lo:.3g}, {hi:.3g}]"
    if p.unit:
        text += f" {p.unit}"
    return text


def _column(entry: CompareEntry) -> str:
    stream = entry.stream.rstrip("/.") if entry.stream not in ("", "(no prefix)") else ""
    return f"{entry.theory} ({stream})" if stream else entry.theory


def verdict_table(entries: Sequence[CompareEntry]) -> pd.DataFrame:
    """One row per theory and stream of one run: verdict, window, key parameters with their
    intervals and units, and the reason (what ``ncdyn compare --format csv|latex`` prints)."""
    rows = []
    for e in entries:
        window = e.verdict.window
        rows.append(
            {
                "theory": e.theory,
                "stream": e.stream,
                "verdict": e.verdict.verdict,
                "window": f"{window[0]:g}-{window[1]:g}" if window else "",
                "parameters": "; ".join(format_param(e, n) for n in key_params(e)),
                "reason": e.verdict.reason,
            }
        )
    return pd.DataFrame(rows)


def summary_table(results: Sequence[RunResult]) -> pd.DataFrame:
    """One row per run, one column per theory and stream: ``verdict; key parameters``.

    The first columns are the run's label and the config values that differ between runs
    (the grid of a sweep); a run that could not be compared has its reason in ``error``.
    """
    varying: list[str] = []
    configs = [dict(r.grid) for r in results]
    keys = sorted({k for c in configs for k in c})
    for k in keys:
        if len({repr(c.get(k)) for c in configs}) > 1:
            varying.append(k)
    rows = []
    for r, config in zip(results, configs, strict=True):
        row: dict[str, Any] = {"run": r.label}
        for k in varying:
            row[k] = config.get(k, math.nan)
        if r.error:
            row["error"] = r.error
        for e in r.entries:
            if e.verdict.verdict == "missing":
                row[e.theory] = "missing"
                continue
            cell: str = e.verdict.verdict
            if e.verdict.window:
                cell += f" [{e.verdict.window[0]:g}, {e.verdict.window[1]:g}]"
            params = "; ".join(format_param(e, n) for n in key_params(e))
            row[_column(e)] = f"{cell}; {params}" if params else cell
        rows.append(row)
    return pd.DataFrame(rows)


def long_table(results: Sequence[RunResult]) -> pd.DataFrame:
    """Every number: one row per run, theory and stream (:meth:`CompareEntry.row` plus
    the run's label and path)."""
    rows = []
    for r in results:
        if r.error:
            rows.append(
                {"run": r.label, "path": str(r.path), "verdict": "error", "reason": r.error}
            )
        for e in r.entries:
            rows.append({"run": r.label, "path": str(r.path), **e.row()})
    return pd.DataFrame(rows)
