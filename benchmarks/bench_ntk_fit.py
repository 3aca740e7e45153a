"""The ntk_collapse confrontation on a squared-error run: this checkout against a base commit.

A fit of the end-of-training flow (44) searches seven flow times (the theory's and its rivals',
one of them four permutations), each over a grid of trajectories carried record by record
through the recorded kernels, and ``compare`` also fits the windows; on a run with a 64-wide
penultimate layer this was the slowest confrontation (issue 28: 143 s for one atlas run at
commit 77f2e8b).

Usage::

    .venv/bin/python benchmarks/bench_ntk_fit.py [--run RUN] [--rounds 2] [--base 77f2e8b] [--quick]

Without ``--run`` it first trains the atlas cell of the ``cpu`` plan's learning-rate block
(MLP 64 wide, digits, 4 classes, squared error, full-batch GD at lr 0.05, 300 epochs, kernel
records every 5; about a minute). Each measurement is ``compare()`` restricted to
ntk_collapse, after imports, in a fresh process with ``OMP_NUM_THREADS=1``; rounds interleave
this checkout and the base (``git archive`` of its ``src``). Wall and process CPU medians are
printed with their ratio, and whether the two give the same verdicts and flow times (to 1e-9).
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from pathlib import Path

from _fresh import python_in, source_of

ROOT = Path(__file__).resolve().parent.parent
BASE_COMMIT = "77f2e8b"

_TRAIN = """
import sys
from ncdynamics import experiments
experiments.run("atlas", "cpu", sys.argv[1], progress=False, loss="mse", lr=0.05,
                optimizer="gd", record_ntk=True, seed=0)
print("{}")
"""
_ENGINE = """
import sys, time, json
from ncdynamics.experiments import streams
import importlib
compare = importlib.import_module("ncdynamics.experiments.compare").compare
every = streams.confrontations
streams.confrontations = lambda: [c for c in every() if c.theory == "ntk_collapse"]
streams.confrontations()
t0 = time.perf_counter()
entries = compare(sys.argv[1])
total = time.perf_counter() - t0
rows = [e.row() for e in entries]
print(json.dumps({"total": total, "rows": [
    [r.get("verdict"), r.get("params.flow_time_per_step")] for r in rows]}))
"""


def _python(src: Path, code: str, *args: str) -> tuple[float, float, list[object]]:
    """``(wall, CPU, rows)`` of one fresh process running ``code`` on the sources ``src``."""
    result, cpu = python_in(src, code, *args)
    return float(result.get("total", 0.0)), cpu, list(result.get("rows", []))


def _same(a: list[object], b: list[object]) -> bool:
    """Same verdicts, and flow times equal to 1e-9 (relative)."""
    if len(a) != len(b):
        return False
    for (va, ta), (vb, tb) in zip(a, b, strict=True):  # type: ignore[misc]
        if va != vb or (ta is None) != (tb is None):
            return False
        if ta is not None and abs(ta - tb) > 1e-9 * max(abs(ta), abs(tb)):
            return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=None, help="a squared-error run to fit")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--base", default=BASE_COMMIT, help="the commit to compare against")
    parser.add_argument("--quick", action="store_true", help="one round (make bench --quick)")
    args = parser.parse_args()
    if args.quick:
        args.rounds = 1
    ours = ROOT / "src"
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        base = source_of(args.base, tmp)
        if base is None:
            raise SystemExit(f"no git or no commit {args.base}: nothing to compare against")
        run = args.run.resolve() if args.run else tmp / "run"
        if args.run is None:
            _python(ours, _TRAIN, str(run))
        times: dict[str, list[tuple[float, float]]] = {"ours": [], "base": []}
        rows: dict[str, list[object]] = {}
        for _ in range(args.rounds):
            for who, src in (("ours", ours), ("base", base)):
                wall, cpu, rows[who] = _python(src, _ENGINE, str(run))
                times[who].append((wall, cpu))
        load = os.getloadavg()
        print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {args.rounds} rounds")
        med = {w: [statistics.median(x[i] for x in t) for i in (0, 1)] for w, t in times.items()}
        for who, label in (("ours", "this checkout"), ("base", args.base)):
            print(f"{label:<14} wall median {med[who][0]:7.1f} s, CPU median {med[who][1]:7.1f} s")
        print(
            f"ratio base/ours: wall {med['base'][0] / med['ours'][0]:.2f}, "
            f"CPU {med['base'][1] / med['ours'][1]:.2f}"
        )
        print(f"same verdicts and flow times: {_same(rows['ours'], rows['base'])}")


if __name__ == "__main__":
    main()
