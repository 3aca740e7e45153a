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
from collections.abc import Callable
from pathlib import Path, PurePath, PurePosixPath
from typing import Any
from urllib.parse import quote

from ..experiments.confront import read_run
from ..runs import Run
from ..runs._io import atomic_write
from .figures import metric_figures

__all__ = ["write_figures", "write_report"]

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
pre{background:#f6f8fa;padding:.6em;overflow-x:auto;font-size:.85em}
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


def _extra_figures(run: Run) -> list[tuple[str, Any]]:
    """Figures drawn from a run's stored arrays by modules that know them."""
    out: list[tuple[str, Any]] = []
    try:
        from . import kernels
    except ImportError:
        return out
    out.extend(kernels.kernel_figures(run))
    return out


def write_figures(run: Run | str | Path) -> list[Path]:
    """Draw the metric figures (and array figures) of a run into ``figures/`` as PNG."""
    run = run if isinstance(run, Run) else read_run(run)
    paths = []
    for name, fig in metric_figures(run.metrics) + _extra_figures(run):
        paths.append(run.save_figure(fig, name))
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


def _summary_html(summary: dict[str, Any]) -> str:
    parts = []
    table = summary.get("table")
    if isinstance(table, dict) and table and all(isinstance(v, dict) for v in table.values()):
        cols = sorted({str(k) for row in table.values() for k in row})
        head = "".join(f"<th>{_text(c)}</th>" for c in cols)
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


def write_report(run: Run | str | Path, *, draw: bool = True) -> Path:
    """Write ``report.html`` into the run directory and return its path.

    With ``draw`` the metric figures are (re)drawn first. Images are embedded as base64, so
    the file can be moved or mailed on its own.
    """
    run = run if isinstance(run, Run) else read_run(run)
    if draw:
        write_figures(run)
    status, config = _json_object(run, "status"), _json_object(run, "config")
    title = config.get("experiment") or run.path.name
    state = str(status.get("state", "?"))
    figs = []
    for png in run.figures():
        data = base64.b64encode(png.read_bytes()).decode("ascii")
        figs.append(
            f'<figure><img alt="{_text(png.stem)}" src="data:image/png;base64,{data}">'
            f"<figcaption>{_text(png.stem)}</figcaption></figure>"
        )
    versions = status.get("versions", {})
    if not isinstance(versions, dict):
        versions = {"?": versions}
    meta = [
        ("state", f'<span class="{_state_class(state)}">{_text(state)}</span>'),
        ("preset", config.get("preset")),
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
    cfg = {str(k): v for k, v in config.items() if k not in ("experiment", "preset", "seed")}
    doc = f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{_text(title)} report</title>
<style>{_CSS}</style></head><body>
<h1>{_text(title)}</h1>
<p>Run directory <code>{_text(run.path)}</code></p>
{meta_html}
<h2>Summary</h2>{_summary_html(_json_object(run, "summary")) or "<p>No summary was written.</p>"}
<h2>Figures</h2>{"".join(figs) or "<p>No figures.</p>"}
<h2>Configuration</h2>{_table(sorted(cfg.items()))}
</body></html>
"""
    return atomic_write(run.path / "report.html", _text_writer(doc))
