"""The atlas page: where each theory holds over the cells of a regime atlas.

Writes ``report.html`` and ``figures/*.png`` into an atlas directory
(:mod:`ncdynamics.experiments.atlas`): a summary table of where each theory holds, fails, is
not told apart from a generic curve, and where the data cannot decide; per theory a map of the
cells coloured by verdict share and a table with each cell's reason and key parameters; the
key parameters along each numeric axis beside what the theory predicts; and the dependence
checks. Every value read from disk is escaped.
"""

from __future__ import annotations

import base64
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..experiments.atlas import AXES, KEY_PARAMS, read_atlas
from ..runs._io import atomic_write
from ..theories.verdict import VERDICTS
from .confront import _OWN_CSS, VERDICT_COLOURS, _badge, _num
from .figures import _plain
from .html import _CSS, _text, _text_writer

__all__ = ["atlas_map_figure", "atlas_parameter_figure", "cell_label", "write_atlas_report"]

#: How the summary groups the verdicts.
GROUPS: dict[str, tuple[str, ...]] = {
    "holds": ("holds", "holds in a window"),
    "fails": ("fails",),
    "not distinguished": ("not distinguished",),
    "data cannot decide": ("degenerate", "error"),
    "out of regime": ("out of regime",),
    "missing records": ("missing",),
}


def _axes(cells: pd.DataFrame) -> list[str]:
    axes = cells.attrs.get("axes") or [a for a in AXES if a in cells.columns]
    return [a for a in axes if a in cells.columns]


def _varying(cells: pd.DataFrame) -> list[str]:
    return [a for a in _axes(cells) if cells[a].astype(str).nunique() > 1]


def base_point(cells: pd.DataFrame) -> dict[str, str]:
    """The most common value of each varying axis over the cells (the plan's base point,
    since every block varies only its own axes)."""
    return {a: str(cells[a].astype(str).mode().iloc[0]) for a in _varying(cells)}


def cell_label(row: pd.Series, axes: list[str], base: dict[str, str] | None = None) -> str:
    """``loss=mse, lr=0.1``: the settings that differ between the cells; with ``base``, only
    those off the base point (and the loss, always)."""
    shown = [a for a in axes if base is None or a == "loss" or str(row[a]) != base.get(a)]
    return ", ".join(f"{a}={_value(row[a])}" for a in shown) or "the base point"


def _value(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:g}"
    return str(v)


def atlas_map_figure(cells: pd.DataFrame, theory: str) -> Any:
    """One bar per cell, split by the share of its runs with each verdict."""
    import matplotlib.pyplot as plt

    sub = cells[cells["theory"] == theory].reset_index(drop=True)
    axes, base = _varying(cells), base_point(cells)
    labels = [_plain(cell_label(r, axes, base)) for _, r in sub.iterrows()]
    height = max(2.2, 0.26 * len(sub) + 1.2)
    fig, ax = plt.subplots(figsize=(10.5, height))
    left = np.zeros(len(sub))
    y = np.arange(len(sub))
    for v in VERDICTS:
        col = f"share.{v}"
        if col not in sub.columns:
            continue
        share = pd.to_numeric(sub[col], errors="coerce").fillna(0.0).to_numpy(float)
        if not share.any():
            continue
        ax.barh(y, share, left=left, color=VERDICT_COLOURS.get(v, "#444"), label=v, height=0.8)
        left += share
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of the cell's runs (seeds)")
    ax.set_title(_plain(f"{theory}: verdicts per cell"))
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _numeric_axes(cells: pd.DataFrame) -> list[str]:
    out = []
    for a in _varying(cells):
        if AXES.get(a) is None or AXES[a].scale == "category":
            continue
        if pd.to_numeric(cells[a], errors="coerce").notna().all():
            out.append(a)
    return out


def atlas_parameter_figure(cells: pd.DataFrame, theory: str) -> Any | None:
    """Each key parameter of ``theory`` against each numeric axis (one line per combination
    of the other settings; bars: the cell's 95% interval; dashed: the theory's prediction
    from the settings); ``None`` when no parameter was estimated at two settings of an axis."""
    import matplotlib.pyplot as plt

    sub = cells[cells["theory"] == theory]
    panels = _parameter_panels(cells, sub, theory)
    if not panels:
        return None
    base = base_point(cells)
    ncols = min(3, len(panels))
    nrows = math.ceil(len(panels) / ncols)
    fig, axs = plt.subplots(nrows, ncols, figsize=(10.5, 3.2 * nrows), squeeze=False)
    for ax in axs.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (p, a, others, lines) in zip(axs.flat, panels, strict=False):
        for key, g in lines[:8]:
            _parameter_line(ax, g.sort_values(a), (p, a), others, key, base)
        _parameter_axes(ax, sub, p, a)
    fig.suptitle(_plain(f"{theory}: key parameters along each axis (dashed: predicted)"))
    fig.tight_layout()
    return fig


def _parameter_panels(cells: pd.DataFrame, sub: pd.DataFrame, theory: str) -> list[Any]:
    """``(parameter, axis, other axes, lines)`` for every key parameter estimated (positive)
    at two settings or more of a numeric axis, the other settings held (one line each)."""
    panels = []
    for p in KEY_PARAMS.get(theory, ()):
        if p not in sub.columns:
            continue
        have = sub[pd.to_numeric(sub[p], errors="coerce") > 0]
        for a in _numeric_axes(cells):
            others = [o for o in _varying(cells) if o != a]
            groups = list(have.groupby(others, sort=True)) if others else [((), have)]
            lines = [(k, g) for k, g in groups if g[a].nunique() >= 2]
            if lines:
                panels.append((p, a, others, lines))
    return panels


def _parameter_line(
    ax: Any, g: pd.DataFrame, what: tuple[str, str], others: list[str], key: Any, base: Any
) -> None:
    """One line of parameter ``p`` along axis ``a`` (``what``) with its intervals as bars and
    the prediction dashed, labelled by the settings that differ from the base point."""
    p, a = what
    x = pd.to_numeric(g[a]).to_numpy(float)
    v = g[p].to_numpy(float)
    lo = np.clip(v - g[f"{p}.low"].to_numpy(float), 0, None)
    hi = np.clip(g[f"{p}.high"].to_numpy(float) - v, 0, None)
    key_t = key if isinstance(key, tuple) else (key,)
    name = ", ".join(
        f"{o}={_value(k)}"
        for o, k in zip(others, key_t, strict=True)
        if o == "loss" or str(k) != base.get(o)
    )
    line = ax.errorbar(
        x,
        v,
        yerr=[np.nan_to_num(lo), np.nan_to_num(hi, posinf=0)],
        marker="o",
        capsize=2,
        label=_plain(name) or "cells",
    )
    exp = pd.to_numeric(g.get(f"{p}.expected", pd.Series(dtype=float)), errors="coerce")
    if exp.notna().any():
        ax.plot(x, exp.to_numpy(float), ls="--", color=line[0].get_color())


def _parameter_axes(ax: Any, sub: pd.DataFrame, p: str, a: str) -> None:
    """Scales, a tick at each setting of the axis, labels and the legend."""
    from matplotlib.ticker import FuncFormatter, NullFormatter

    ax.set_xscale("log" if AXES[a].scale == "log" else "linear")
    ax.xaxis.set_minor_formatter(NullFormatter())  # a label at each setting, not between
    ax.set_xticks(sorted(set(pd.to_numeric(sub[a], errors="coerce").dropna())))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
    ax.set_yscale("log")
    ax.set_xlabel(_plain(AXES[a].label))
    ax.set_ylabel(_plain(p))
    ax.legend(fontsize=6, frameon=False)


def _embed(path: Path, fig: Any, name: str, caption: str) -> str:
    import matplotlib.pyplot as plt

    png = path / "figures" / f"atlas-{name}.png"
    atomic_write(png, lambda p: fig.savefig(p, dpi=100, format="png", bbox_inches="tight"))
    plt.close(fig)
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{_text(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{_text(caption)}</figcaption></figure>"
    )


def _summary(cells: pd.DataFrame, axes: list[str]) -> str:
    base = base_point(cells)
    head = "".join(f"<th>{_text(g)}</th>" for g in GROUPS)
    rows = []
    for theory, sub in cells.groupby("theory", sort=True):
        tds = []
        for verdicts in GROUPS.values():
            hit = sub[sub["verdict"].isin(verdicts)]
            names = "; ".join(cell_label(r, axes, base) for _, r in hit.iterrows())
            more = f"<div class='muted'>{_text(names)}</div>" if 0 < len(hit) <= 6 else ""
            tds.append(f"<td>{len(hit)} of {len(sub)}{more}</td>")
        rows.append(f"<tr><th>{_text(theory)}</th>{''.join(tds)}</tr>")
    return (
        "<table class='fit'><colgroup><col style='width:12%'>"
        + "<col style='width:14.6%'>" * len(GROUPS)
        + "</colgroup><tr><th>theory</th>"
        + head
        + "</tr>"
        + "".join(rows)
        + "</table><p class='note'>Cells counted by their most common verdict over seeds; "
        "a cell lists its settings when at most six fall in a group.</p>"
    )


def _share_text(row: pd.Series) -> str:
    parts = []
    for v in VERDICTS:
        s = row.get(f"share.{v}", 0.0)
        if isinstance(s, (int, float)) and s > 0:
            parts.append(f"{v} {s:.0%}")
    return ", ".join(parts)


def _param_text(row: pd.Series, theory: str) -> str:
    parts = []
    for p in KEY_PARAMS.get(theory, ()):
        v = row.get(p)
        if not isinstance(v, (int, float)) or not math.isfinite(v):
            continue
        text = (
            f"{p} = {_num(v, 3)} [{_num(row.get(f'{p}.low'), 3)}, {_num(row.get(f'{p}.high'), 3)}]"
        )
        e = row.get(f"{p}.expected")
        if isinstance(e, (int, float)) and math.isfinite(e):
            text += f"; predicted {_num(e, 3)} (ratio {_num(row.get(f'{p}.ratio'), 3)})"
        parts.append(text)
    return "<br>".join(parts)


def _theory_table(cells: pd.DataFrame, theory: str, axes: list[str]) -> str:
    base = base_point(cells)
    sub = cells[cells["theory"] == theory]
    rows = []
    for _, r in sub.iterrows():
        rows.append(
            "<tr>"
            f"<td>{_text(cell_label(r, axes, base))}</td>"
            f"<td class='num'>{_text(int(r['n_runs']))}</td>"
            f"<td>{_badge(str(r['verdict']))}<div class='muted'>{_text(_share_text(r))}</div></td>"
            f"<td>{_param_text(r, theory)}</td>"
            f"<td><div class='reason'>{_text(r['reason'])}</div></td>"
            "</tr>"
        )
    return (
        "<table class='fit'><colgroup><col style='width:17%'><col style='width:5%'>"
        "<col style='width:14%'><col style='width:22%'><col style='width:42%'></colgroup>"
        "<tr><th>cell</th><th>runs</th><th>verdict (shares)</th><th>key parameters (95%)</th>"
        "<th>reason (first run with that verdict)</th></tr>" + "".join(rows) + "</table>"
    )


def _dependence(deps: pd.DataFrame) -> str:
    if deps.empty:
        return (
            "<p>No predicted dependence could be fitted: no theory gave a determined fit at "
            "two settings of an axis it predicts a dependence along.</p>"
        )
    rows = []
    for _, r in deps.iterrows():
        rows.append(
            "<tr>"
            + "".join(f"<td>{_text(r[c])}</td>" for c in ("theory", "param", "axis", "line"))
            + f"<td class='num'>{_num(r['predicted'], 3)}</td>"
            + f"<td class='num'>{_num(r['slope'], 3)} "
            + f"[{_num(r['low'], 3)}, {_num(r['high'], 3)}]</td>"
            + f"<td>{_text(r['verdict'])}</td><td>{_text(r['reason'])}</td></tr>"
        )
    return (
        "<table class='fit'><tr><th>theory</th><th>parameter</th><th>axis</th><th>line</th>"
        "<th>predicted exponent</th><th>fitted (95%)</th><th>verdict</th><th>numbers</th></tr>"
        + "".join(rows)
        + "</table>"
    )


def write_atlas_report(path: str | os.PathLike[str]) -> Path:
    """Draw the atlas figures and write ``report.html`` into the atlas directory ``path``."""
    path = Path(path)
    found = read_atlas(path)
    cells, deps, meta = found["cells"], found["dependence"], found["meta"]
    (path / "figures").mkdir(exist_ok=True)
    axes = _varying(cells) if not cells.empty else []
    sections = []
    theories = sorted(cells["theory"].dropna().unique()) if not cells.empty else []
    for theory in theories:
        parts = [f"<h2 class='theory' id='{_text(theory)}'>{_text(theory)}</h2>"]
        fig = atlas_map_figure(cells, theory)
        parts.append(_embed(path, fig, f"{theory}-map", f"{theory}: verdict share per cell"))
        pfig = atlas_parameter_figure(cells, theory)
        if pfig is not None:
            parts.append(
                _embed(path, pfig, f"{theory}-params", f"{theory}: key parameters along the axes")
            )
        parts.append(_theory_table(cells, theory, axes))
        sections.append("".join(parts))
    plan = meta.get("plan", {})
    last = meta.get("last", {})
    title = f"regime atlas ({plan.get('preset', '?')})"
    blocks = "".join(
        f"<tr><th>{_text(b.get('name'))}</th><td><code>{_text(b.get('axes'))}</code></td></tr>"
        for b in plan.get("blocks", [])
    )
    summary = _summary(cells, axes) if not cells.empty else "<p>No cell yet.</p>"
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>
<style>{_CSS}{_OWN_CSS}</style></head><body>
<h1>{_text(title)}</h1>
<p>Atlas directory <code>{_text(path)}</code>: base experiment
<code>{_text(plan.get("experiment"))}</code> at preset <code>{_text(plan.get("preset"))}</code>,
{_text(plan.get("seeds"))} seeds per cell, fixed settings
<code>{_text(plan.get("fixed"))}</code>; engine key <code>{_text(meta.get("engine"))}</code>.
Last call: {_text(last.get("runs_now"))} runs and {_text(last.get("confronted_now"))}
confrontations made, {_text(last.get("runs_failed"))} runs failed.
Tables: <a href="cells.csv">cells.csv</a>, <a href="cells.parquet">cells.parquet</a>,
<a href="runs.csv">runs.csv</a>, <a href="dependence.csv">dependence.csv</a>.</p>
<table>{blocks}</table>
<h2>Where each theory holds</h2>{summary}
<h2>Dependence on the settings, against the theories' predictions</h2>{_dependence(deps)}
{"".join(sections)}
</body></html>
"""
    return atomic_write(path / "report.html", _text_writer(doc))
