"""The multi-run comparison report: several runs' metrics overlaid, seeds as bands.

``write_comparison_report(runs, out)`` writes ``out/report.html`` (figures embedded),
``out/figures/*.png`` and ``out/comparison.json`` (the runs compared; it marks the folder
as this report's own, so writing again replaces it). ``ncdyn report --compare RUN1 RUN2 ...``
calls it.

Runs whose configurations differ only in ``seed`` form a group, drawn as the mean over the
group with a band from its minimum to its maximum; each group is named by the settings that
differ between groups (see :func:`ncdynamics.report.figures.comparison_figures`). A table
gives every run's state and the last values of the main collapse metrics, and the final
values per group (mean, and the range over seeds).
"""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..runs import Run
from ..runs._io import atomic_write
from ._reading import read_run
from .figures import _groups, comparison_figures
from .html import (
    _CSS,
    Report,
    _caption,
    _cell,
    _json_object,
    _state_class,
    _text,
    _text_writer,
)
from .labels import label, split_names

__all__ = ["MAIN_KEYS", "last_values", "write_comparison_report"]

#: the collapse and accuracy metrics tables show (index, comparison), in this order
MAIN_KEYS = ("nc/nc1", "nc/nc2_etf", "nc/nc3", "nc/nc4", "test/accuracy", "train/loss")

_MARKER = "comparison.json"


def last_values(metrics: pd.DataFrame, keys: Sequence[str] = MAIN_KEYS) -> pd.DataFrame:
    """The last finite value of each metric key in ``keys``, per series prefix.

    Returns a frame indexed by prefix (``""`` for none) with one column per key found.
    """
    if metrics.empty:
        return pd.DataFrame()
    split = split_names(metrics["name"].unique())
    rows: dict[str, dict[str, float]] = {}
    finite = metrics[np.isfinite(pd.to_numeric(metrics["value"], errors="coerce"))]
    last = finite.sort_values("step").groupby("name")["value"].last()
    for name, value in last.items():
        prefix, key = split[str(name)]
        if key in keys:
            rows.setdefault(prefix, {})[key] = float(value)
    frame = pd.DataFrame.from_dict(rows, orient="index")
    return frame[[k for k in keys if k in frame.columns]].sort_index()


def _metric_head(keys: Sequence[str]) -> str:
    return "".join(
        f'<th>{_text(label(k).short)}<span class="unit">{_text(k)}</span></th>' for k in keys
    )


def _runs_table(runs: Sequence[Run], group_of: dict[Path, str]) -> str:
    frames = {r.path: last_values(r.metrics) for r in runs}
    keys = [k for k in MAIN_KEYS if any(k in f.columns for f in frames.values())]
    rows = []
    for r in runs:
        status = _json_object(r, "status")
        state = str(status.get("state", "?"))
        frame = frames[r.path]
        for prefix in list(frame.index) or [""]:
            cells = "".join(
                f"<td>{_cell(float(frame.loc[prefix, k]))}</td>"
                if k in frame.columns and np.isfinite(frame.loc[prefix, k])
                else "<td></td>"
                for k in keys
            )
            rows.append(
                f"<tr><td><code>{_text(r.path)}</code></td><td>{_text(group_of[r.path.resolve()])}</td>"
                f"<td>{_text(status.get('seed'))}</td>"
                f'<td><span class="{_state_class(state)}">{_text(state)}</span></td>'
                f"<td>{_text(prefix)}</td>{cells}</tr>"
            )
    head = (
        "<tr><th>run</th><th>group</th><th>seed</th><th>state</th><th>series</th>"
        f"{_metric_head(keys)}</tr>"
    )
    return f"<table>{head}{''.join(rows)}</table>"


def _final_table(runs: Sequence[Run], group_of: dict[Path, str]) -> str:
    """Final values per group and series: mean, with min-max over seeds when several."""
    per: dict[tuple[str, str], list[pd.Series]] = {}
    for r in runs:
        frame = last_values(r.metrics)
        for prefix in frame.index:
            per.setdefault((group_of[r.path.resolve()], str(prefix)), []).append(frame.loc[prefix])
    if not per:
        return ""
    keys = [k for k in MAIN_KEYS if any(k in s.index for v in per.values() for s in v)]
    rows = []
    for (group, prefix), values in per.items():
        cells = []
        for k in keys:
            v = np.array([float(s[k]) for s in values if k in s.index and np.isfinite(s[k])])
            if v.size == 0:
                cells.append("<td></td>")
            elif v.size == 1:
                cells.append(f"<td>{_cell(float(v[0]))}</td>")
            else:
                cells.append(
                    f"<td>{_cell(float(v.mean()))} "
                    f'<span class="unit">{v.min():.3g} to {v.max():.3g} '
                    f"(n={v.size})</span></td>"
                )
        rows.append(f"<tr><td>{_text(group)}</td><td>{_text(prefix)}</td>{''.join(cells)}</tr>")
    return (
        "<h2>Final values per group</h2><p class='note'>Mean over the group's seeds; below it, "
        "the range over seeds.</p>"
        f"<table><tr><th>group</th><th>series</th>{_metric_head(keys)}</tr>{''.join(rows)}</table>"
    ).replace("<p class='note'>", '<p class="note">')


def _check_out(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"`out` must be a folder for the comparison; {str(out)!r} is a file.")
    if out.is_dir() and any(out.iterdir()) and not (out / _MARKER).is_file():
        raise FileExistsError(
            f"`out` {str(out)!r} already holds files that are not a comparison report; "
            "choose a new folder (nothing was overwritten)."
        )


def _png_writer(fig: Any) -> Any:
    def write(path: Path) -> None:
        fig.savefig(path, dpi=100, format="png", bbox_inches="tight")

    return write


def write_comparison_report(
    runs: Sequence[Run | str | os.PathLike[str]],
    out: str | os.PathLike[str],
    *,
    keys: Sequence[str] | None = None,
    progress: bool = False,
) -> Report:
    """Overlay several runs in one report and return its path (``out/report.html``).

    Parameters
    ----------
    runs : sequence of Run or path-like
        At least two runs (or one run recorded under several prefixes).
    out : path-like
        A new or empty folder, or one this function wrote before (it is replaced).
    keys : sequence of str, optional
        Metric keys to draw (prefix removed, e.g. ``"nc/nc1"``); default every drawable one.
    progress : bool, default=False
        A bar on stderr through the runs read, the figures drawn and the tables
        (``ncdyn report --compare`` shows it).

    Raises
    ------
    ValueError
        If ``runs`` is empty, names a run twice, or ``keys`` matches no recorded metric.
    FileExistsError
        If ``out`` holds files that are not a comparison report.
    """
    if not runs:
        raise ValueError("`runs` must name at least one run directory; got none.")
    from tqdm.auto import tqdm

    bar = tqdm(
        total=len(runs) + 3, desc="report --compare", unit="step", disable=not progress, leave=False
    )
    try:
        return _write_comparison(runs, out, keys, bar)
    finally:
        bar.close()


def _write_comparison(
    runs: Sequence[Run | str | os.PathLike[str]],
    out: str | os.PathLike[str],
    keys: Sequence[str] | None,
    bar: Any,
) -> Report:
    opened = []
    for r in runs:
        bar.set_postfix_str(f"reading {Path(r.path if isinstance(r, Run) else r).name}")
        opened.append(r if isinstance(r, Run) else read_run(r))
        bar.update(1)
    paths = [r.path.resolve() for r in opened]
    if len(set(paths)) < len(paths):
        raise ValueError(f"`runs` must name each run once; got {[str(p) for p in paths]}.")
    out = Path(out)
    _check_out(out)
    bar.set_postfix_str("drawing the figures")
    figs = comparison_figures(opened, keys=keys)
    bar.update(1)
    if keys is not None and not figs:
        raise ValueError(
            f"`keys` (--metric) must name recorded metric keys such as 'nc/nc1' with more "
            f"than one record; got {list(keys)}."
        )
    groups = _groups(opened)
    group_of: dict[Path, str] = {}
    for g in groups:
        for p in g.paths:
            group_of[p] = g.label
    (out / "figures").mkdir(parents=True, exist_ok=True)
    for old in (out / "figures").glob("*.png"):
        old.unlink()
    figs_html = []
    for name, fig in figs:
        png = atomic_write(out / "figures" / f"{name}.png", _png_writer(fig))
        plt.close(fig)
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        caption = _caption(name)
        figs_html.append(
            f'<figure><img alt="{_text(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_text(caption)}</figcaption></figure>"
        )
    atomic_write(
        out / _MARKER,
        _text_writer(json.dumps({"runs": [str(p) for p in paths]}, indent=1)),
    )
    seeds = sum(len(g.paths) > 1 for g in groups)
    note = (
        f"{len(opened)} runs in {len(groups)} group(s); runs whose settings differ only in "
        "the seed form a group, drawn as their mean with a band from minimum to maximum"
        + (f" ({seeds} group(s) with several seeds)." if seeds else ".")
    )
    bar.set_postfix_str("the tables")
    bar.update(1)
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>Comparison of {len(opened)} runs</title>
<style>{_CSS}</style></head><body>
<h1>Comparison of {len(opened)} runs</h1>
<p class="note">{_text(note)}</p>
<h2>Runs</h2>{_runs_table(opened, group_of)}
{_final_table(opened, group_of)}
<h2>Figures</h2>{"".join(figs_html) or "<p>No metric has more than one record.</p>"}
</body></html>
"""
    page = Report(atomic_write(out / "report.html", _text_writer(doc)))
    bar.update(1)
    return page
