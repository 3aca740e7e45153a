"""An HTML index of every run and sweep under a directory, linking each report.

``write_index(dir)`` writes ``dir/index.html`` with relative, URL-quoted links (never a
scheme: a directory named ``javascript:...`` is a path like any other), so the folder can be
moved or served as it is. Every name shown is escaped. Each run shows the last values of the
main collapse metrics (NC1-NC4, test accuracy; one line per series prefix), and a run made
with the Python API rather than ``ncdyn run`` is listed as an "own run". Sweeps and runs
outside a sweep show their ``figures/overview.png`` (drawn by the report writers) as a
thumbnail, else their first figure. A run that this version cannot read (another format
version, a broken status file) is listed with the reason instead of stopping the index.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..experiments.sweep import is_sweep
from ..runs import Run
from ..runs._io import atomic_write, read_json
from ._reading import read_run
from .comparison import last_values
from .html import _CSS, _href, _json_object, _state_class, _text, _text_writer
from .labels import label

__all__ = ["IndexEntry", "find_entries", "write_index"]


@dataclass(frozen=True)
class IndexEntry:
    """One run or sweep found under the index root.

    Attributes
    ----------
    kind : {"run", "sweep"}
    path : Path
        Relative to the index root.
    experiment, preset, state : str
        ``state`` of a sweep counts its runs by state; of an unreadable run it gives why.
    sweep : Path or None
        The sweep (relative path) a run belongs to.
    report : Path or None
        Its ``report.html`` (relative), when written.
    figures : tuple of Path
        Thumbnails shown (relative).
    confront : tuple of Path
        Reports of ``ncdyn compare`` / ``ncdyn forecast`` inside the run (relative).
    metrics : tuple of (prefix, key, value)
        Last values of the main collapse metrics (:data:`~ncdynamics.report.comparison.MAIN_KEYS`).
    """

    kind: str
    path: Path
    experiment: str
    preset: str
    state: str
    sweep: Path | None
    report: Path | None
    figures: tuple[Path, ...]
    confront: tuple[Path, ...] = ()
    metrics: tuple[tuple[str, str, float], ...] = ()


_SHOWN_KEYS = ("nc/nc1", "nc/nc2_etf", "nc/nc3", "nc/nc4", "test/accuracy")


def _thumbnail(root: Path, figures: list[Path]) -> tuple[Path, ...]:
    """``overview.png`` when drawn, else the first figure (paths relative to ``root``)."""
    over = [p for p in figures if p.name == "overview.png"]
    chosen = over or figures[:1]
    return tuple(p.relative_to(root) for p in chosen)


def _last_metrics(run: Run) -> tuple[tuple[str, str, float], ...]:
    try:
        frame = last_values(run.metrics, _SHOWN_KEYS)
    except (OSError, ValueError, KeyError):
        return ()
    return tuple(
        (str(prefix), str(key), float(frame.loc[prefix, key]))
        for prefix in frame.index
        for key in frame.columns
        if np.isfinite(frame.loc[prefix, key])
    )


def _confront_reports(root: Path, d: Path) -> tuple[Path, ...]:
    found = [d / "compare" / "report.html", *sorted(d.glob("forecast-*/report.html"))]
    return tuple(p.relative_to(root) for p in found if p.is_file())


def _run_entry(root: Path, d: Path, sweep: Path | None) -> IndexEntry:
    rel = d.relative_to(root)
    report = rel / "report.html" if (d / "report.html").is_file() else None
    try:
        run = read_run(d)
        config, status = _json_object(run, "config"), _json_object(run, "status")
    except (ValueError, OSError, KeyError, AttributeError, TypeError) as exc:
        # AttributeError, TypeError: a status.json holding a list, read by the run store
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return IndexEntry("run", rel, "?", "?", f"unreadable: {msg}", sweep, report, ())
    figs = () if sweep is not None else _thumbnail(root, run.figures())
    own = not config.get("experiment")
    return IndexEntry(
        "run",
        rel,
        "own run" if own else str(config.get("experiment")),
        str(config.get("preset") or ("-" if own else "?")),
        str(status.get("state", "?")),
        sweep,
        report,
        figs,
        _confront_reports(root, d),
        _last_metrics(run),
    )


def _run_state(status: Path) -> str:
    """The state in a sweep run's ``status.json``: ``pending`` without one, ``unreadable``
    when it is not a JSON object."""
    if not status.is_file():
        return "pending"
    try:
        value = read_json(status)
    except (ValueError, OSError):
        return "unreadable"
    return str(value.get("state", "?")) if isinstance(value, dict) else "unreadable"


def _sweep_entry(root: Path, d: Path) -> IndexEntry:
    rel = d.relative_to(root)
    try:
        meta = read_json(d / "sweep.json")
        if not isinstance(meta, dict):
            raise ValueError(f"sweep.json must hold a JSON object; got {type(meta).__name__}")
    except (ValueError, OSError) as exc:
        return IndexEntry("sweep", rel, "?", "?", f"unreadable: {exc}", None, None, ())
    states: dict[str, int] = {}
    runs_ = meta.get("runs", {})
    for run_id in runs_ if isinstance(runs_, dict) else ():
        st = _run_state(d / str(run_id) / "status.json")
        states[st] = states.get(st, 0) + 1
    report = rel / "report.html" if (d / "report.html").is_file() else None
    figs = _thumbnail(root, sorted((d / "figures").glob("*.png")))
    return IndexEntry(
        "sweep",
        rel,
        str(meta.get("experiment", "?")),
        str(meta.get("preset", "?")),
        ", ".join(f"{v} {k}" for k, v in sorted(states.items())),
        None,
        report,
        figs,
    )


def find_entries(directory: str | os.PathLike[str]) -> list[IndexEntry]:
    """Every sweep and run under ``directory`` (sweeps first, then runs, each by path)."""
    root = Path(directory)
    if not root.is_dir():
        raise FileNotFoundError(f"`directory` must be an existing directory; got {str(root)!r}.")
    sweeps: list[IndexEntry] = []
    run_entries: list[IndexEntry] = []
    for dirpath, dirnames, filenames in os.walk(root):
        d = Path(dirpath)
        dirnames[:] = sorted(n for n in dirnames if not n.startswith("."))
        if "sweep.json" in filenames and is_sweep(d):
            sweeps.append(_sweep_entry(root, d))
        elif "status.json" in filenames:
            parent = d.parent
            sweep = parent.relative_to(root) if is_sweep(parent) and parent != d else None
            run_entries.append(_run_entry(root, d, sweep))
            dirnames[:] = []  # a run's sub-folders hold no runs
    return sorted(sweeps, key=lambda e: e.path) + sorted(run_entries, key=lambda e: e.path)


def _link(target: Path | None, text: str) -> str:
    if target is None:
        return _text(text)
    return f'<a href="{_href(target)}">{_text(text)}</a>'


def _thumbs(figs: tuple[Path, ...]) -> str:
    return "".join(
        f'<a href="{_href(p)}"><img class="thumb" alt="{_text(p.stem)}" src="{_href(p)}"></a>'
        for p in figs
    )


def _metric_cells(e: IndexEntry) -> str:
    cells = []
    for key in _SHOWN_KEYS:
        vals = [(p, v) for p, k, v in e.metrics if k == key]
        lines = "".join(
            '<span class="line">'
            + (f'<span class="series">{_text(p)}</span> ' if p else "")
            + f"{v:.3g}</span>"
            for p, v in vals
        )
        cells.append(f"<td>{lines}</td>")
    return "".join(cells)


def write_index(directory: str | os.PathLike[str]) -> Path:
    """Write ``index.html`` listing every run and sweep under ``directory``; return its path."""
    root = Path(directory)
    entries = find_entries(root)
    sweeps = [e for e in entries if e.kind == "sweep"]
    run_entries = [e for e in entries if e.kind == "run"]
    sweep_rows = "".join(
        f"<tr><td>{_link(e.report, e.path.as_posix())}</td><td>{_text(e.experiment)}</td>"
        f"<td>{_text(e.preset)}</td><td>{_text(e.state)}</td>"
        f"<td>{_link(e.path / 'table.csv', 'table.csv')}</td><td>{_thumbs(e.figures)}</td></tr>"
        for e in sweeps
    )
    run_rows = "".join(
        f'<tr><td class="path">{_link(e.report, e.path.as_posix())}</td>'
        f"<td>{_text(e.experiment)}</td><td>{_text(e.preset)}</td>"
        f'<td><span class="{_state_class(e.state.split(":")[0])}">'
        f"{_text(e.state)}</span></td>"
        f"{_metric_cells(e)}"
        f"<td>{' '.join(_link(p, p.parent.name) for p in e.confront)}</td>"
        f"<td>{_thumbs(e.figures)}</td></tr>"
        for e in run_entries
    )
    no_report = sum(e.report is None for e in entries)
    note = (
        f"<p>{no_report} without a report (write one with <code>ncdyn report DIR</code>).</p>"
        if no_report
        else ""
    )
    css = _CSS + (
        "body{max-width:1340px} td,th{padding:.25em .45em}"
        "img.thumb{width:250px;margin:2px;vertical-align:middle}"
        "span.line{display:block;font-size:.85em} span.series{color:#666}"
        "td.path{overflow-wrap:anywhere;min-width:9em}"
    )
    sweep_head = "".join(
        f"<th>{c}</th>" for c in ("sweep", "experiment", "preset", "runs", "table", "figures")
    )
    metric_heads = "".join(
        f'<th>{_text(label(k).short)}<span class="unit">last value</span></th>' for k in _SHOWN_KEYS
    )
    run_head = (
        "".join(f"<th>{c}</th>" for c in ("run", "experiment", "preset", "state"))
        + metric_heads
        + "<th>theory</th><th>overview</th>"
    )
    sweep_table = f"<table><tr>{sweep_head}</tr>{sweep_rows}</table>" if sweeps else "<p>None.</p>"
    run_table = f"<table><tr>{run_head}</tr>{run_rows}</table>" if run_entries else "<p>None.</p>"
    title = f"ncdynamics runs in {_text(root.name)}"
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>{css}</style></head><body>
<h1>Runs and sweeps in <code>{_text(root)}</code></h1>
<p>{len(sweeps)} sweep(s), {len(run_entries)} run(s).</p>{note}
<h2>Sweeps</h2>
{sweep_table}
<h2>Runs</h2>
{run_table}
</body></html>
"""
    return atomic_write(root / "index.html", _text_writer(doc))
