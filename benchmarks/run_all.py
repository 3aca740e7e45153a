"""Run the benchmark scripts of this folder (``make bench``) and gather their records.

Every script writes its result records (see ``_timing.emit``) to the JSON-lines file named by
``NCDYN_BENCH_RESULTS``; this runner points that at a temporary file, runs the scripts in turn
and writes all the records, with the commit, host, date and machine load, to
``benchmarks/results/<host>-<date>.json`` (``--out`` to choose another path). A run into an
existing file replaces the tables (``benchmark`` names) it recorded and keeps the others, so
``--only`` or a script's own case selection re-runs part of the file. The tables of
``docs/performance.md`` are generated from that file by ``benchmarks/make_tables.py``.

Usage: ``python benchmarks/run_all.py [--quick] [--only bench_lesde,bench_recorder] [--out F]``;
any other argument is passed on to every script.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).parent


def _commit() -> str:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True
        )
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=HERE,
            capture_output=True,
            text=True,
        )
    except OSError:
        return "unknown"
    commit = out.stdout.strip() or "unknown"
    return commit + ("-dirty" if dirty.stdout.strip() else "")


def merge_records(
    kept: list[dict[str, object]], new: list[dict[str, object]]
) -> list[dict[str, object]]:
    """A partial re-run's records over an existing file's: every table (``benchmark``) the
    new records fill is replaced whole; the others are kept, so re-running some cases of a
    script (``bench_ntk.py --cases usercnn``) leaves its other tables alone."""
    fresh = {(r["script"], r["benchmark"]) for r in new}
    return [r for r in kept if (r.get("script"), r.get("benchmark")) not in fresh] + new


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="comma-separated script names (without .py)")
    parser.add_argument("--out", help="results file (default benchmarks/results/HOST-DATE.json)")
    args, extra = parser.parse_known_args()
    scripts = sorted(HERE.glob("bench_*.py"))
    if args.only:
        wanted = {s.strip().removesuffix(".py") for s in args.only.split(",")}
        unknown = wanted - {s.stem for s in scripts}
        if unknown:
            parser.error(f"--only names unknown scripts {sorted(unknown)}")
        scripts = [s for s in scripts if s.stem in wanted]
    started = time.gmtime()
    failed: list[str] = []
    records: list[dict[str, object]] = []
    commit = _commit()
    with tempfile.TemporaryDirectory() as tmp:
        for script in scripts:
            sink = Path(tmp) / f"{script.stem}.jsonl"
            env = {**os.environ, "NCDYN_BENCH_RESULTS": str(sink)}
            print(f"\n=== {script.name} {' '.join(extra)}", flush=True)
            rc = subprocess.run([sys.executable, str(script), *extra], cwd=HERE, env=env)
            if rc.returncode != 0:
                failed.append(script.name)
            if sink.exists():
                for line in sink.read_text(encoding="utf-8").splitlines():
                    records.append({**json.loads(line), "script": script.stem, "commit": commit})
    out = (
        Path(args.out)
        if args.out
        else HERE / "results" / f"{platform.node()}-{time.strftime('%Y%m%d', started)}.json"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    ran = {s.stem for s in scripts}
    if out.exists():
        kept = json.loads(out.read_text(encoding="utf-8"))["records"]
        records = merge_records(kept, records)
    payload = {
        "host": platform.node(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", started),
        "commit": commit,
        "cpu_count": os.cpu_count(),
        "quick": "--quick" in extra,
        "scripts": sorted({str(r["script"]) for r in records} | ran),
        "failed": failed,
        "records": records,
    }
    tmp_out = out.with_suffix(".json.tmp")
    tmp_out.write_text(json.dumps(payload, indent=1) + "\n", encoding="utf-8")
    tmp_out.replace(out)
    print(f"\n{len(records)} records written to {out}")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
