"""Generate the tables of docs/performance.md from a benchmark results file.

``benchmarks/run_all.py`` writes ``benchmarks/results/<host>-<date>.json``. Each table region
of ``docs/performance.md`` sits between two markers::

    <!-- bench:table NAME -->
    ...generated...
    <!-- /bench -->

and this script replaces what lies between them with the table of the records whose
``benchmark`` is ``NAME``: one row per (variant, size, threads), the median seconds and the
range over the interleaved rounds, and the ratio to the baseline (median, and range of the
per-round ratios). A ``<!-- bench:scaling NAME -->`` region gets, from the records of ``NAME``
that carry a problem size ``n``, each variant's median time per ``n`` with its growth
exponent against the smallest ``n`` (``log(t / t0) / log(n / n0)``: 1 for linear cost, 2 for
quadratic). Nothing in those regions is typed by hand.

Usage: ``python benchmarks/make_tables.py [--results FILE] [--docs FILE] [--check]``; by
default the newest results file (by its ``date``) and ``docs/performance.md``. ``--check``
changes nothing and exits 1 when the docs differ from what the results give.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
DOCS = HERE.parent / "docs" / "performance.md"
RESULTS = HERE / "results"

_REGION = re.compile(
    r"(<!-- bench:(?P<kind>table|scaling) (?P<name>[\w.-]+) -->\n)(?P<body>.*?)(<!-- /bench -->)",
    re.DOTALL,
)


def newest_results(folder: Path = RESULTS) -> Path:
    """The results file of ``folder`` with the latest ``date``."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no results file (*.json) in {folder}; run `make bench` first.")
    return max(files, key=lambda f: (json.loads(f.read_text(encoding="utf-8"))["date"], f.name))


def _secs(s: float) -> str:
    if s >= 100:
        return f"{s:.0f} s"
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    return f"{s * 1e6:.3g} µs"


def _ratio(x: float) -> str:
    return f"{x:.3g}×"


def _threads(r: dict) -> str:
    torch = "—" if r.get("threads") is None else str(r["threads"])
    blas = "?" if r.get("blas_threads") is None else str(r["blas_threads"])
    return f"{torch}/{blas}"


def _records(name: str, results: dict) -> list[dict]:
    recs = [r for r in results["records"] if r["benchmark"] == name]
    if not recs:
        raise KeyError(f"table {name!r}: no record with benchmark == {name!r} in the results.")
    return recs


def render(name: str, results: dict) -> str:
    """The Markdown table of benchmark ``name`` (ends with a newline)."""
    recs = _records(name, results)
    lines = [
        "| variant | size | threads (torch/BLAS) | median time | range over rounds | baseline | "
        "baseline ÷ variant (rounds) |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in recs:
        ratio = (
            f"{_ratio(r['ratio'])} ({_ratio(r['ratio_min'])}–{_ratio(r['ratio_max'])})"
            if r["ratio"] is not None
            else "—"
        )
        lines.append(
            f"| {r['variant']} | {r['size'] or '—'} | {_threads(r)} | {_secs(r['median_s'])} | "
            f"{_secs(r['min_s'])}–{_secs(r['max_s'])} | {r['baseline'] or '—'} | {ratio} |"
        )
    return "\n".join(lines) + "\n" + _meta(recs, results)


def render_scaling(name: str, results: dict) -> str:
    """Each variant's median time per problem size ``n`` of benchmark ``name``, and the
    growth exponent against the variant's smallest ``n`` (ends with a newline)."""
    recs = [r for r in _records(name, results) if r.get("n") is not None]
    if not recs:
        raise KeyError(f"scaling {name!r}: no record of {name!r} carries a size `n`.")
    lines = [
        "| variant | n | median time | ÷ time at the smallest n | growth exponent |",
        "|---|---|---|---|---|",
    ]
    for variant in dict.fromkeys(r["variant"] for r in recs):
        rows = sorted((r for r in recs if r["variant"] == variant), key=lambda r: r["n"])
        n0, t0 = rows[0]["n"], rows[0]["median_s"]
        for r in rows:
            grows = r["n"] > n0
            exponent = (
                f"{math.log(r['median_s'] / t0) / math.log(r['n'] / n0):.2f}" if grows else "—"
            )
            lines.append(
                f"| {variant} | {r['n']} | {_secs(r['median_s'])} | "
                f"{_ratio(r['median_s'] / t0) if grows else '—'} | {exponent} |"
            )
    return "\n".join(lines) + "\n" + _meta(recs, results)


def _meta(recs: list[dict], results: dict) -> str:
    """The line under a table: clock, rounds, host, torch, commit, date, load."""
    clock = {str(r["clock"]) for r in recs}
    loads = [float(r["loadavg"]) for r in recs if r.get("loadavg") is not None]
    rounds = sorted({int(r["rounds"]) for r in recs})
    notes = {str(r["note"]) for r in recs if r.get("note")}
    return (
        f"\n{'/'.join(sorted(clock))} time, {'/'.join(map(str, rounds))} interleaved rounds; "
        f"{recs[0]['host']}, torch {recs[0]['torch']}, commit {recs[0].get('commit', '?')}, "
        f"{str(recs[0]['time'])[:10]}, load average "
        + (f"{min(loads):.1f}–{max(loads):.1f}" if loads else "unknown")
        + (" (quick sizes)" if results.get("quick") else "")
        + "."
        + "".join(f" {n}" for n in sorted(notes))
        + "\n"
    )


def rewrite(text: str, results: dict) -> str:
    """``text`` with every table region regenerated from ``results``."""

    def table(m: re.Match[str]) -> str:
        make = render if m.group("kind") == "table" else render_scaling
        return m.group(1) + make(m.group("name"), results) + m.group(5)

    return _REGION.sub(table, text)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, help="results file (default: the newest)")
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--check", action="store_true", help="exit 1 if the docs are stale")
    args = parser.parse_args()
    path = args.results or newest_results()
    results = json.loads(path.read_text(encoding="utf-8"))
    old = args.docs.read_text(encoding="utf-8")
    new = rewrite(old, results)
    if args.check:
        if new != old:
            print(f"{args.docs} is stale against {path}; run benchmarks/make_tables.py")
            return 1
        return 0
    if new != old:
        args.docs.write_text(new, encoding="utf-8")
        print(f"rewrote the tables of {args.docs} from {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
