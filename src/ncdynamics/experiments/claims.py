"""Reproduction tables from the claims that experiments record in ``summary.json``.

Every experiment checks the paper's statements it reproduces and writes them to its run's
``summary.json`` as a list ``claims`` of records made by :func:`ncdynamics.theories.claims.claim`:
the whole statement, its source in the paper, and one part per condition, each with the test
applied, our measurement and whether it held (older records without parts count as one part).
:func:`collect` reads those lists from any number of runs, groups them by experiment, preset,
claim and part, and counts over the runs (one per seed, typically): how many held, and the
mean and standard deviation of ``ours`` where it is a number (or a mapping of numbers).
:func:`markdown_table` turns one experiment's rows into the table the docs show, and
:func:`update_docs` rewrites the generated regions of the docs pages, so that no reproduced
number in the docs is typed by hand. :func:`save_rows` keeps the rows of runs too long to
repeat in a test (the ``cpu`` presets) in a JSON file next to the docs, from which a test
rebuilds the tables; it merges new runs into the kept rows by seed (:func:`merge_rows`), so
that seeds run in different sessions add up.

A generated region in a docs page is delimited by two comments naming the experiment and the
preset it shows::

    <!-- claims:begin truncation.e1 smoke -->
    ...table written by `ncdyn claims --update-docs`...
    <!-- claims:end -->
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..runs._io import read_json, write_bytes

__all__ = [
    "ClaimRow",
    "collect",
    "run_presets",
    "run_smoke",
    "format_number",
    "load_rows",
    "markdown_table",
    "merge_rows",
    "save_rows",
    "update_docs",
]

_REGION = re.compile(
    r"(<!-- claims:begin (?P<experiment>\S+) (?P<preset>\S+) -->\n)"
    r"(?P<body>.*?)(<!-- claims:end -->)",
    re.S,
)


@dataclass
class ClaimRow:
    """One part of one claim of one experiment at one preset, over the runs that checked it.

    ``part`` and ``criterion`` are empty for a record written without parts (the whole claim
    is then its only part). ``held``, ``ours``, ``seeds`` and ``seed_sources`` run parallel,
    one entry per run; ``sources`` is the set of what ran them. ``seed_sources`` is empty in
    rows saved before it was recorded (the run behind each seed is then unknown).
    """

    experiment: str
    preset: str
    claim: str
    part: str = ""
    source: str = ""
    criterion: str = ""
    held: list[bool] = field(default_factory=list)
    ours: list[Any] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    sources: set[str] = field(default_factory=set)
    noise: float | None = None
    seed_sources: list[str] = field(default_factory=list)

    @property
    def theory(self) -> str:
        return self.experiment.split(".", 1)[0]

    def numbers(self) -> np.ndarray | None:
        """``ours`` as floats when every run gave one finite-or-not number, else ``None``."""
        if not self.ours or not all(_is_number(v) for v in self.ours):
            return None
        return np.asarray(self.ours, dtype=np.float64)

    def held_text(self) -> str:
        n, k = len(self.held), sum(self.held)
        if n == 1:
            return "held" if k else "not held"
        return f"{k}/{n} runs"

    def ours_text(self) -> str:
        """``ours`` over the runs at two significant digits; a value below the part's
        ``noise`` (or 1e-12 in magnitude) is floating-point rounding, shown as that bound."""
        floor = self.noise or _ROUNDING
        nums = self.numbers()
        if nums is not None:
            return _mean_sd(nums, floor)
        keyed = _keyed_numbers(self.ours)
        if keyed is not None:
            return "; ".join(f"{k}: {_mean_sd(v, floor)}" for k, v in keyed.items())
        listed = _listed_numbers(self.ours, floor)
        if listed is not None:
            return listed
        texts = {_describe(v, floor) for v in self.ours}
        return "; ".join(sorted(texts)) if len(texts) <= 3 else f"{len(texts)} values"

    def to_json(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["sources"] = sorted(self.sources)
        if self.noise is None:
            del out["noise"]
        if not self.seed_sources:
            del out["seed_sources"]  # rows saved before it was recorded stay as they were
        return out

    @classmethod
    def from_json(cls, value: Any, where: str) -> ClaimRow:
        if not isinstance(value, dict) or not {"experiment", "preset", "claim"} <= set(value):
            raise ValueError(
                f"{where} must hold claim rows (objects with experiment, preset, claim)."
            )
        known = {f.name for f in dataclasses.fields(cls)}
        row = cls(**{k: v for k, v in value.items() if k in known})
        row.sources = set(row.sources)
        return row


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _mean_sd(nums: np.ndarray, floor: float = 1e-12) -> str:
    if nums.size == 1:
        return format_number(float(nums[0]), floor)
    mean = float(nums.mean())
    if math.isfinite(mean) and mean != 0 and abs(mean) < floor:
        # the spread of rounding noise is noise too
        return format_number(mean, floor)
    return f"{format_number(mean, floor)} ± {format_number(float(nums.std(ddof=1)), floor)}"


def _listed_numbers(values: list[Any], floor: float = 1e-12) -> str | None:
    """Lists of numbers over runs: element by element (mean ± sd) when every run gave the
    same short list, else the range of all of them; ``None`` for anything else."""
    if not values or not all(
        isinstance(v, list) and v and all(_is_number(x) for x in v) for v in values
    ):
        return None
    lengths = {len(v) for v in values}
    if len(lengths) == 1 and lengths.pop() <= _SHORT_LIST:
        columns = np.asarray(values, dtype=np.float64).T
        return "[" + ", ".join(_mean_sd(c, floor) for c in columns) + "]"
    flat = np.concatenate([np.asarray(v, dtype=np.float64) for v in values])
    lo = format_number(float(np.nanmin(flat)), floor)
    hi = format_number(float(np.nanmax(flat)), floor)
    runs = f" in {len(values)} runs" if len(values) > 1 else ""
    return f"{lo} to {hi} ({flat.size} values{runs})"


#: Lists up to this long are shown element by element.
_SHORT_LIST = 4


def _keyed_numbers(values: list[Any]) -> dict[str, np.ndarray] | None:
    """``{key: numbers over runs}`` when every run gave a mapping of the same keys to
    numbers, else ``None``."""
    if not values or not all(isinstance(v, dict) and v for v in values):
        return None
    keys = list(values[0])
    if any(list(v) != keys or not all(_is_number(x) for x in v.values()) for v in values):
        return None
    return {k: np.asarray([v[k] for v in values], dtype=np.float64) for k in keys}


#: Below this magnitude a number is rounding error whatever the part says.
_ROUNDING = 1e-12


def format_number(x: float, floor: float = _ROUNDING) -> str:
    """Two significant digits; a nonzero value below ``floor`` in magnitude (rounding
    error, or a part's declared ``noise``) as the bound ``"< floor"``.

    >>> format_number(4.8e-10), format_number(4.8e-10, 1e-8), format_number(-3e-13)
    ('4.8e-10', '< 1e-8', '< 1e-12')
    """
    if isinstance(x, bool):
        return str(x)
    if not math.isfinite(x):
        return str(x)
    if x != 0 and abs(x) < floor:
        return f"< {_bound(floor)}"
    return f"{x:.2g}"


def _bound(floor: float) -> str:
    """``1e-08`` as ``1e-8``; ``2.5e-09`` as ``2.5e-9``."""
    mantissa, _, exponent = f"{floor:.2g}".partition("e")
    return f"{mantissa}e{int(exponent)}" if exponent else mantissa


def _describe(value: Any, floor: float = _ROUNDING) -> str:
    """A short text of ``value`` with every number at two significant digits (nested lists
    and dicts too), so that a table does not change with rounding noise."""
    text = _short(value, floor)
    return text if len(text) <= 80 else text[:77] + "..."


def _short(value: Any, floor: float = _ROUNDING) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int | float):
        return format_number(float(value), floor)
    if isinstance(value, list):
        inner = ", ".join(_short(v, floor) for v in value[:6])
        return f"[{inner}{', …' if len(value) > 6 else ''}]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_short(v, floor)}" for k, v in value.items()) + "}"
    return _printable(str(value))


def _printable(text: str) -> str:
    """``text`` with control characters (terminal escape sequences read from a run) shown as
    ``\\x1b`` and the like, so that printing a table cannot drive the terminal."""
    return "".join(c if c.isprintable() or c == " " else repr(c)[1:-1] for c in text)


def _summary(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(config, summary)`` of a run directory; ``ValueError`` naming a bad file."""
    out = []
    for name in ("config.json", "summary.json"):
        path = run_dir / name
        try:
            value = read_json(path)  # a regular file, size-bounded, nesting checked
        except FileNotFoundError:
            raise ValueError(f"{str(path)!r} does not exist: is {str(run_dir)!r} a run?") from None
        if not isinstance(value, dict):
            raise ValueError(f"{str(path)!r} must hold a JSON object; got {type(value).__name__}.")
        out.append(value)
    return out[0], out[1]


def _source(run_dir: Path) -> str:
    """``"ncdynamics <version> @ <commit> on <device>"`` from the run's ``status.json``."""
    try:
        status = json.loads((run_dir / "status.json").read_text())
        versions = status.get("versions", {})
    except (OSError, ValueError, AttributeError):
        return "ncdynamics (version unknown)"
    commit = str(versions.get("ncdynamics_commit", "unknown"))
    dirty = "+dirty" if commit.endswith("+dirty") else ""
    device = f" on {status['device']}" if status.get("device") else ""
    text = f"ncdynamics {versions.get('ncdynamics', '?')} @ {commit[:12]}{dirty}{device}"
    return _printable(text)


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
    """Claims of every run under ``paths``, one row per (experiment, preset, claim, part).

    Runs without claims are skipped; rows keep the order in which experiments first list
    their claims and parts.
    """
    rows: dict[tuple[str, str, str, str], ClaimRow] = {}
    for run_dir in _run_dirs(paths):
        config, summary = _summary(run_dir)
        experiment = _printable(str(config.get("experiment", "?")))
        preset = _printable(str(config.get("preset", "?")))
        seed = int(config.get("seed", 0))
        source = _source(run_dir)
        for item in summary.get("claims", []):
            if not isinstance(item, dict) or "claim" not in item:
                continue
            for part in _parts(item):
                key = (experiment, preset, str(item["claim"]), str(part.get("part", "")))
                row = rows.setdefault(
                    key,
                    ClaimRow(
                        *key,
                        source=str(item.get("source", "")),
                        criterion=str(part.get("criterion", "")),
                    ),
                )
                noise = part.get("noise")
                if isinstance(noise, int | float) and not isinstance(noise, bool):
                    if math.isfinite(noise) and noise > 0:
                        row.noise = max(row.noise or 0.0, float(noise))
                row.held.append(bool(part.get("held")))
                row.ours.append(part.get("ours"))
                row.seeds.append(seed)
                row.seed_sources.append(source)
                row.sources.add(source)
    return list(rows.values())


def _parts(item: dict[str, Any]) -> list[dict[str, Any]]:
    """The parts of a claim record; a record without parts is its own single part."""
    parts = item.get("parts")
    if isinstance(parts, list) and parts and all(isinstance(p, dict) for p in parts):
        return parts
    return [{"part": "", "criterion": "", "ours": item.get("ours"), "held": item.get("held")}]


def save_rows(
    rows: Sequence[ClaimRow], path: str | os.PathLike[str], *, notes: list[str] | None = None
) -> Path:
    """Merge ``rows`` into the rows kept in the JSON file ``path`` (:func:`merge_rows`) and
    write them back atomically; a one-line note per experiment whose kept seeds were dropped
    instead of merged is appended to ``notes``."""
    path = Path(path)
    merged, said = merge_rows(load_rows(path), rows)
    if notes is not None:
        notes.extend(said)
    # one row per line: a re-run of one experiment changes only its own lines in a diff
    text = "[\n" + ",\n".join(json.dumps(r.to_json()) for r in merged) + "\n]\n"
    return write_bytes(path, text.encode())


def load_rows(path: str | os.PathLike[str]) -> list[ClaimRow]:
    """The rows :func:`save_rows` wrote to ``path`` (none if the file does not exist)."""
    path = Path(path)
    if not path.exists():
        return []
    try:
        value = json.loads(path.read_text())
    except ValueError as exc:
        raise ValueError(f"{str(path)!r} is not valid JSON: {exc}.") from exc
    if not isinstance(value, list):
        raise ValueError(f"{str(path)!r} must hold a JSON list of claim rows.")
    return [ClaimRow.from_json(v, repr(str(path))) for v in value]


def merge_rows(
    kept: Sequence[ClaimRow], new: Sequence[ClaimRow]
) -> tuple[list[ClaimRow], list[str]]:
    """The rows of ``kept`` with those of ``new`` merged in by (experiment, preset, seed).

    Per experiment and preset of ``new``: when the kept rows check the same claims (the same
    claims, parts, paper sources and criteria), every part gets the kept seeds that ``new``
    did not run plus the seeds of ``new`` (a seed run again replaces its kept entry), in seed
    order, and ``sources`` names what ran the seeds it now holds. When the claims differ, the
    kept seeds cannot be counted with the new ones: the new rows replace them and a one-line
    note names the experiment, the seeds dropped and the difference. Experiments and presets
    absent from ``new`` are kept as they are; presets are never merged with each other.

    Returns ``(rows sorted by experiment and preset, notes)``.
    """
    groups: dict[tuple[str, str], list[ClaimRow]] = {}
    for r in new:
        groups.setdefault((r.experiment, r.preset), []).append(r)
    out = [r for r in kept if (r.experiment, r.preset) not in groups]
    notes = []
    for key, fresh in groups.items():
        old = [r for r in kept if (r.experiment, r.preset) == key]
        difference = _claims_difference(old, fresh) if old else []
        if not old or difference:
            out.extend(fresh)
            if old:
                notes.append(_dropped_note(key, old, fresh, difference))
            continue
        by_part = {(r.claim, r.part): r for r in old}
        out.extend(_merge_row(by_part[(r.claim, r.part)], r) for r in fresh)
    return sorted(out, key=lambda r: (r.experiment, r.preset)), notes


def _claims_difference(old: Sequence[ClaimRow], new: Sequence[ClaimRow]) -> list[str]:
    """What differs between the claims two groups of rows check (empty when none)."""
    was = {(r.claim, r.part): r for r in old}
    now = {(r.claim, r.part): r for r in new}
    old_claims = list(dict.fromkeys(r.claim for r in old))
    new_claims = list(dict.fromkeys(r.claim for r in new))
    out = [f"claim {_clip(c)!r} no longer checked" for c in old_claims if c not in new_claims]
    out += [f"claim {_clip(c)!r} new" for c in new_claims if c not in old_claims]
    for c, p in was:
        if (c, p) not in now and c in new_claims:
            out.append(f"part {p!r} of {_clip(c)!r} no longer checked")
    for (c, p), r in now.items():
        if (c, p) not in was:
            if c in old_claims:
                out.append(f"part {p!r} of {_clip(c)!r} new")
            continue
        for name in ("criterion", "source"):
            before, after = getattr(was[(c, p)], name), getattr(r, name)
            if before != after:
                out.append(f"part {p!r} of {_clip(c)!r}: {name} {before!r} is now {after!r}")
    return out


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _seed_list(rows: Iterable[ClaimRow]) -> str:
    return ", ".join(map(str, sorted({s for r in rows for s in r.seeds})))


def _dropped_note(
    key: tuple[str, str], old: Sequence[ClaimRow], new: Sequence[ClaimRow], difference: list[str]
) -> str:
    shown = "; ".join(difference[:3])
    if len(difference) > 3:
        shown += f"; and {len(difference) - 3} more"
    return (
        f"{key[0]} ({key[1]}): seeds {_seed_list(old)} dropped, not merged with seeds "
        f"{_seed_list(new)}: the claims differ ({shown})"
    )


def _known_seed_sources(row: ClaimRow) -> list[str] | None:
    """What ran each seed of ``row``; ``None`` when unknown (several sources, none per seed)."""
    if len(row.seed_sources) == len(row.seeds):
        return list(row.seed_sources)
    if len(row.sources) == 1:
        return [next(iter(row.sources))] * len(row.seeds)
    return None


def _merge_row(old: ClaimRow, new: ClaimRow) -> ClaimRow:
    """``old``'s entries for the seeds ``new`` did not run, and all of ``new``'s, by seed."""
    ran = set(new.seeds)
    old_sources = _known_seed_sources(old)
    new_sources = _known_seed_sources(new)
    entries = []
    for i, seed in enumerate(old.seeds):
        if seed not in ran:
            src = old_sources[i] if old_sources is not None else None
            entries.append((seed, old.held[i], old.ours[i], src))
    kept_any = bool(entries)
    for i, seed in enumerate(new.seeds):
        src = new_sources[i] if new_sources is not None else None
        entries.append((seed, new.held[i], new.ours[i], src))
    entries.sort(key=lambda e: e[0])
    per_seed = [e[3] for e in entries]
    known = all(s is not None for s in per_seed)
    sources = {s for s in per_seed if s is not None}
    if kept_any and old_sources is None:
        sources |= old.sources  # which kept seed came from which is unknown: name them all
    if new_sources is None:
        sources |= new.sources
    noises = [n for n in (old.noise, new.noise) if n is not None]
    return dataclasses.replace(
        new,
        held=[e[1] for e in entries],
        ours=[e[2] for e in entries],
        seeds=[e[0] for e in entries],
        seed_sources=[str(s) for s in per_seed] if known else [],
        sources=sources,
        noise=max(noises) if noises else None,
    )


def run_smoke(names: Sequence[str], root: str | os.PathLike[str], *, seed: int = 0) -> list[Path]:
    """Run the ``smoke`` preset of each experiment in ``names`` under ``root/<name>``."""
    return run_presets(names, "smoke", root, seeds=(seed,), flat=True)


def run_presets(
    names: Sequence[str],
    preset: str,
    root: str | os.PathLike[str],
    *,
    seeds: Sequence[int] = (0, 1, 2),
    flat: bool = False,
    progress: bool = False,
) -> list[Path]:
    """Run ``preset`` of each experiment in ``names`` for every seed, under
    ``root/<name>/seed<k>`` (``root/<name>`` with ``flat`` and one seed).

    A completed run already there is kept as it is and an unfinished one resumed, so a long
    batch (the ``cpu`` presets of every experiment over three seeds) survives being killed.
    With ``progress``, a bar on stderr counts the runs and names the one in progress.
    """
    from tqdm.auto import tqdm

    from . import _registry

    if flat and len(seeds) != 1:
        raise ValueError(f"`flat` needs exactly one seed; got seeds={list(seeds)!r}.")
    made = []
    bar = tqdm(
        total=len(names) * len(seeds),
        desc=f"claims {preset}",
        unit="run",
        disable=not progress,
        leave=True,
    )
    try:
        for name in names:
            for seed in seeds:
                bar.set_postfix_str(f"{name} seed {seed}")
                out = Path(root) / name if flat else Path(root) / name / f"seed{seed}"
                resume = (out / "config.json").is_file()
                done = _registry.run(name, preset, out, seed=seed, resume=resume, progress=progress)
                made.append(done.path)
                bar.update(1)
    finally:
        bar.close()
    return made


def _escape(text: str) -> str:
    return _printable(text.replace("|", "\\|").replace("\n", " "))


def markdown_table(rows: Sequence[ClaimRow], *, provenance: bool = False) -> str:
    """A Markdown table with a row per part: the claim and its source (on its first part),
    the condition, the test, how many runs it held in, and ours (mean ± sd over runs).

    With ``provenance``, a line under the table names the seeds and what ran them (package
    version, commit, device), read from the runs' ``status.json``.
    """
    lines = ["| claim | condition | test | held | ours |", "|---|---|---|---|---|"]
    previous = None
    for r in rows:
        head = ""
        if r.claim != previous:
            head = f"{r.source}: {r.claim}" if r.source else r.claim
            previous = r.claim
        cells = (
            head,
            r.part or "(the whole claim)",
            r.criterion or "—",
            r.held_text(),
            r.ours_text(),
        )
        lines.append("| " + " | ".join(_escape(c) for c in cells) + " |")
    out = "\n".join(lines) + "\n"
    if provenance and rows:
        seeds = ", ".join(map(str, sorted({s for r in rows for s in r.seeds})))
        out += f"\nSeeds {seeds}; {_provenance(rows)}.\n"
    return out


def _provenance(rows: Sequence[ClaimRow]) -> str:
    """What ran the rows' seeds: each source once, followed by its seeds (sources in the
    order of their first seeds) when the table mixes sources and every seed's is known (rows
    merged from several sessions)."""
    names = sorted({s for r in rows for s in r.sources})
    by_seed: dict[int, set[str]] = {}
    for r in rows:
        if len(r.seed_sources) != len(r.seeds):
            return "; ".join(names)
        for seed, src in zip(r.seeds, r.seed_sources, strict=True):
            by_seed.setdefault(seed, set()).add(src)
    if len(names) < 2 or any(len(s) != 1 for s in by_seed.values()):
        return "; ".join(names)
    seeds_of: dict[str, list[int]] = {}
    for seed, (src,) in sorted(by_seed.items()):
        seeds_of.setdefault(src, []).append(seed)
    parts = []
    for src, seeds in seeds_of.items():  # in the order of their first seeds
        label = "seed" if len(seeds) == 1 else "seeds"
        parts.append(f"{src} ({label} {', '.join(map(str, seeds))})")
    return "; ".join(parts)


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
            body = markdown_table(found, provenance=m["preset"] != "smoke") if found else m["body"]
            return f"{m.group(1)}{body}{m.group(5)}"

        new = _REGION.sub(fill, text)
        if new != text:
            write_bytes(page, new.encode())
            changed.append(page)
    return changed


def regions(docs: str | os.PathLike[str]) -> dict[tuple[str, str], tuple[Path, str]]:
    """``(experiment, preset) -> (page, table text)`` of every generated region under ``docs``."""
    out = {}
    for page in sorted(Path(docs).rglob("*.md")):
        for m in _REGION.finditer(page.read_text()):
            out[(m["experiment"], m["preset"])] = (page, m["body"])
    return out
