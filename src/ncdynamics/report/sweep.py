"""The sweep report: each final metric against each grid value, and the sweep table.

Writes ``figures/<grid-key>.png`` and ``report.html`` into a sweep directory (see
:mod:`ncdynamics.experiments.sweep`). Points are means over seeds; error bars span the
seeds' minimum to maximum; one line per combination of the other grid keys.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from ..experiments.sweep import is_sweep, read_sweep_table
from ..runs._io import atomic_write, read_json
from .comparison import MAIN_KEYS
from .figures import _LINESTYLES, _MARKERS, _plain
from .html import _CSS, _href, _state_class, _text, _text_writer
from .labels import label, sort_key, split_names

__all__ = ["sweep_figures", "sweep_overview", "write_sweep_report"]

_MAX_PANELS = 12


@dataclass(frozen=True)
class _Column:
    """A numeric result column of the sweep table, read as a metric key and a series."""

    column: str
    key: str
    series: str


def _parse_columns(columns: list[str]) -> list[_Column]:
    """``summary.table.<row>.<key>`` (row = series), ``final.<prefix>/<key>`` and
    ``summary.<key>`` as (key, series); the summary table wins over ``final.``."""
    out: list[_Column] = []
    seen: set[tuple[str, str]] = set()
    for c in columns:
        if c.startswith("summary.table."):
            row, _, key = c[len("summary.table.") :].partition(".")
            if key:
                out.append(_Column(c, key, row))
                seen.add((key, row))
    finals = [c for c in columns if c.startswith("final.")]
    split = split_names(c[len("final.") :] for c in finals)
    for c in finals:
        series, key = split[c[len("final.") :]]
        if (key, series) not in seen:
            out.append(_Column(c, key, series))
            seen.add((key, series))
    for c in columns:
        if c.startswith("summary.") and not c.startswith("summary.table."):
            out.append(_Column(c, c[len("summary.") :], ""))
    return out


def _metric_columns(table: pd.DataFrame) -> dict[str, list[_Column]]:
    """Metric key -> its columns with a finite, non-constant value; at most ``_MAX_PANELS``
    keys, the main collapse metrics first."""
    keep = []
    for col in _parse_columns([str(c) for c in table.columns]):
        values = pd.to_numeric(table[col.column], errors="coerce")
        # finite somewhere, and not one constant value (an epoch count, a fixed setting)
        if np.isfinite(values).any() and values.nunique() > 1:
            keep.append(col)
    by_key: dict[str, list[_Column]] = {}
    for col in keep:
        by_key.setdefault(col.key, []).append(col)

    def order(key: str) -> tuple[int, tuple[int, int, int, str]]:
        return (0 if key in MAIN_KEYS else 1, sort_key(key))

    keys = sorted(by_key, key=order)[:_MAX_PANELS]
    return {k: by_key[k] for k in keys}


def _is_integral(num: pd.Series) -> bool:
    arr = num.to_numpy(dtype=float)
    return bool(np.all(np.isfinite(arr)) and np.all(arr == np.round(arr)))


def _positions(values: pd.Series) -> tuple[np.ndarray, list[str] | None, bool]:
    """x positions of grid values and tick labels.

    Integer and non-numeric values are categories (evenly spaced, labelled by value);
    other numbers are positions on a numeric axis, log when all positive and spread > 20x.
    Returns ``(x, categories or None, log)``.
    """
    num = pd.to_numeric(values, errors="coerce")
    if num.notna().all() and not _is_integral(num):
        arr = num.to_numpy(dtype=float)
        pos = arr[arr > 0]
        log = pos.size == arr.size and arr.size > 1 and pos.max() / pos.min() > 20
        return arr, None, bool(log)
    if num.notna().all():
        order = sorted(set(num.astype(int)))
        cats = [str(v) for v in order]
        return num.astype(int).map(order.index).to_numpy(dtype=float), cats, False
    cats = list(dict.fromkeys(values.astype(str)))
    return values.astype(str).map(cats.index).to_numpy(dtype=float), cats, False


def _draw_sweep_panel(
    ax: Any, done: pd.DataFrame, key: str, cols: list[_Column], grid_key: str, others: list[str]
) -> None:
    from matplotlib.ticker import NullLocator

    lab = label(key)
    groups = list(done.groupby(others, sort=True)) if others else [((), done)]
    x_all, cats_all, log_x = _positions(done[grid_key])
    lines = 0
    all_values = []
    for col in cols:
        for group_label, sub in groups:
            x = x_all[done.index.get_indexer(sub.index)]
            frame = pd.DataFrame({"x": x, "y": pd.to_numeric(sub[col.column], errors="coerce")})
            stats = frame.groupby("x")["y"].agg(["mean", "min", "max"]).sort_index()
            if stats["mean"].notna().sum() == 0:
                continue
            all_values.append(stats[["min", "max"]].to_numpy(dtype=float).ravel())
            err = np.vstack([stats["mean"] - stats["min"], stats["max"] - stats["mean"]])
            parts = [col.series] if col.series else []
            parts += [
                f"{k}={v}"
                for k, v in zip(others, np.atleast_1d(cast(Any, group_label)), strict=False)
            ]
            ax.errorbar(
                stats.index,
                stats["mean"],
                yerr=err,
                marker=_MARKERS[lines % len(_MARKERS)],
                ls=_LINESTYLES[lines % len(_LINESTYLES)],
                ms=5,
                capsize=3,
                lw=max(1.0, 2.2 - 0.4 * lines),
                zorder=3 + lines,
                label=_plain(", ".join(parts)) or None,
            )
            lines += 1
    values = np.concatenate(all_values) if all_values else np.zeros(0)
    finite = values[np.isfinite(values)]
    if finite.size >= 2 and np.all(finite > 0) and lab.scale != "linear":
        if lab.scale == "log" or finite.max() / finite.min() > 30:
            ax.set_yscale("log")
    if cats_all is not None:
        ax.set_xticks(range(len(cats_all)), cats_all)
        ax.set_xlim(-0.5, len(cats_all) - 0.5)
    else:
        if log_x:
            ax.set_xscale("log")
        ticks = sorted(set(x_all))
        ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
        ax.xaxis.set_minor_locator(NullLocator())
    ax.set_title(lab.title, fontsize=10)
    ax.set_ylabel(lab.axis + (f" ({lab.unit})" if lab.unit and lab.unit not in lab.axis else ""))
    ax.set_xlabel(_plain(grid_key))
    ax.grid(alpha=0.3)
    if lines > 1:
        ax.legend(fontsize=7, framealpha=0.85)


def sweep_figures(table: pd.DataFrame, grid_keys: list[str]) -> list[tuple[str, Any]]:
    """One figure per grid key with at least two values: a panel per metric.

    Panels are named through :mod:`ncdynamics.report.labels`; a metric recorded under
    several series (``mse``, ``cross-entropy``) draws a line per series. Points are means
    over seeds with bars from minimum to maximum. Integer and text grid values are evenly
    spaced categories; other numbers sit at their values (log axis when they span > 20x)
    with a tick at each value.
    """
    import matplotlib.pyplot as plt

    done = table[table["status"] == "completed"].reset_index(drop=True)
    metrics = _metric_columns(done)
    out: list[tuple[str, Any]] = []
    if done.empty or not metrics:
        return out
    for key in grid_keys:
        if done[key].astype(str).nunique() < 2:
            continue
        others = [k for k in grid_keys if k != key and done[k].astype(str).nunique() > 1]
        ncols = min(3, len(metrics))
        nrows = -(-len(metrics) // ncols)
        fig, axes = plt.subplots(
            nrows, ncols, figsize=(4.3 * ncols, 3.3 * nrows + 0.5), squeeze=False
        )
        for ax, (metric, cols) in zip(axes.flat, metrics.items(), strict=False):
            _draw_sweep_panel(ax, done, metric, cols, key, others)
        for ax in list(axes.flat)[len(metrics) :]:
            ax.set_visible(False)
        fig.suptitle(
            _plain(f"Final values against {key} (mean over seeds; bars: minimum to maximum)")
        )
        fig.tight_layout()
        out.append((key, fig))
    return out


def sweep_overview(table: pd.DataFrame, grid_keys: list[str]) -> Any:
    """A small figure for the index: the first metric against the first grid key with two
    values; ``None`` when there is none."""
    import matplotlib.pyplot as plt

    done = table[table["status"] == "completed"].reset_index(drop=True)
    metrics = _metric_columns(done)
    keys = [k for k in grid_keys if not done.empty and done[k].astype(str).nunique() > 1]
    if not metrics or not keys:
        return None
    metric, cols = next(iter(metrics.items()))
    others = [k for k in grid_keys if k != keys[0] and done[k].astype(str).nunique() > 1]
    fig, ax = plt.subplots(figsize=(3.8, 2.8))
    _draw_sweep_panel(ax, done, metric, cols, keys[0], others)
    fig.tight_layout()
    return fig


def _png_writer(fig: Any) -> Callable[[Path], None]:
    """``write(path)`` for :func:`atomic_write`: saves ``fig`` as a PNG."""

    def write(path: Path) -> None:
        fig.savefig(path, dpi=100, format="png", bbox_inches="tight")

    return write


def _safe_name(key: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in key)


def _sweep_meta(path: Path) -> dict[str, Any]:
    """``sweep.json`` as a dict; a ValueError naming the file when it is anything else."""
    try:
        meta = read_json(path)
    except ValueError as exc:  # json.JSONDecodeError
        raise ValueError(f"{str(path)!r} is not valid JSON: {exc}.") from exc
    if not isinstance(meta, dict):
        raise ValueError(f"{str(path)!r} must hold a JSON object; got {type(meta).__name__}.")
    return meta


def _is_run_id(text: str) -> bool:
    """A run id names one folder inside the sweep: no separator, not ``.`` or ``..``."""
    return text not in ("", ".", "..") and "/" not in text and "\\" not in text


def write_sweep_report(path: str | os.PathLike[str]) -> Path:
    """Draw the sweep figures and write ``report.html`` into the sweep directory.

    The report holds the figures (embedded), the sweep's settings and the sweep table with a
    link to each run's own report.
    """
    path = Path(path)
    if not is_sweep(path):
        raise FileNotFoundError(
            f"`path` must be a sweep directory holding sweep.json; got {str(path)!r}."
        )
    meta = _sweep_meta(path / "sweep.json")
    table = read_sweep_table(path)
    grid = meta.get("grid", {})
    grid_keys = [str(k) for k in grid] if isinstance(grid, dict) else []
    figs_html = _sweep_figures_html(path, table, grid_keys)
    shown = ["run_id", *grid_keys, "seed", "status", "attempts", "error"]
    shown = [c for c in shown if c in table.columns]
    rows = [
        "<tr>" + "".join(f"<td>{_sweep_cell(path, c, r[c])}</td>" for c in shown) + "</tr>"
        for _, r in table.iterrows()
    ]
    head = "".join(f"<th>{_text(c)}</th>" for c in shown)
    counts = table["status"].value_counts().to_dict()
    settings = "".join(
        f"<tr><th>{_text(k)}</th><td><code>{_text(meta.get(k))}</code></td></tr>"
        for k in ("experiment", "preset", "grid", "seeds", "overrides")
    )
    title = f"sweep {meta.get('experiment')} ({meta.get('preset')})"
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{_text(title)}</h1>
<p>Sweep directory <code>{_text(path)}</code>; runs by state:
{_text(", ".join(f"{k} {v}" for k, v in sorted(counts.items())))}.
Full table: <a href="table.csv">table.csv</a>.</p>
<table>{settings}</table>
<h2>Figures</h2>{"".join(figs_html) or "<p>No figure: no grid key has two completed values.</p>"}
<h2>Runs</h2><table><tr>{head}</tr>{"".join(rows)}</table>
</body></html>
"""
    return atomic_write(path / "report.html", _text_writer(doc))


def _sweep_figures_html(path: Path, table: pd.DataFrame, grid_keys: list[str]) -> list[str]:
    """Draw the sweep overview and the figure of each grid key into ``path/figures``; return
    the HTML of the grid-key figures, embedded."""
    import matplotlib.pyplot as plt

    figs_html = []
    (path / "figures").mkdir(exist_ok=True)
    overview = sweep_overview(table, grid_keys)
    if overview is not None:
        atomic_write(path / "figures" / "overview.png", _png_writer(overview))
        plt.close(overview)
    for key, fig in sweep_figures(table, grid_keys):
        png = path / "figures" / f"{_safe_name(key)}.png"
        atomic_write(png, _png_writer(fig))
        plt.close(fig)
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        figs_html.append(
            f'<figure><img alt="{_text(key)}" src="data:image/png;base64,{data}">'
            f"<figcaption>Final metrics against {_text(key)}</figcaption></figure>"
        )
    return figs_html


def _sweep_cell(path: Path, column: str, value: Any) -> str:
    """One cell of the sweep table as HTML: a run id links to the run's report when it has
    one, a status is coloured by state, a missing value is blank."""
    text = "" if value is None or (isinstance(value, float) and np.isnan(value)) else str(value)
    if column == "run_id" and _is_run_id(text) and (path / text / "report.html").is_file():
        return f'<a href="{_href(Path(text) / "report.html")}">{_text(text)}</a>'
    if column == "status":
        return f'<span class="{_state_class(text)}">{_text(text)}</span>'
    return _text(text)
