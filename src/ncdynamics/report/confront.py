"""Reports of ``ncdyn compare`` and ``ncdyn forecast``: tables, figures and one HTML page.

Both write into an output directory (by default ``RUN_DIR/compare`` and
``RUN_DIR/forecast-<at>``): ``table.csv`` (every number), ``figures/*.png`` (one figure per
theory and stream: what the run measured, and the theory's curve) and ``report.html`` with the
figures embedded, and a marker ``.ncdynamics-compare`` / ``.ncdynamics-forecast`` that says
whose output it is. The directory is replaced as a whole, so an interrupted write never leaves
a mix of old and new files, and only when it holds that same command's earlier output
(:func:`ncdynamics.experiments.confront.check_output_dir`): a run, a folder of runs or
anyone's other files are refused, untouched.
"""

from __future__ import annotations

import base64
import os
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..experiments.confront import (
    CompareEntry,
    ForecastEntry,
    check_output_dir,
    compare_table,
    forecast_table,
    power_law_extrapolation,
    theories_without_confrontation,
    write_output_marker,
)
from .html import _CSS, _cell, _text

__all__ = ["write_compare_report", "write_forecast_report"]


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in name).strip("-") or "run"


def _panel(
    ax: Any, name: str, observed: Any, fitted: Any, extra: Sequence[tuple[Any, ...]] = ()
) -> None:
    steps, values = observed
    ax.plot(steps, values, "o", ms=3, color="0.35", label="measured")
    if fitted is not None:
        ax.plot(*fitted, "-", color="C0", lw=2, label="theory (fit)")
    for kind, args, kw in extra:
        getattr(ax, kind)(*args, **kw)
    vals = np.concatenate(
        [np.asarray(values, float)] + ([np.asarray(fitted[1], float)] if fitted else [])
    )
    if np.all(vals[np.isfinite(vals)] > 0) and np.ptp(np.log10(vals[np.isfinite(vals)])) > 1:
        ax.set_yscale("log")
    ax.set_title(name, fontsize=10)
    ax.set_xlabel("step")
    ax.legend(fontsize=7)


def _figure(title: str, panels: list[tuple[str, Any, Any, list]]) -> Any:
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.3), squeeze=False)
    for ax, (name, obs, fitted, extra) in zip(axes[0], panels, strict=True):
        _panel(ax, name, obs, fitted, extra)
    fig.suptitle(title, fontsize=11)
    fig.tight_layout()
    return fig


def _compare_figure(e: CompareEntry) -> Any:
    assert e.fit is not None
    no_extra: list[tuple[Any, ...]] = []
    panels = [(n, obs, e.fit.fitted.get(n), no_extra) for n, obs in e.observed.items()]
    return _figure(f"{e.theory} on {e.stream}", panels)


def _forecast_figure(e: ForecastEntry) -> Any:
    assert e.fit is not None
    panels: list[tuple[str, Any, Any, list[tuple[Any, ...]]]] = []
    for name, (steps, values) in e.observed.items():
        after = steps[steps > e.fit.fit_until]
        extra: list[tuple] = [("axvline", (e.cutoff,), {"color": "0.5", "ls": ":", "lw": 1})]
        if after.size:
            pred = e.fit.predict(after)[name]
            extra.append(
                ("plot", (after, pred), {"color": "C3", "lw": 2, "label": "theory (forecast)"})
            )
        seen = values[steps <= e.fit.fit_until]
        if after.size and seen.size:
            power = power_law_extrapolation(
                steps[steps <= e.fit.fit_until], seen, after, origin=steps[0]
            )
            extra.append(
                ("plot", (after, power), {"color": "C1", "ls": "-.", "label": "power law"})
            )
        if seen.size:
            extra.append(
                (
                    "axhline",
                    (seen[-1],),
                    {"color": "C2", "ls": "--", "lw": 1, "label": "last value"},
                )
            )
        panels.append((name, (steps, values), e.fit.fitted.get(name), extra))
    return _figure(f"{e.theory} on {e.stream}: fitted up to step {e.cutoff:g}", panels)


def _img(png: Path, caption: str) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{_text(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{_text(caption)}</figcaption></figure>"
    )


def _html_table(df: pd.DataFrame) -> str:
    if df.empty:
        return "<p>No rows.</p>"
    head = "".join(f"<th>{_text(c)}</th>" for c in df.columns)
    body = "".join(
        "<tr>"
        + "".join(
            "<td></td>" if (isinstance(v, float) and np.isnan(v)) else f"<td>{_cell(v)}</td>"
            for v in row
        )
        + "</tr>"
        for row in df.itertuples(index=False)
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _write_dir(out: Path, command: str, fill: Any) -> Path:
    """Build the directory in a temporary sibling, then swap it in (no half-written output).

    ``out`` is replaced only when it is ``command``'s own earlier output (checked before
    anything is written and again just before the swap).
    """
    out = check_output_dir(out, command)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    try:
        (tmp / "figures").mkdir()
        fill(tmp)
        write_output_marker(tmp, command)
        check_output_dir(out, command)
        if out.exists():
            old = out.with_name(f".{out.name}-old-{os.getpid()}")
            os.replace(out, old)
            os.replace(tmp, out)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return out / "report.html"


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    fig.savefig(path, dpi=100, format="png", bbox_inches="tight")
    plt.close(fig)


def _page(title: str, intro: str, table: pd.DataFrame, figures: list[str]) -> str:
    absent = theories_without_confrontation()
    note = (
        "<p>Theories that declare no confrontation with network runs: "
        f"{_text(', '.join(absent))}.</p>"
        if absent
        else ""
    )
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>
<style>{_CSS}</style></head><body>
<h1>{_text(title)}</h1>{intro}{note}
<h2>Table</h2>{_html_table(table)}
<p>Every number: <a href="table.csv">table.csv</a>.</p>
<h2>Figures</h2>{"".join(figures) or "<p>No theory could be fitted to this run.</p>"}
</body></html>
"""


def _write(
    out: Path,
    command: str,
    entries: list[Any],
    table: pd.DataFrame,
    draw: Any,
    verb: str,
    head: tuple[str, str],
) -> Path:
    """Figures of the fitted entries (``draw(entry)``), ``table.csv`` and ``report.html``."""

    def fill(tmp: Path) -> None:
        figures = []
        for e in entries:
            if e.fit is not None and e.observed:
                png = tmp / "figures" / f"{_safe(e.theory)}-{_safe(e.stream)}.png"
                _save(draw(e), png)
                figures.append(_img(png, f"{e.theory} {verb} {e.stream}"))
        table.to_csv(tmp / "table.csv", index=False)
        (tmp / "report.html").write_text(_page(head[0], head[1], table, figures))

    return _write_dir(out, command, fill)


def write_compare_report(entries: list[CompareEntry], run_dir: Path, out: Path) -> Path:
    """Write the compare table, figures and ``report.html`` into ``out``."""
    intro = (
        f"<p>Every theory fitted to the whole of run <code>{_text(run_dir)}</code>: "
        "fitted parameters, goodness of fit on the recorded trajectory, and what each "
        "predicts beyond it.</p>"
    )
    table = compare_table(entries)
    return _write(out, "compare", entries, table, _compare_figure, "fitted to", ("compare", intro))


def write_forecast_report(
    entries: list[ForecastEntry], run_dir: Path, out: Path, at: float
) -> Path:
    """Write the forecast table, figures and ``report.html`` into ``out``."""
    intro = (
        f"<p>Each theory fitted to the first {at:g} of run "
        f"<code>{_text(run_dir)}</code> and asked for the last record. "
        "<code>decades_off</code> is |log10(predicted / actual)|; the baselines are the "
        "last value carried forward and a power law fitted to the later half of the "
        "records the theory saw.</p>"
    )
    table = forecast_table(entries)
    head = (f"forecast at {at:g}", intro)
    return _write(out, "forecast", entries, table, _forecast_figure, "forecast on", head)
