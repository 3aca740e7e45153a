"""Reports of ``ncdyn compare`` and ``ncdyn forecast``: tables, figures and one HTML page.

Both write into an output directory (by default ``RUN_DIR/compare`` and
``RUN_DIR/forecast[-<at>]``): ``table.csv`` (every number), ``figures/*.png`` and
``report.html`` with the figures embedded, and a marker ``.ncdynamics-compare`` /
``.ncdynamics-forecast`` that says whose output it is. The directory is replaced as a whole,
so an interrupted write never leaves a mix of old and new files, and only when it holds that
same command's earlier output (:func:`ncdynamics.runs._outputs.write_output_dir`, the one
home of that rule): a run, a folder of runs or anyone's other files are refused, untouched.

The compare page has one section per theory: for each stream its verdict and reason, the
regime checks, a parameter table (value, 95% interval, unit, the value the theory predicts
from the run's settings, the search bound and required sign), the skill numbers behind the
verdict, and one figure: measured against fitted for every fitted observable, the residuals
below, and the parameters and skill of the windows against training time. ``ncdyn compare``
on several runs writes ``summary.csv``, ``summary.tex`` and ``summary.html`` instead
(:func:`write_summary_report`). Pages are laid out to fit 1400 px wide windows: tables wrap
their cells or scroll inside their own box, figures scale to the page width.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from contextvars import ContextVar
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..experiments.compare import CompareEntry, compare_table, windows_table
from ..experiments.compare_many import RunResult, long_table, summary_table
from ..experiments.forecast import ForecastEntry, forecast_table
from ..experiments.streams import confrontations, read_run, theories_without_confrontation
from ..runs._outputs import write_output_dir
from ..theories.verdict import observable_scale
from .html import _CSS, _text

__all__ = ["write_compare_report", "write_forecast_report", "write_summary_report"]

#: Colour of each verdict, on the page and in the window figure.
VERDICT_COLOURS = {
    "holds": "#1a7f37",
    "holds in a window": "#2f6fb5",
    "not distinguished": "#8c6d1f",
    "fails": "#b42318",
    "degenerate": "#9a6700",
    "out of regime": "#6e40c9",
    "missing": "#666666",
    "error": "#444444",
}

_OWN_CSS = (
    """
table.wide{display:block;max-width:100%;overflow-x:auto}
table.fit{width:100%;table-layout:fixed}
table.fit th,table.fit td{white-space:normal;overflow-wrap:anywhere;font-size:.85em}
td,th{overflow-wrap:break-word} th{white-space:nowrap} td.num{text-align:right;white-space:nowrap}
.verdict{display:inline-block;padding:.05em .5em;border-radius:.7em;color:#fff;
font-size:.85em;white-space:nowrap;background:#444}
.reason{margin:.3em 0 .6em 0} .muted{color:#666;font-size:.9em}
h2.theory{margin-top:1.8em} p.stream{font-weight:600;font-size:1.02em;margin:1.2em 0 .3em 0}
img{max-width:100%;height:auto}
"""
    + "".join(
        f".v-{_verdict.replace(' ', '-')}{{background:{_colour}}}"
        for _verdict, _colour in VERDICT_COLOURS.items()
    )
    + "\n"
)


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "._-" else "-" for c in name).strip("-") or "run"


def _num(v: Any, digits: int = 4) -> str:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.floating, np.integer)):
        return _text(v)
    x = float(v)
    if math.isnan(x):
        return ""
    return _text(f"{x:.{digits}g}")


def _badge(verdict: str) -> str:
    slug = verdict.replace(" ", "-") if verdict in VERDICT_COLOURS else "unknown"
    return f'<span class="verdict v-{slug}">{_text(verdict)}</span>'


def _table(
    head: Sequence[str],
    rows: Sequence[Sequence[str]],
    numeric: Sequence[int] = (),
    *,
    fit: bool = False,
) -> str:
    """An HTML table in a box that scrolls by itself, or (``fit``) one whose columns share
    the page width and wrap their text; cells are HTML already."""
    if not rows:
        return ""
    th = "".join(f"<th>{_text(h)}</th>" for h in head)
    body = "".join(
        "<tr>"
        + "".join(
            f'<td class="num">{c}</td>' if i in numeric else f"<td>{c}</td>"
            for i, c in enumerate(r)
        )
        + "</tr>"
        for r in rows
    )
    return f'<table class="{"fit" if fit else "wide"}"><tr>{th}</tr>{body}</table>'


# ---------------------------------------------------------------------------- figures
_DPI = 80
#: Widest figure in px: the page's text column (1100 px less its padding) shows it unscaled.
_MAX_FIGURE_PX = 1060
#: Type sizes in points: at _DPI, 9 pt is 10 px.
_TYPE_PT, _TITLE_PT = 9, 10


def _observable_title(name: str) -> str:
    """A panel title: the metric's label and unit where ncdynamics knows it, and the key."""
    from .labels import label

    lab = label(name)
    if not lab.known:
        return name
    unit = f" ({lab.unit})" if lab.unit else ""
    return f"{lab.short}{unit}: {name}"


def _log_axis(values: Any) -> bool:
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    return bool(v.size) and bool(np.all(v > 0)) and float(np.ptp(np.log10(v))) > 1


def _scaled(values: Any, scale: str) -> Any:
    v = np.asarray(values, dtype=np.float64)
    if scale == "log":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.log10(np.abs(v))
    return v


def _compare_figure(e: CompareEntry) -> Any:
    """Measured vs fitted (top), residuals (middle), windows against time (bottom)."""
    import matplotlib.pyplot as plt

    fit = e.fit
    if fit is None:
        raise ValueError(f"entry {e.theory} on {e.stream} has no fit to draw.")
    names = [n for n in e.observed if n in fit.curves.fitted] + [
        n for n in e.observed if n not in fit.curves.fitted
    ]
    win_params = _window_params(e)
    n_bottom = len(win_params) + 1 if e.windows else 0
    cols = max(len(names), n_bottom, 1)
    rows = 3 if e.windows else 2
    # at most _MAX_FIGURE_PX wide, so the page shows it unscaled and 9 pt type is >= 10 px
    width = min(3.5 * cols, _MAX_FIGURE_PX / _DPI)
    fig = plt.figure(figsize=(width, 2.8 * rows), dpi=_DPI)
    # fixed margins instead of tight_layout: the layout pass cost as much as the drawing
    grid = fig.add_gridspec(
        rows,
        cols,
        height_ratios=[1.25, 0.8, 1.0][:rows],
        left=0.6 / width * 1.6,
        right=1 - 0.15 / cols,
        bottom=0.45 / (2.8 * rows) * 1.4,
        top=1 - 0.42 / (2.8 * rows) * 1.4,
        wspace=0.32,
        hspace=0.55,
    )
    for i, name in enumerate(names):
        steps, values = e.observed[name]
        ax = fig.add_subplot(grid[0, i])
        ax.plot(steps, values, "o", ms=2.5, color="0.35", label="measured")
        curve = fit.curves.fitted.get(name)
        if curve is not None:
            ax.plot(*curve, "-", color="C0", lw=1.8, label="theory (fit)")
        if e.verdict.window:
            ax.axvspan(*e.verdict.window, color="#2f6fb5", alpha=0.12, label="holds here")
        if _log_axis(values):  # the fitted curve must not take the axis off the data
            _measured_limits(ax, values)
        ax.set_title(_observable_title(name), fontsize=_TITLE_PT)
        ax.tick_params(labelsize=_TYPE_PT)
        if i == 0:
            ax.legend(fontsize=_TYPE_PT)
        res_ax = fig.add_subplot(grid[1, i])
        if curve is not None:
            scale = observable_scale(fit, name, values)
            common, io, ic = np.intersect1d(steps, curve[0], return_indices=True)
            res = _scaled(values[io], scale) - _scaled(curve[1][ic], scale)
            res_ax.axhline(0, color="0.6", lw=0.8)
            res_ax.plot(common, res, ".-", ms=2.5, lw=0.6, color="C3")
            res_ax.set_ylabel(
                "log10 meas./fit" if scale == "log" else "meas. − fit", fontsize=_TYPE_PT
            )
        else:
            res_ax.text(0.5, 0.5, "not fitted", ha="center", va="center", fontsize=_TYPE_PT)
        res_ax.set_xlabel(_time_unit(e), fontsize=_TYPE_PT)
        res_ax.tick_params(labelsize=_TYPE_PT)
    if e.windows:
        for j, pname in enumerate(win_params):
            _window_panel(fig.add_subplot(grid[2, j]), e, pname)
        _skill_panel(fig.add_subplot(grid[2, len(win_params)]), e)
    fig.suptitle(f"{e.theory} on {e.stream}: {e.verdict.verdict}", fontsize=_TITLE_PT + 1)
    return fig


def _windows_figure(e: CompareEntry) -> Any:
    """The windows of a stream along training time, coloured by verdict (no fit to draw)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(min(8.0, _MAX_FIGURE_PX / _DPI), 1.9), dpi=_DPI)
    seen = set()
    for w in e.windows:
        verdict = w.verdict.verdict
        ax.plot(
            [w.since, w.until],
            [0, 0],
            "-",
            lw=10,
            solid_capstyle="butt",
            color=VERDICT_COLOURS.get(verdict, "#444"),
            label=None if verdict in seen else verdict,
        )
        seen.add(verdict)
    ax.set_yticks([])
    ax.set_xlabel(_time_unit(e), fontsize=_TYPE_PT)
    ax.tick_params(labelsize=_TYPE_PT)
    ax.set_title(f"{e.theory} on {e.stream}: windows by verdict", fontsize=_TITLE_PT)
    ax.legend(
        fontsize=_TYPE_PT, loc="upper center", bbox_to_anchor=(0.5, -0.45), ncol=4, frameon=False
    )
    fig.subplots_adjust(bottom=0.45, top=0.82, left=0.04, right=0.98)
    return fig


def _measured_limits(ax: Any, values: Any) -> None:
    """Log scale for a positive observable spanning decades, and y-limits around what was
    measured (a forecast that runs off to 1e300 must not squash the data to a line)."""
    v = np.asarray(values, dtype=np.float64)
    v = v[np.isfinite(v)]
    if not v.size:
        return
    if _log_axis(v):
        ax.set_yscale("log")
        ax.set_ylim(float(v.min()) / 10, float(v.max()) * 10)
    elif bool(np.all(v > 0)):
        ax.set_ylim(float(v.min()) / 3, float(v.max()) * 3)
    else:
        pad = float(np.ptp(v)) or max(abs(float(v.max())), 1.0)
        ax.set_ylim(float(v.min()) - pad, float(v.max()) + pad)


def _window_params(e: CompareEntry) -> list[str]:
    """Parameters drawn against time: those with intervals, else those that vary, at most 3."""
    if not e.windows:
        return []
    names = list(e.fit.intervals) if e.fit else []
    if not names:
        seen: dict[str, set[float]] = {}
        for w in e.windows:
            for k, v in w.params.items():
                seen.setdefault(k, set()).add(round(v, 12))
        names = [k for k, vs in seen.items() if len(vs) > 1]
    return names[:3]


def _window_panel(ax: Any, e: CompareEntry, pname: str) -> None:
    for w in e.windows:
        if pname not in w.params:
            continue
        colour = VERDICT_COLOURS.get(w.verdict.verdict, "#444")
        v = w.params[pname]
        ax.plot([w.since, w.until], [v, v], "-", color=colour, lw=2)
        lo, hi = w.intervals.get(pname, (math.nan, math.nan))
        if interval_determined(lo, hi, v):  # an unbounded one is not drawn as a spike
            mid = (w.since + w.until) / 2
            ax.plot([mid, mid], [lo, hi], "-", color=colour, lw=0.9)
    p = e.fit.params.get(pname) if e.fit is not None else None
    if p is not None:
        ax.axhline(p.value, color="0.3", ls="--", lw=0.8, label="whole stream")
    if p is not None and p.expected is not None:
        ax.axhline(p.expected, color="C2", ls=":", lw=1.2, label="from settings")
    unit = p.unit if p is not None else ""
    ax.set_title(f"{pname} per window" + (f" ({unit})" if unit else ""), fontsize=_TITLE_PT)
    ax.set_xlabel(_time_unit(e), fontsize=_TYPE_PT)
    ax.tick_params(labelsize=_TYPE_PT)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=_TYPE_PT)


def _skill_panel(ax: Any, e: CompareEntry) -> None:
    drawn = False
    for w in e.windows:
        r2 = [v for k, v in w.verdict.skill.items() if k.endswith(".r2") and math.isfinite(v)]
        if not r2:
            continue
        colour = VERDICT_COLOURS.get(w.verdict.verdict, "#444")
        y = max(min(r2), -1.0)
        ax.plot([w.since, w.until], [y, y], "-", color=colour, lw=2)
        drawn = True
    if not drawn:  # no window has an R²: say so instead of an empty panel
        for w in e.windows:
            colour = VERDICT_COLOURS.get(w.verdict.verdict, "#444")
            ax.plot([w.since, w.until], [0, 0], "-", color=colour, lw=6)
        ax.text(
            0.5,
            0.7,
            "no window has an R²\n(colour: verdict)",
            transform=ax.transAxes,
            ha="center",
            va="center",
            fontsize=_TYPE_PT,
        )
        ax.set_yticks([])
    ax.axhline(0.9, color="0.5", ls=":", lw=0.8)
    ax.set_ylim(-1.05, 1.05)
    ax.set_title("worst R² per window (colour: verdict)", fontsize=_TITLE_PT)
    ax.set_xlabel(_time_unit(e), fontsize=_TYPE_PT)
    ax.tick_params(labelsize=_TYPE_PT)


def _forecast_figure(e: ForecastEntry) -> Any:
    """Forecasts from every origin with their bands (top), RMSE against the cut (bottom)."""
    import matplotlib.pyplot as plt

    names = list(e.observed)
    fig, axes = plt.subplots(2, len(names), figsize=(3.8 * len(names), 5.4), dpi=90, squeeze=False)
    fitted = [o for o in e.origins if o.fit is not None]
    colours = plt.get_cmap("viridis")(np.linspace(0.1, 0.85, max(len(fitted), 1)))
    for i, name in enumerate(names):
        steps, values = e.observed[name]
        ax = axes[0, i]
        ax.plot(steps, values, "o", ms=2.5, color="0.35", label="measured")
        for o, colour in zip(fitted, colours, strict=False):
            after = steps[steps > o.cut]
            if o.fit is None or not after.size:
                continue
            try:
                with np.errstate(all="ignore"):
                    pred = np.asarray(o.fit.curves.predict(after)[name], dtype=np.float64)
            except Exception:
                continue
            pred = np.where(np.isfinite(pred), pred, np.nan)
            ax.plot(after, pred, "-", color=colour, lw=1.3, label=f"from {o.cut:g}")
            ax.axvline(o.cut, color=colour, ls=":", lw=0.8)
            if o.fit.curves.band is not None:
                try:
                    lo, hi = o.fit.curves.band(after)[name]
                    ax.fill_between(after, lo, hi, color=colour, alpha=0.15, lw=0)
                except Exception:
                    pass
        _measured_limits(ax, values)
        ax.set_title(_observable_title(name), fontsize=_TITLE_PT)
        ax.tick_params(labelsize=_TYPE_PT)
        ax.legend(fontsize=_TYPE_PT)
        ax2 = axes[1, i]
        table = pd.DataFrame(e.scores)
        if not table.empty:
            mine = table[table["observable"] == name]
            for method, g in mine.groupby("method", sort=False):
                g = g.drop_duplicates("cut").sort_values("cut")
                rmse = np.where(np.isfinite(g["rmse"]), g["rmse"], np.nan)
                ax2.plot(g["cut"], rmse, "o-", ms=3, lw=1, label=str(method))
            unit = mine["error_unit"].iloc[0] if not mine.empty else ""
            ax2.set_ylabel(f"RMSE after the cut ({unit})", fontsize=_TYPE_PT)
            ax2.legend(fontsize=_TYPE_PT)
        ax2.set_xlabel("cut (step)", fontsize=_TYPE_PT)
        ax2.tick_params(labelsize=_TYPE_PT)
    fig.suptitle(f"{e.theory} on {e.stream}: forecasts from {len(e.origins)} origins", fontsize=10)
    return fig


def _img(png: Path, caption: str) -> str:
    data = base64.b64encode(png.read_bytes()).decode("ascii")
    return (
        f'<figure><img alt="{_text(caption)}" src="data:image/png;base64,{data}">'
        f"<figcaption>{_text(caption)}</figcaption></figure>"
    )


def _save(fig: Any, path: Path) -> None:
    import matplotlib.pyplot as plt

    # light PNG compression: the figures are embedded once, and zlib's best effort was a
    # fifth of the report's time
    fig.savefig(path, format="png", pil_kwargs={"compress_level": 1})
    plt.close(fig)


# ---------------------------------------------------------------------------- sections
def _declared_assumptions(theory: str) -> list[Any]:
    """Every assumption the theory declares (its Confrontation), ``[]`` if it has none."""
    from ..theories import available, get

    if theory not in available():
        return []
    conf = get(theory).load_confrontation()
    return list(conf.assumptions) if conf is not None else []


def _regime_html(e: CompareEntry | ForecastEntry) -> str:
    checked = {a.name: reason for a, reason in e.regime}
    declared = _declared_assumptions(e.theory)
    names = {a.name for a in declared}
    assumptions = declared + [a for a, _ in e.regime if a.name not in names]
    if not assumptions:
        return '<p class="muted">The theory declares no assumptions to check.</p>'
    unrecorded = set(getattr(e, "unrecorded", ()))
    rows = []
    for a in assumptions:
        if a.name not in checked:
            state = "not checked (the verdict came before the regime check)"
        elif checked[a.name]:
            state = f"outside: {_text(checked[a.name])}"
        elif a.name in unrecorded:
            keys = ", ".join(a.settings)
            state = f"not recorded: the run records none of {_text(keys)}"
        elif isinstance(e, CompareEntry):
            state = "inside"
        else:
            state = "inside, or not recorded"
        rows.append([_text(a.name), _text(a.statement), state])
    return _table(["assumption", "the theory assumes", "this stream"], rows)


def _params_html(e: CompareEntry) -> str:
    fit = e.fit
    if fit is None:
        return ""
    rows = []
    any_interval = bool(fit.intervals)
    for name, p in fit.params.items():
        if p.interval is not None:
            interval = _interval_text(*p.interval, p.value)
        else:
            interval = "(a constant)" if any_interval else "—"
        bound = p.bound
        rows.append(
            [
                f"<code>{_text(name)}</code>",
                _num(p.value),
                interval,
                _text(p.unit),
                _num(p.expected) if p.expected is not None else "",
                f"{_num(bound[0], 3)} to {_num(bound[1], 3)}" if bound else "",
                {1: "positive", -1: "negative"}.get(p.sign, ""),
            ]
        )
    method = (
        f'<p class="muted">95% intervals: {_text(fit.uncertainty.method)}.</p>'
        if fit.uncertainty.method
        else '<p class="muted">This fit gives no intervals.</p>'
    )
    head = ["parameter", "fitted", "95% interval", "unit", "from settings", "search", "sign"]
    return _table(head, rows, numeric=(1,)) + method


#: An interval end this many decades from the estimate is not a bound the data set.
_UNDETERMINED_DECADES = 6.0


def interval_determined(lo: float, hi: float, value: float) -> bool:
    """Whether ``[lo, hi]`` bounds ``value`` at all: both ends finite, and neither end more
    than a million times (or a millionth) the estimate (``5.5e-96 to 7.3e+100`` is not)."""
    if not (math.isfinite(lo) and math.isfinite(hi)):
        return False
    scale = abs(value) if math.isfinite(value) and value != 0 else max(abs(lo), abs(hi), 1e-300)
    for end in (lo, hi):
        if end != 0 and abs(math.log10(abs(end) / scale)) > _UNDETERMINED_DECADES:
            return False
    return True


def _interval_text(lo: float, hi: float, value: float) -> str:
    """An interval for the page: ``lo to hi``, or "not determined" with the reason."""
    if interval_determined(lo, hi, value):
        return f"{_num(lo)} to {_num(hi)}"
    return "not determined (the records do not bound it)"


def _skill_html(e: CompareEntry) -> str:
    fit = e.fit
    if fit is None or not e.verdict.skill:
        return ""
    what = (
        "r2",
        "skill_vs_power_law",
        "ahead_skill_vs_persistence",
        "ahead_skill_vs_power_law",
        "n",
    )
    rows = []
    for name in fit.curves.fitted:
        nums = [e.verdict.skill.get(f"{name}.{w}", math.nan) for w in what]
        if all(isinstance(x, float) and math.isnan(x) for x in nums):
            continue
        rows.append([f"<code>{_text(name)}</code>", *(_num(x, 3) for x in nums)])
    head = [
        "observable",
        "R² (own scale)",
        "skill vs power law",
        "1 ahead vs last value",
        "1 ahead vs power law",
        "records",
    ]
    return _table(head, rows, numeric=(1, 2, 3, 4, 5))


def _windows_html(e: CompareEntry) -> str:
    """The per-window verdicts, as the terminal prints them, with units on the spans."""
    if not e.windows:
        return ""
    unit = _time_unit(e)
    rows = [
        [
            f"{w.since:g} to {w.until:g}",
            str(w.n_records),
            _badge(w.verdict.verdict),
            _text(w.verdict.reason),
        ]
        for w in e.windows
    ]
    return "<p>Windows:</p>" + _table([f"window ({unit}s)", "records", "verdict", "reason"], rows)


#: What a step of the run being written counts (set by :func:`write_compare_report`).
_RUN_UNIT: ContextVar[str | None] = ContextVar("_RUN_UNIT", default=None)


def _time_unit(e: CompareEntry | ForecastEntry) -> str:
    """What a step of the stream counts: ``epoch`` for a run whose steps are its epochs
    (as the run report reads it), else ``step``."""
    unit = _RUN_UNIT.get()
    if unit is not None:
        return unit
    for reason in [getattr(w.verdict, "reason", "") for w in getattr(e, "windows", [])]:
        if " epoch" in str(reason):
            return "epoch"
    return "step"


def _run_unit(run_dir: Path) -> str | None:
    from .figures import _counts_epochs

    try:
        return "epoch" if _counts_epochs(read_run(run_dir)) else "step"
    except Exception:  # noqa: BLE001 - an unreadable run: the entries' own words decide
        return None


def _extras_html(e: CompareEntry) -> str:
    fit = e.fit
    if fit is None:
        return _windows_html(e)
    parts = []
    kv = [(k, v) for k, v in {**fit.shown.goodness, **fit.shown.predictions}.items()]
    if kv:
        rows = [[f"<code>{_text(k)}</code>", _num(v)] for k, v in kv]
        parts.append(_table(["goodness and predictions", "value"], rows, numeric=(1,)))
    if fit.shown.alternatives:
        cols = sorted({k for d in fit.shown.alternatives.values() for k in d})
        rows = [
            [_text(variant), *(_num(d.get(c, math.nan)) for c in cols)]
            for variant, d in fit.shown.alternatives.items()
        ]
        parts.append("<p>Readings of the theory compared:</p>" + _table(["variant", *cols], rows))
    parts.append(_windows_html(e))
    if fit.shown.notes:
        parts.append(f'<p class="muted">{_text("; ".join(fit.shown.notes))}</p>')
    return "".join(parts)


def _entry_head(e: CompareEntry | ForecastEntry) -> str:
    return (
        f'<p class="stream">stream <code>{_text(e.stream or "(none)")}</code> '
        f"{_badge(e.verdict.verdict)}</p>"
        f'<p class="reason">{_text(e.verdict.reason)}</p>'
    )


def _verdicts_table(entries: Sequence[CompareEntry | ForecastEntry]) -> str:
    rows = [
        [
            _text(e.theory),
            f"<code>{_text(e.stream)}</code>",
            _badge(e.verdict.verdict),
            _text(e.verdict.reason),
        ]
        for e in entries
    ]
    return _table(["theory", "stream", "verdict", "reason"], rows)


def _summaries() -> dict[str, str]:
    return {c.theory: c.summary for c in confrontations()}


def _citation(theory: str) -> str | None:
    """The theory's citation (what its reasons cite as [1]); ``None`` when the registry does
    not know it (a confrontation made up in a test)."""
    from .. import theories

    try:
        return theories.get(theory).citation
    except (KeyError, ValueError):
        return None


def _absent_note() -> str:
    absent = theories_without_confrontation()
    if not absent:
        return ""
    return (
        "<p>Theories that declare no confrontation with network runs: "
        f"{_text(', '.join(absent))}.</p>"
    )


def _page(title: str, intro: str, body: str) -> str:
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)}</title>
<style>{_CSS}{_OWN_CSS}</style></head><body>
<h1>{_text(title)}</h1>{intro}{_absent_note()}
{body}
<p>Every number: <a href="table.csv">table.csv</a>.</p>
</body></html>
"""


def _sections(entries: Sequence[Any], section: Callable[[Any], str]) -> str:
    summaries = _summaries()
    by_theory: dict[str, list[Any]] = {}
    for e in entries:
        by_theory.setdefault(e.theory, []).append(e)
    out = []
    for theory, group in by_theory.items():
        head = f'<h2 class="theory">{_text(theory)}</h2>'
        if theory in summaries:
            head += f'<p class="muted">{_text(summaries[theory])}</p>'
        citation = _citation(theory)
        if citation is not None:
            head += f'<p class="muted">[1] {_text(citation)}</p>'
        out.append(head + "".join(section(e) for e in group))
    return "".join(out)


# ---------------------------------------------------------------------------- writers
def _write_pages(out: Path, command: str, fill: Callable[[Path], None]) -> Path:
    """``fill`` a fresh directory (with an empty ``figures/``) that replaces ``out`` whole
    (:func:`ncdynamics.runs._outputs.write_output_dir`: marker, check, swap), then link the
    page from the run's own report; the path of ``report.html``."""

    def with_figures(tmp: Path) -> None:
        (tmp / "figures").mkdir()
        fill(tmp)

    out = write_output_dir(out, command, with_figures)
    from .html import link_output_pages

    link_output_pages(out.parent)  # the run's own report links to this page
    return out / "report.html"


def write_compare_report(
    entries: list[CompareEntry], run_dir: Path, out: Path, *, note: str | None = None
) -> Path:
    """Write the compare table, figures and ``report.html`` into ``out``; ``note`` (such as
    "the run is still training") heads the page."""
    token = _RUN_UNIT.set(_run_unit(Path(run_dir)))
    try:
        return _write_compare_report(entries, run_dir, out, note)
    finally:
        _RUN_UNIT.reset(token)


def _write_compare_report(
    entries: list[CompareEntry], run_dir: Path, out: Path, note: str | None
) -> Path:
    intro = (f"<p><strong>{_text(note)}</strong></p>" if note else "") + (
        f"<p>Every theory confronted with run <code>{_text(run_dir)}</code>: the regime it "
        "assumes checked against the run's settings, the fit to each stream with 95% "
        "intervals, and a verdict (see docs/confront.md for the rules). The windows refit "
        "the theory on parts of training time.</p>"
    )

    def fill(tmp: Path) -> None:
        def section(e: CompareEntry) -> str:
            html = _entry_head(e) + _regime_html(e)
            if e.fit is not None and e.observed:
                png = tmp / "figures" / f"{_safe(e.theory)}-{_safe(e.stream)}.png"
                _save(_compare_figure(e), png)
                html += _params_html(e) + _skill_html(e)
                html += _img(
                    png,
                    f"{e.theory} fitted to {e.stream}: measured and fitted, "
                    "residuals, and the windows",
                )
                html += _extras_html(e)
            elif e.windows:  # nothing fitted to the whole stream: the windows still show
                png = tmp / "figures" / f"{_safe(e.theory)}-{_safe(e.stream)}-windows.png"
                _save(_windows_figure(e), png)
                html += _img(png, f"{e.theory} on {e.stream}: the windows and their verdicts")
                html += _windows_html(e)
            return html

        body = "<h2>Verdicts</h2>" + _verdicts_table(entries) + _sections(entries, section)
        compare_table(entries).to_csv(tmp / "table.csv", index=False)
        windows_table(entries).to_csv(tmp / "windows.csv", index=False)
        (tmp / "report.html").write_text(_page("compare", intro, body))

    return _write_pages(out, "compare", fill)


def _forecast_rows(e: ForecastEntry) -> list[list[str]]:
    rows: list[list[str]] = []
    table = pd.DataFrame(e.scores)
    if table.empty:
        return rows
    for (cut, placed, name), g in table.groupby(["cut", "placed_by", "observable"], sort=False):
        by = {str(r["method"]): r for _, r in g.iterrows()}
        theory = next((r for m, r in by.items() if m.startswith("theory")), None)
        last, law = by.get("last value"), by.get("power law")
        rows.append(
            [
                _num(cut),
                _text(placed),
                f"<code>{_text(name)}</code>",
                _num(theory["rmse"], 3) if theory is not None else "",
                _num(last["rmse"], 3) if last is not None else "",
                _num(law["rmse"], 3) if law is not None else "",
                _text(theory["error_unit"]) if theory is not None else "",
                _num(theory.get("skill_vs_last_value", math.nan), 3) if theory is not None else "",
                _num(theory.get("skill_vs_power_law", math.nan), 3) if theory is not None else "",
                _num(theory["coverage"], 2) if theory is not None else "",
            ]
        )
    return rows


def write_forecast_report(
    entries: list[ForecastEntry], run_dir: Path, out: Path, at: float | Sequence[float]
) -> Path:
    """Write the forecast table, figures and ``report.html`` into ``out``."""
    fractions = [at] if isinstance(at, (int, float)) else list(at)
    intro = (
        f"<p>Each theory fitted to run <code>{_text(run_dir)}</code> up to several cut "
        f"points (origins: step fractions {_text(', '.join(f'{a:g}' for a in fractions))} "
        "and points where the first observable has made a fraction of its total change), "
        "and scored on every record after the cut beside two baselines fitted in time: the "
        "last value carried forward and a power law. RMSE is in decades for positive "
        "observables; skill is 1 − MSE_theory / MSE_baseline (positive: the theory is "
        "better); coverage is the share of later records inside the theory's 95% band.</p>"
    )

    def fill(tmp: Path) -> None:
        def section(e: ForecastEntry) -> str:
            html = _entry_head(e) + _regime_html(e)
            rows = _forecast_rows(e)
            if rows:
                head = [
                    "cut",
                    "placed by",
                    "observable",
                    "theory RMSE",
                    "last value",
                    "power law",
                    "unit",
                    "skill vs last",
                    "skill vs power law",
                    "band coverage",
                ]
                html += _table(head, rows, numeric=(0, 3, 4, 5, 7, 8, 9))
            fails = [o for o in e.origins if o.fit is None]
            if fails:
                html += (
                    '<p class="muted">'
                    + "; ".join(
                        _text(f"cut {o.cut:g}: {o.verdict.verdict}, {o.verdict.reason}")
                        for o in fails
                    )
                    + "</p>"
                )
            if e.fit is not None and e.observed:
                png = tmp / "figures" / f"{_safe(e.theory)}-{_safe(e.stream)}.png"
                _save(_forecast_figure(e), png)
                html += _img(png, f"{e.theory} forecast on {e.stream}")
            return html

        body = "<h2>Verdicts</h2>" + _verdicts_table(entries) + _sections(entries, section)
        forecast_table(entries).to_csv(tmp / "table.csv", index=False)
        (tmp / "report.html").write_text(_page("forecast", intro, body))

    return _write_pages(out, "forecast", fill)


# ---------------------------------------------------------------------------- many runs
def _latex_escape(text: str) -> str:
    repl = {
        "\\": r"\textbackslash{}",
        "&": r"\&",
        "%": r"\%",
        "$": r"\$",
        "#": r"\#",
        "_": r"\_",
        "{": r"\{",
        "}": r"\}",
        "~": r"\textasciitilde{}",
        "^": r"\textasciicircum{}",
    }
    return "".join(repl.get(c, c) for c in text)


def summary_latex(table: pd.DataFrame) -> str:
    """``table`` as a LaTeX ``tabular`` (every cell escaped; needs no package)."""
    cols = list(table.columns)
    spec = "l" * len(cols)
    lines = [f"\\begin{{tabular}}{{{spec}}}", "\\hline"]
    lines.append(" & ".join(_latex_escape(str(c)) for c in cols) + r" \\")
    lines.append("\\hline")
    for row in table.itertuples(index=False):
        cells = ["" if (isinstance(v, float) and math.isnan(v)) else str(v) for v in row]
        lines.append(" & ".join(_latex_escape(c) for c in cells) + r" \\")
    lines += ["\\hline", "\\end{tabular}", ""]
    return "\n".join(lines)


def write_summary_report(results: list[RunResult], out: Path) -> Path:
    """Write ``summary.csv`` (one row per run), ``summary.tex``, ``summary.html`` (the
    page, also as ``report.html``) and ``table.csv`` (every number) into ``out``."""
    table = summary_table(results)

    def fill(tmp: Path) -> None:
        table.to_csv(tmp / "summary.csv", index=False)
        long_table(results).to_csv(tmp / "table.csv", index=False)
        (tmp / "summary.tex").write_text(summary_latex(table))
        rows = []
        for rec in table.to_dict("records"):
            cells = []
            for c in table.columns:
                v = rec.get(c)
                if isinstance(v, float) and math.isnan(v):
                    cells.append("")
                elif isinstance(v, str) and v.split(";")[0].split(" [")[0] in VERDICT_COLOURS:
                    verdict = v.split(";")[0].split(" [")[0]
                    cells.append(_badge(verdict) + " " + _text(v[len(verdict) :].lstrip("; ")))
                else:
                    cells.append(_num(v) if isinstance(v, float) else _text(v))
            rows.append(cells)
        intro = (
            f"<p>{len(results)} runs confronted with every theory: one row per run (with the "
            "settings that differ between runs), one column per theory and stream: the "
            "verdict, then the key parameters with their 95% intervals. Also as "
            '<a href="summary.csv">summary.csv</a> and <a href="summary.tex">summary.tex</a>.'
            "</p>"
        )
        page = _page("compare: summary", intro, _table(list(table.columns), rows, fit=True))
        (tmp / "summary.html").write_text(page)
        (tmp / "report.html").write_text(page)

    return _write_pages(out, "compare", fill)
