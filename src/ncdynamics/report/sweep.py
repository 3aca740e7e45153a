"""The sweep report: each final metric against each grid value, and the sweep table.

Writes ``figures/<grid-key>.png`` and ``report.html`` into a sweep directory (see
:mod:`ncdynamics.experiments.sweep`). Points are means over seeds; error bars span the
seeds' minimum to maximum; one line per combination of the other grid keys.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from ..experiments.sweep import is_sweep, read_sweep_table
from ..runs._io import atomic_write, read_json
from .html import _CSS, _href, _state_class, _text, _text_writer

__all__ = ["sweep_figures", "write_sweep_report"]

_MAX_PANELS = 12


def _metric_columns(table: pd.DataFrame) -> list[str]:
    """Numeric result columns with a finite value: summary scalars first, then final metrics."""
    cols = [c for c in table.columns if c.startswith(("summary.", "final."))]
    values = {c: pd.to_numeric(table[c], errors="coerce") for c in cols}
    # finite somewhere, and not one constant value (an epoch count, a fixed setting)
    cols = [c for c in cols if np.isfinite(values[c]).any() and values[c].nunique() > 1]
    summary = [c for c in cols if c.startswith("summary.")]
    return (summary + [c for c in cols if c.startswith("final.")])[:_MAX_PANELS] if cols else []


def _positions(values: pd.Series) -> tuple[np.ndarray, list[str] | None, bool]:
    """x positions of grid values: numeric as is (log if spread > 20x), else categorical."""
    num = pd.to_numeric(values, errors="coerce")
    if num.notna().all():
        arr = num.to_numpy(dtype=float)
        pos = arr[arr > 0]
        log = pos.size == arr.size and arr.size > 1 and pos.max() / pos.min() > 20
        return arr, None, bool(log)
    cats = list(dict.fromkeys(values.astype(str)))
    return values.astype(str).map(cats.index).to_numpy(dtype=float), cats, False


def sweep_figures(table: pd.DataFrame, grid_keys: list[str]) -> list[tuple[str, Any]]:
    """One figure per grid key with at least two values: a panel per metric."""
    import matplotlib.pyplot as plt

    done = table[table["status"] == "completed"]
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
        fig, axes = plt.subplots(nrows, ncols, figsize=(4.2 * ncols, 3.1 * nrows), squeeze=False)
        for ax, metric in zip(axes.flat, metrics, strict=False):
            groups = done.groupby(others, sort=True) if others else [((), done)]
            for label, sub in groups:
                x, cats, log = _positions(sub[key])
                frame = pd.DataFrame({"x": x, "y": pd.to_numeric(sub[metric], errors="coerce")})
                stats = frame.groupby("x")["y"].agg(["mean", "min", "max"]).sort_index()
                err = np.vstack([stats["mean"] - stats["min"], stats["max"] - stats["mean"]])
                name = ", ".join(
                    f"{k}={v}"
                    for k, v in zip(others, np.atleast_1d(cast(Any, label)), strict=False)
                )
                ax.errorbar(
                    stats.index,
                    stats["mean"],
                    yerr=err,
                    marker="o",
                    ms=4,
                    capsize=3,
                    label=name or None,
                )
                if cats is not None:
                    ax.set_xticks(range(len(cats)), cats)
                if log:
                    ax.set_xscale("log")
            ax.set_title(metric, fontsize=9)
            ax.set_xlabel(key)
            if others:
                ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(metrics) :]:
            ax.set_visible(False)
        fig.suptitle(f"final values against {key} (mean over seeds, bars: min to max)")
        fig.tight_layout()
        out.append((key, fig))
    return out


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
    import matplotlib.pyplot as plt

    path = Path(path)
    if not is_sweep(path):
        raise FileNotFoundError(
            f"`path` must be a sweep directory holding sweep.json; got {str(path)!r}."
        )
    meta = _sweep_meta(path / "sweep.json")
    table = read_sweep_table(path)
    grid = meta.get("grid", {})
    grid_keys = [str(k) for k in grid] if isinstance(grid, dict) else []
    figs_html = []
    (path / "figures").mkdir(exist_ok=True)
    for key, fig in sweep_figures(table, grid_keys):
        png = path / "figures" / f"{_safe_name(key)}.png"
        atomic_write(png, _png_writer(fig))
        plt.close(fig)
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        figs_html.append(
            f'<figure><img alt="{_text(key)}" src="data:image/png;base64,{data}">'
            f"<figcaption>final metrics against {_text(key)}</figcaption></figure>"
        )
    rows = []
    shown = ["run_id", *grid_keys, "seed", "status", "attempts", "error"]
    shown = [c for c in shown if c in table.columns]
    for _, r in table.iterrows():
        cells = []
        for c in shown:
            v = r[c]
            text = "" if v is None or (isinstance(v, float) and np.isnan(v)) else str(v)
            if c == "run_id" and _is_run_id(text) and (path / text / "report.html").is_file():
                text = f'<a href="{_href(Path(text) / "report.html")}">{_text(text)}</a>'
            elif c == "status":
                text = f'<span class="{_state_class(text)}">{_text(text)}</span>'
            else:
                text = _text(text)
            cells.append(f"<td>{text}</td>")
        rows.append("<tr>" + "".join(cells) + "</tr>")
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
