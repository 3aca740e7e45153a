"""A self-contained HTML report per run: config, status, summary, every figure embedded.

Everything a run directory holds is data to show, never markup: each value is escaped for
text and for attributes (:func:`_text`), class names keep only safe characters
(:func:`_state_class`), and links are relative, URL-quoted paths (:func:`_href`), so a
crafted ``status.json``, config, summary or directory name cannot put active content or a
``javascript:`` link into a report. The same helpers serve the index, sweep and
compare/forecast reports.
"""

from __future__ import annotations

import base64
import html
import json
import os
import warnings
from collections.abc import Callable
from pathlib import Path, PurePath, PurePosixPath
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from .._reasons import one_line_reason
from ..runs import Run, RunCorruptError
from ..runs._io import atomic_write, read_bounded
from ._reading import read_run
from .figures import (
    _counts_epochs,
    class_means_figures,
    lr_changes,
    metric_figures,
    overview_figure,
    static_metrics,
)
from .labels import FAMILIES, label, split_names

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["Report", "write_figures", "write_report"]

#: The largest figure embedded into a report (a run's own PNGs are well under 1 MiB).
FIGURE_LIMIT = 32 * 2**20

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em;margin-bottom:.2em} h2{font-size:1.15em;border-bottom:1px solid #ddd;
padding-bottom:.2em;margin-top:1.6em}
table{border-collapse:collapse;font-size:.9em;margin:.5em 0}
td,th{border:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
th{background:#f4f4f4} figure{margin:1em 0} img{max-width:100%;border:1px solid #eee}
figcaption{font-size:.85em;color:#555} .state-completed{color:#1a7f37}
.state-failed{color:#b42318} .state-running{color:#9a6700} code{font-size:.9em}
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em;white-space:pre-wrap}
table{display:block;max-width:100%;overflow-x:auto} td code{overflow-wrap:anywhere}
th .unit,td .unit{display:block;color:#666;font-weight:normal;font-size:.8em}
p.note{color:#444;font-size:.9em}
"""


def _text(v: Any) -> str:
    """``str(v)`` escaped for HTML text and for quoted attribute values alike."""
    return html.escape(str(v), quote=True)


def _state_class(state: Any) -> str:
    """A CSS class ``state-<state>`` keeping only letters, digits and ``-``."""
    word = "".join(c for c in str(state) if c.isascii() and (c.isalnum() or c == "-"))
    return f"state-{word or 'unknown'}"


def _href(target: str | PurePath) -> str:
    """A link to ``target``, a path relative to the page, URL-quoted and escaped for an
    attribute. Never a scheme (``:`` is quoted to ``%3A``), a host or an absolute path.

    Raises
    ------
    ValueError
        If ``target`` is absolute or climbs out with ``..``.
    """
    rel = PurePosixPath(PurePath(target).as_posix())
    if rel.is_absolute() or ".." in rel.parts:
        raise ValueError(f"`target` must be a relative path inside the report's folder; got {rel}.")
    return _text(quote(rel.as_posix(), safe="/=,+@"))


def _json_object(run: Run, name: str) -> dict[str, Any]:
    """``run.<name>`` (``status``, ``config`` or ``summary``) as a dict.

    Raises
    ------
    ValueError
        Naming the file, when it is not valid JSON or holds something other than an object.
    """
    path = run.path / f"{name}.json"
    try:
        value = getattr(run, name)
    except ValueError as exc:  # json.JSONDecodeError
        raise ValueError(f"{str(path)!r} is not valid JSON: {exc}.") from exc
    if not isinstance(value, dict):
        raise ValueError(f"{str(path)!r} must hold a JSON object; got {type(value).__name__}.")
    return value


def _text_writer(text: str) -> Callable[[Path], None]:
    """``write(path)`` for :func:`atomic_write`: writes ``text`` to ``path``."""

    def write(path: Path) -> None:
        path.write_text(text)

    return write


if TYPE_CHECKING:
    _PathBase = Path
else:
    _PathBase = type(Path())  # PosixPath or WindowsPath: Path itself is not subclassable < 3.12


class Report(_PathBase):
    """The path of a written HTML report that also shows itself in Jupyter.

    It is a :class:`pathlib.Path` in every other respect (``open``, ``read_text``,
    ``os.fspath``). In a notebook, a cell ending in ``report.write_report(run)`` shows the
    report inline, in a sandboxed frame (its styles stay inside it). Outside Jupyter the
    same is ``IPython.display.HTML(path.read_text())``.
    """

    def _repr_html_(self) -> str | None:
        """The report in an ``<iframe srcdoc=...>``; ``None`` (plain repr) when the file is
        gone or is not a file."""
        try:
            page = Path(self).read_text()
        except (OSError, UnicodeDecodeError):
            return None
        return (
            f'<iframe srcdoc="{_text(page)}" sandbox="allow-same-origin" '
            'style="width:100%;height:720px;border:1px solid #ddd"></iframe>'
        )


def _time_unit(run: Run) -> str:
    """``"epoch"`` when the run's steps are epochs (its config has ``epochs`` and no record
    goes beyond), else ``"step"``."""
    try:
        return "epoch" if _counts_epochs(run) else "step"
    except (OSError, ValueError, KeyError):
        return "step"


def _extra_figures(run: Run, unit: str) -> list[tuple[str, Any]]:
    """Figures drawn from a run's stored arrays by modules that know them."""
    out: list[tuple[str, Any]] = list(class_means_figures(run, unit=unit))
    from . import kernels

    out.extend(kernels.kernel_figures(run))
    return out


# figures this module draws: a redraw removes those of them that are no longer drawn
_OWN_FIGURES = ("metrics-", "class-means", "overview")


def write_figures(run: Run | str | Path) -> list[Path]:
    """Draw a run's figures into ``figures/`` as PNG and return their paths.

    ``overview`` (a thumbnail for the index), ``metrics-<family>`` (the scalar metrics,
    :func:`~ncdynamics.report.figures.metric_figures`), ``class-means[-<prefix>]`` and the
    NTK figures. Figures of earlier drawings of these names that are no longer drawn are
    removed; other figures in ``figures/`` (saved by the user) are kept.
    """
    run = run if isinstance(run, Run) else read_run(run)
    unit = _time_unit(run)
    try:
        metrics = run.metrics
    except FileNotFoundError:
        import pandas as pd

        metrics = pd.DataFrame(columns=["step", "name", "value"])
    drawn: list[tuple[str, Any]] = []
    overview = overview_figure(metrics, unit=unit)
    if overview is not None:
        drawn.append(("overview", overview))
    drawn += metric_figures(metrics, unit=unit) + _extra_figures(run, unit)
    paths = [run.save_figure(fig, name) for name, fig in drawn]
    for old in run.figures():
        if old.stem.startswith(_OWN_FIGURES) and old not in paths:
            old.unlink(missing_ok=True)
    return paths


def _table(rows: list[tuple[str, Any]]) -> str:
    body = "".join(f"<tr><th>{_text(k)}</th><td>{_cell(v)}</td></tr>" for k, v in rows)
    return f"<table>{body}</table>"


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    if isinstance(v, (dict, list)):
        return f"<code>{_text(json.dumps(v, default=str))}</code>"
    return _text(v)


def _column_head(key: str) -> str:
    """A table header for metric ``key``: its short label, with the raw key below."""
    lab = label(key)
    if not lab.known:
        return f"<th>{_text(lab.short)}</th>"
    return f'<th>{_text(lab.short)}<span class="unit">{_text(key)}</span></th>'


def _summary_html(summary: dict[str, Any]) -> str:
    parts = []
    table = summary.get("table")
    if isinstance(table, dict) and table and all(isinstance(v, dict) for v in table.values()):
        cols = sorted({str(k) for row in table.values() for k in row})
        head = "".join(_column_head(c) for c in cols)
        rows = "".join(
            f"<tr><th>{_text(r)}</th>"
            + "".join(f"<td>{_cell(vals.get(c, ''))}</td>" for c in cols)
            + "</tr>"
            for r, vals in table.items()
        )
        parts.append(f"<table><tr><th></th>{head}</tr>{rows}</table>")
    claims = summary.get("claims")
    if isinstance(claims, list) and claims:
        rows = "".join(
            "<tr>"
            + "".join(f"<td>{_cell(c.get(k, ''))}</td>" for k in ("claim", "ours", "held"))
            + "</tr>"
            for c in claims
            if isinstance(c, dict)
        )
        parts.append(
            "<h2>Claims checked</h2><table><tr><th>claim</th><th>our number</th>"
            f"<th>held</th></tr>{rows}</table>"
        )
    rest = [(k, v) for k, v in summary.items() if k not in ("table", "claims")]
    if rest:
        parts.append(_table(rest))
    return "".join(parts)


def _lr_html(metrics: Any, unit: str) -> str:
    """One line: the learning-rate schedule, when a recorded ``lr`` changes."""
    changes = lr_changes(metrics)
    if not changes:
        return ""
    steps = ", ".join(f"{unit} {s}: {a:.3g} → {b:.3g}" for s, a, b in changes)
    return (
        f'<p class="note">Learning rate changes (dotted lines in the figures): {_text(steps)}.</p>'
    )


def _static_html(metrics: Any) -> str:
    """The constant and once-recorded metrics as one table: a row per metric, a column per
    series prefix."""
    static = static_metrics(metrics)
    if static.empty:
        return ""
    prefixes = list(dict.fromkeys(static["series"]))
    head = "".join(f"<th>{_text(p or 'value')}</th>" for p in prefixes)
    rows = []
    for key, sub in static.groupby("key", sort=False):
        by = {str(s): float(v) for s, v in zip(sub["series"], sub["value"], strict=True)}
        cells = "".join(f"<td>{_cell(by[p])}</td>" if p in by else "<td></td>" for p in prefixes)
        kind = str(sub["kind"].iloc[0])
        when = f" at {int(sub['step'].iloc[0])}" if kind == "recorded once" else ""
        rows.append(
            f"<tr><th>{_text(sub['label'].iloc[0])}"
            f'<span class="unit">{_text(key)}</span></th>{cells}'
            f"<td>{_text(kind + when)}</td></tr>"
        )
    return (
        "<h2>Constant and once-recorded metrics</h2>"
        f"<table><tr><th>metric</th>{head}<th>note</th></tr>{''.join(rows)}</table>"
    )


def _caption(stem: str) -> str:
    """A figure's caption from its file name (figures this package draws; else the name)."""
    for head in ("metrics-", "compare-"):
        if stem.startswith(head):
            family, _, part = stem[len(head) :].partition("-")
            return FAMILIES.get(family, stem) + (f" (part {part})" if part else "")
    if stem.startswith("class-means"):
        prefix = stem[len("class-means-") :]
        return "Class means" + (f" ({prefix})" if prefix else "")
    kernel = {
        "ntk_kernel_heatmaps": "NTK: traced kernels at the last record",
        "ntk_block_norms": "NTK: class-block norms at the last record",
        "ntk_alignment": "NTK: kernel-label alignment",
        "ntk_block_values": "NTK: block values γ and κ",
    }
    return kernel.get(stem, stem)


def _figure_order(stem: str) -> tuple[int, str]:
    families = [f"metrics-{f}" for f in FAMILIES]
    if stem in families:
        return (families.index(stem) if stem != "metrics-nc" else 0, stem)
    if stem.startswith("class-means"):
        return (2, stem)
    if stem.startswith("ntk_"):
        return (len(families), stem)
    return (len(families) + 1, stem)


def _figures_html(run: Run) -> str:
    figs = []
    for png in sorted(run.figures(), key=lambda p: _figure_order(p.stem)):
        if png.stem == "overview":  # the index's thumbnail; the figures below hold it
            continue
        try:
            data = base64.b64encode(read_bounded(png, FIGURE_LIMIT, "figure")).decode("ascii")
        except (OSError, RunCorruptError) as exc:
            warnings.warn(f"{one_line_reason(exc)}; left out of the report.", stacklevel=2)
            continue
        caption = _caption(png.stem)
        figs.append(
            f'<figure><img alt="{_text(caption)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_text(caption)}</figcaption></figure>"
        )
    return "".join(figs)


_PAGES_START, _PAGES_END = "<!-- ncdyn:pages -->", "<!-- /ncdyn:pages -->"


def _pages_html(run_dir: Path) -> str:
    """Links to the pages ``ncdyn compare`` and ``ncdyn forecast`` wrote inside the run,
    between markers that :func:`link_output_pages` rewrites when one is written later."""
    from ..runs._outputs import output_command

    links = []
    if run_dir.is_dir():
        for sub in sorted(run_dir.iterdir()):
            command = output_command(sub)
            if command is not None and (sub / "report.html").is_file():
                what = "theory against run" if command == "compare" else "forecasts scored"
                links.append(
                    f'<a href="{_text(sub.name)}/report.html">{_text(sub.name)}</a> ({what})'
                )
    inner = f'<p class="note">Pages: {" · ".join(links)}</p>' if links else ""
    return f"{_PAGES_START}{inner}{_PAGES_END}"


def link_output_pages(run_dir: str | os.PathLike[str]) -> None:
    """Rewrite the links of ``run_dir/report.html`` to its compare and forecast pages (after
    ``ncdyn compare`` or ``forecast`` wrote one); a report without the markers is left."""
    page = Path(run_dir) / "report.html"
    if page.is_symlink() or not page.is_file():
        return
    text = page.read_text(encoding="utf-8")
    start, end = text.find(_PAGES_START), text.find(_PAGES_END)
    if start < 0 or end < start:
        return
    new = text[:start] + _pages_html(Path(run_dir)) + text[end + len(_PAGES_END) :]
    if new != text:
        atomic_write(page, _text_writer(new))


def write_report(run: Run | str | Path, *, draw: bool = True) -> Report:
    """Write ``report.html`` into the run directory and return its path.

    The report shows the run's state and settings, the summary table (columns named through
    :mod:`ncdynamics.report.labels`), the learning-rate schedule, a table of the metrics
    that are constant or recorded once, and every figure. With ``draw`` the figures are
    (re)drawn first (:func:`write_figures`). Images are embedded as base64, so the file can
    be moved or mailed on its own.

    Returns
    -------
    Report
        A :class:`pathlib.Path` that shows the report inline in Jupyter.
    """
    run = run if isinstance(run, Run) else read_run(run)
    if draw:
        write_figures(run)
    status, config = _json_object(run, "status"), _json_object(run, "config")
    title = config.get("experiment") or run.path.name
    unit = _time_unit(run)
    try:
        metrics = run.metrics
    except FileNotFoundError:
        metrics = None
    cfg = {str(k): v for k, v in config.items() if k not in ("experiment", "preset", "seed")}
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)} report</title>
<style>{_CSS}</style></head><body>
<h1>{_text(title)}</h1>
<p>Run directory <code>{_text(run.path)}</code></p>
{_pages_html(run.path)}
{_run_meta_html(status, config)}
<h2>Summary</h2>{_summary_html(_json_object(run, "summary")) or "<p>No summary was written.</p>"}
{_metrics_glance_html(metrics, unit)}
<h2>Figures</h2>{_figures_html(run) or "<p>No figures.</p>"}
<h2>Configuration</h2>{_table(sorted(cfg.items()))}
</body></html>
"""
    return Report(atomic_write(run.path / "report.html", _text_writer(doc)))


def _run_meta_html(status: dict[str, Any], config: dict[str, Any]) -> str:
    """The table of the run's state, preset, seed, times, host and versions, and its error."""
    state = str(status.get("state", "?"))
    versions = status.get("versions", {})
    if not isinstance(versions, dict):
        versions = {"?": versions}
    meta = [
        ("state", f'<span class="{_state_class(state)}">{_text(state)}</span>'),
        ("preset", config.get("preset") or ("own run" if not config.get("experiment") else "?")),
        ("seed", status.get("seed")),
        ("started", status.get("started")),
        ("finished", status.get("finished")),
        ("host", status.get("host")),
        ("versions", ", ".join(f"{k} {v}" for k, v in sorted(versions.items()))),
    ]
    meta_html = (
        "<table>"
        + "".join(
            f"<tr><th>{k}</th><td>{v if k == 'state' else _text(v)}</td></tr>" for k, v in meta
        )
        + "</table>"
    )
    if status.get("error"):
        meta_html += f"<pre>{_text(status['error'])}</pre>"
    return meta_html


def _metrics_glance_html(metrics: pd.DataFrame | None, unit: str) -> str:
    """The note naming the series (recorder prefixes), the learning-rate schedule and the
    table of constant metrics; empty without metrics."""
    if metrics is None or metrics.empty:
        return ""
    series = ""
    prefixes = sorted({p for p, _ in split_names(metrics["name"].unique()).values() if p})
    if prefixes:
        series = (
            f'<p class="note">Series (recorder prefixes), one line each in every panel: '
            f"{_text(', '.join(prefixes))}. The x-axis counts {_text(unit)}s.</p>"
        )
    return series + _lr_html(metrics, unit) + _static_html(metrics)
