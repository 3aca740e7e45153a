"""Run every experiment's ``smoke`` preset and collect the numbers each one reports.

A refactoring check, not a timing: run it before and after a change that must not alter
behaviour, then diff the two JSON files it writes::

    python benchmarks/smoke_summaries.py --out /tmp/before.json
    python benchmarks/smoke_summaries.py --out /tmp/after.json
    python benchmarks/smoke_summaries.py --diff /tmp/before.json /tmp/after.json

For each experiment it keeps ``summary.json`` and the last value of every scalar metric.
Keys that carry wall-clock times or versions are dropped before the diff.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

_VOLATILE = ("time", "seconds", "elapsed", "wall", "version", "host", "duration", "_s")


def _clean(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            k: _clean(v)
            for k, v in value.items()
            if not any(tag in str(k).lower() for tag in _VOLATILE)
        }
    if isinstance(value, list):
        return [_clean(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)
    return value


def _one(name: str) -> tuple[str, Any]:
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    import torch

    torch.set_num_threads(1)
    from ncdynamics import experiments

    with tempfile.TemporaryDirectory() as tmp:
        try:
            run = experiments.run(name, "smoke", Path(tmp) / "run", seed=0, progress=False)
        except Exception as exc:  # recorded, so that a diff shows it
            return name, {"error": f"{type(exc).__name__}: {exc}"}
        summary_path = run.path / "summary.json"
        summary = json.loads(summary_path.read_text()) if summary_path.exists() else None
        metrics = run.metrics
        last: dict[str, float] = {}
        if len(metrics):
            for metric, group in metrics.sort_values("step").groupby("name"):
                last[str(metric)] = float(group["value"].iloc[-1])
        return name, _clean({"summary": summary, "last_metrics": last})


def collect(out: Path, workers: int, only: list[str] | None) -> None:
    from ncdynamics import experiments

    names = only or [s.name for s in experiments.list_experiments()]
    with ProcessPoolExecutor(workers) as pool:
        results = dict(pool.map(_one, names))
    out.write_text(json.dumps(results, indent=1, sort_keys=True, default=str))
    print(f"wrote {len(results)} experiments to {out}")


def _walk(a: Any, b: Any, path: str, out: list[str]) -> None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                out.append(f"{path}/{k}: only in {'after' if k not in a else 'before'}")
            else:
                _walk(a[k], b[k], f"{path}/{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _walk(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append(f"{path}: {a!r} -> {b!r}")


def diff(before: Path, after: Path) -> int:
    lines: list[str] = []
    _walk(json.loads(before.read_text()), json.loads(after.read_text()), "", lines)
    print("\n".join(lines) if lines else "no differences")
    return 1 if lines else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", nargs="*")
    parser.add_argument("--diff", nargs=2, type=Path, metavar=("BEFORE", "AFTER"))
    args = parser.parse_args()
    if args.diff:
        return diff(*args.diff)
    if args.out is None:
        parser.error("give --out FILE or --diff BEFORE AFTER")
    collect(args.out, args.workers, args.only)
    return 0


if __name__ == "__main__":
    sys.exit(main())
