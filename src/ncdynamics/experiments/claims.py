"""Reproduction tables from the claims that experiments record in ``summary.json``.

Every experiment checks the paper's statements it reproduces and writes them to its run's
``summary.json`` as a list ``claims`` of ``{"claim": text, "held": bool, "ours": value}``.
:func:`collect` reads those lists from any number of runs, groups them by experiment, preset
and claim, and counts over the runs (one per seed, typically): how many held, and the mean and
standard deviation of ``ours`` where it is a number. :func:`markdown_table` turns one
theory's groups into the table the docs show, and :func:`update_docs` rewrites the generated
regions of the docs pages, so that no reproduced number in the docs is typed by hand.

A generated region in a docs page is delimited by two comments naming the experiment and the
preset it shows::

    <!-- claims:begin truncation.e1 smoke -->
    ...table written by `ncdyn claims --update-docs`...
    <!-- claims:end -->
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "ClaimRow",
    "collect",
    "run_smoke",
    "format_number",
    "markdown_table",
    "update_docs",
]

_REGION = re.compile(
    r"(<!-- claims:begin (?P<experiment>\S+) (?P<preset>\S+) -->\n)"
    r"(?P<body>.*?)(<!-- claims:end -->)",
    re.S,
)


@dataclass
class ClaimRow:
    """One claim of one experiment at one preset, over the runs that checked it."""

    experiment: str
    preset: str
    claim: str
    held: list[bool] = field(default_factory=list)
    ours: list[Any] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)

    @property
    def theory(self) -> str:
        return self.experiment.split(".", 1)[0]

    def numbers(self) -> np.ndarray | None:
        """``ours`` as floats when every run gave one finite-or-not number, else ``None``."""
        if not self.ours or not all(
            isinstance(v, int | float) and not isinstance(v, bool) for v in self.ours
        ):
            return None
        return np.asarray(self.ours, dtype=np.float64)

    def held_text(self) -> str:
        n, k = len(self.held), sum(self.held)
        if n == 1:
            return "held" if k else "not held"
        return f"{k}/{n} runs"

    def ours_text(self) -> str:
        nums = self.numbers()
        if nums is None:
            texts = {_describe(v) for v in self.ours}
            return "; ".join(sorted(texts)) if len(texts) <= 3 else f"{len(texts)} values"
        if nums.size == 1:
            return format_number(float(nums[0]))
        return f"{format_number(float(nums.mean()))} ± {format_number(float(nums.std(ddof=1)))}"


def format_number(x: float) -> str:
    """Two significant digits; values below 1e-12 in magnitude (rounding error) as such."""
    if isinstance(x, bool):
        return str(x)
    if not math.isfinite(x):
        return str(x)
    if x != 0 and abs(x) < 1e-12:
        return "< 1e-12"
    return f"{x:.2g}"


def _describe(value: Any) -> str:
    """A short text of ``value`` with every number at two significant digits (nested lists
    and dicts too), so that a table does not change with rounding noise."""
    text = _short(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _short(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int | float):
        return format_number(float(value))
    if isinstance(value, list):
        inner = ", ".join(_short(v) for v in value[:6])
        return f"[{inner}{', …' if len(value) > 6 else ''}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v)}" for k, v in value.items()) + "}"
    return str(value)


def _summary(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(config, summary)`` of a run directory; ``ValueError`` naming a bad file."""
    out = []
    for name in ("config.json", "summary.json"):
        path = run_dir / name
        try:
            value = json.loads(path.read_text())
        except FileNotFoundError:
            raise ValueError(f"{str(path)!r} does not exist: is {str(run_dir)!r} a run?") from None
        except ValueError as exc:
            raise ValueError(f"{str(path)!r} is not valid JSON: {exc}.") from exc
        if not isinstance(value, dict):
            raise ValueError(f"{str(path)!r} must hold a JSON object; got {type(value).__name__}.")
        out.append(value)
    return out[0], out[1]


def _source(run_dir: Path) -> str:
    """``"ncdynamics <version> @ <commit>"`` from the run's ``status.json`` (what ran it)."""
    try:
        versions = json.loads((run_dir / "status.json").read_text()).get("versions", {})
    except (OSError, ValueError, AttributeError):
        return "ncdynamics (version unknown)"
    commit = str(versions.get("ncdynamics_commit", "unknown"))
    dirty = "+dirty" if commit.endswith("+dirty") else ""
    return f"ncdynamics {versions.get('ncdynamics', '?')} @ {commit[:12]}{dirty}"


def _run_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[Path]:
    """Run directories under ``paths`` (a run, or a folder such as a sweep holding runs)."""
    found: list[Path] = []
    for p in map(Path, paths):
        if (p / "summary.json").is_file():
            found.append(p)
            continue
        if not p.is_dir():
            raise ValueError(f"`runs` must be run directories or folders of runs; got {str(p)!r}.")
        inner = sorted(
            s.parent for s in p.rglob("summary.json") if (s.parent / "config.json").is_file()
        )
        if not inner:
            raise ValueError(f"{str(p)!r} holds no run with a summary.json.")
        found.extend(inner)
    return found


def collect(paths: Sequence[str | os.PathLike[str]]) -> list[ClaimRow]:
    """Claims of every run under ``paths``, grouped by (experiment, preset, claim text).

    Runs without claims are skipped; rows keep the order in which experiments first list
    their claims.
    """
    rows: dict[tuple[str, str, str], ClaimRow] = {}
    for run_dir in _run_dirs(paths):
        config, summary = _summary(run_dir)
        experiment = str(config.get("experiment", "?"))
        preset = str(config.get("preset", "?"))
        seed = int(config.get("seed", 0))
        source = _source(run_dir)
        for item in summary.get("claims", []):
            if not isinstance(item, dict) or "claim" not in item:
                continue
            key = (experiment, preset, str(item["claim"]))
            row = rows.setdefault(key, ClaimRow(*key))
            row.held.append(bool(item.get("held")))
            row.ours.append(item.get("ours"))
            row.seeds.append(seed)
            row.sources.add(source)
    return list(rows.values())


def run_smoke(names: Sequence[str], root: str | os.PathLike[str], *, seed: int = 0) -> list[Path]:
    """Run the ``smoke`` preset of each experiment in ``names`` under ``root/<name>``."""
    from ._registry import run

    return [run(name, "smoke", Path(root) / name, seed=seed, progress=False).path for name in names]


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_table(rows: Sequence[ClaimRow]) -> str:
    """A Markdown table: claim, held (or held/runs), ours (mean ± sd over runs)."""
    lines = ["| claim | held | ours |", "|---|---|---|"]
    for r in rows:
        lines.append(f"| {_escape(r.claim)} | {r.held_text()} | {_escape(r.ours_text())} |")
    return "\n".join(lines) + "\n"


def update_docs(rows: Sequence[ClaimRow], docs: str | os.PathLike[str]) -> list[Path]:
    """Rewrite every generated region of the ``*.md`` pages under ``docs`` (module docstring)
    for which ``rows`` hold that experiment and preset; return the pages changed."""
    by_key: dict[tuple[str, str], list[ClaimRow]] = {}
    for r in rows:
        by_key.setdefault((r.experiment, r.preset), []).append(r)
    changed = []
    for page in sorted(Path(docs).rglob("*.md")):
        text = page.read_text()

        def fill(m: re.Match[str]) -> str:
            found = by_key.get((m["experiment"], m["preset"]))
            body = markdown_table(found) if found else m["body"]
            return f"{m.group(1)}{body}{m.group(5)}"

        new = _REGION.sub(fill, text)
        if new != text:
            tmp = page.with_suffix(".md.tmp")
            tmp.write_text(new)
            os.replace(tmp, page)
            changed.append(page)
    return changed


def regions(docs: str | os.PathLike[str]) -> dict[tuple[str, str], tuple[Path, str]]:
    """``(experiment, preset) -> (page, table text)`` of every generated region under ``docs``."""
    out = {}
    for page in sorted(Path(docs).rglob("*.md")):
        for m in _REGION.finditer(page.read_text()):
            out[(m["experiment"], m["preset"])] = (page, m["body"])
    return out
