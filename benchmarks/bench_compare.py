"""``ncdyn compare``: this checkout against a base commit, on the demo run and a sweep.

The base is ``b18d685`` by default (the engine before the out-of-sample verdicts of issue 28:
no generic curves, one fit per window; ``--base f68be8b`` is the one before windows and
intervals).

Usage::

    .venv/bin/python benchmarks/bench_compare.py [--run DEMO_RUN] [--rounds 3] [--quick]

Two workloads (targets of issues 18 and 28: ≤ 5 s on one core for the demo run, intervals,
windows and the generic curves included; ≤ 30 s for a 16-run sweep):

1. ``ncdyn compare`` on the demo run (``cpu`` preset: 200 epochs, two streams), the whole
   command as a user runs it: a fresh process, imports, every fit (with windows here), the
   report with its figures. Also the engine alone (``compare()`` after imports).
2. ``ncdyn compare SWEEP`` on a 16-run ``demo`` smoke sweep (8 with ``--quick``): here one
   summary table; on f68be8b, which has no many-run mode, ``compare()`` on each run in one
   process (no reports), the least work that gives the same verdict-less table.

Each measurement is a fresh ``python`` process with ``OMP_NUM_THREADS=1`` (its wall time, and
its CPU time, which a shared machine's load distorts less); the baseline runs
the source of commit f68be8b (extracted with ``git archive`` into a temporary directory), the
candidate this checkout's ``src``. Rounds interleave the two; medians and ranges are printed.
Without git or the commit, the baseline figures measured once on f68be8b are printed instead.
The demo run is trained once (``--run`` reuses one) and the sweep too; this takes minutes.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _fresh import python_in, source_of

ROOT = Path(__file__).resolve().parent.parent
BASE_COMMIT = "b18d685"
#: Bases without a many-run ``ncdyn compare``: their sweep figure runs compare() per run.
_NO_MANY_RUN = ("f68be8b",)
#: Measured once on f68be8b (2 shared cores, load ~4): the command, the engine, the sweep.
RECORDED = {"demo command": 5.3, "demo engine": 2.1, "sweep": None}

_DEMO_CMD = """
import sys, time, json
t0 = time.perf_counter()
from ncdynamics.cli import main
code = main(["compare", sys.argv[1], "--out", sys.argv[2]])
print(json.dumps({"total": time.perf_counter() - t0, "code": code}))
"""
_ENGINE = """
import sys, time, json
from ncdynamics.experiments.compare import compare
from ncdynamics.experiments.streams import confrontations
confrontations()
t0 = time.perf_counter()
compare(sys.argv[1])
print(json.dumps({"total": time.perf_counter() - t0, "code": 0}))
"""
_SWEEP_BASE = """
import sys, time, json
from pathlib import Path
t0 = time.perf_counter()
from ncdynamics.experiments.compare import compare
for d in sorted(p for p in Path(sys.argv[1]).iterdir() if (p / "status.json").is_file()):
    compare(d)
print(json.dumps({"total": time.perf_counter() - t0, "code": 0}))
"""


def _python(src: Path, code: str, *args: str) -> tuple[float, float]:
    """``(wall seconds, CPU seconds)`` of one fresh process running ``code``; the wall time is
    the process's own measurement, the CPU time (user + system) that of the child."""
    result, cpu = python_in(src, code, *args)
    if result["code"] != 0:
        raise RuntimeError(f"the command failed: {result['_stderr']}")
    return float(result["total"]), cpu


def _train(src: Path, tmp: Path, n_sweep: int, demo: Path | None) -> tuple[Path, Path]:
    code = """
import sys
from ncdynamics import experiments
if sys.argv[1] != "-":
    experiments.run("demo", "cpu", sys.argv[1], progress=False)
with experiments.LocalExecutor(workers=1) as ex:
    experiments.sweep("demo", "smoke", sys.argv[2], grid={"lr": [0.02, 0.05, 0.1, 0.2]},
                      seeds=int(sys.argv[3]) // 4, executor=ex)
print('{"total": 0, "code": 0}')
"""
    demo_dir = demo if demo is not None else tmp / "demo"
    sweep_dir = tmp / "sweep"
    t0 = time.perf_counter()
    _python(src, code, "-" if demo is not None else str(demo_dir), str(sweep_dir), str(n_sweep))
    print(f"(trained the runs in {time.perf_counter() - t0:.0f} s)")
    return demo_dir, sweep_dir


def _summary(times: list[tuple[float, float]]) -> str:
    wall = [w for w, _ in times]
    cpu = [c for _, c in times]
    return (
        f"wall median {statistics.median(wall):6.2f} s (range {min(wall):.2f}-{max(wall):.2f}), "
        f"process CPU median {statistics.median(cpu):6.2f} s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", type=Path, default=None, help="an existing demo cpu run")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="8-run sweep, 2 rounds")
    parser.add_argument("--base", default=BASE_COMMIT, help="the commit to compare against")
    args = parser.parse_args()
    rounds = 2 if args.quick else args.rounds
    n_sweep = 8 if args.quick else 16
    ours = ROOT / "src"
    with tempfile.TemporaryDirectory() as tmp_:
        tmp = Path(tmp_)
        base = source_of(args.base, tmp)
        sweep_base = _SWEEP_BASE if args.base in _NO_MANY_RUN else _DEMO_CMD
        demo, sweep = _train(ours, tmp, n_sweep, args.run.resolve() if args.run else None)
        out = tmp / "out"
        work = {
            "demo command": (_DEMO_CMD, _DEMO_CMD, [str(demo)], True),
            "demo engine": (_ENGINE, _ENGINE, [str(demo)], False),
            f"sweep of {n_sweep}": (_DEMO_CMD, sweep_base, [str(sweep)], True),
        }
        times: dict[str, dict[str, list[tuple[float, float]]]] = {
            k: {"ours": [], "base": []} for k in work
        }
        for _ in range(rounds):
            for name, (mine, theirs, argv, writes) in work.items():
                for who, src, code in (("ours", ours, mine), ("base", base, theirs)):
                    if src is None:
                        continue
                    extra = [str(out)] if writes else []
                    if writes and out.exists():
                        shutil.rmtree(out)
                    times[name][who].append(_python(src, code, *argv, *extra))
        load = os.getloadavg()
        print(f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}; {rounds} rounds")
        for name, t in times.items():
            print(f"{name:<16} this checkout {_summary(t['ours'])}")
            if t["base"]:
                print(f"{'':<16} {args.base:<13} {_summary(t['base'])}")
            elif args.base == "f68be8b":
                key = "sweep" if name.startswith("sweep") else name
                print(f"{'':<16} f68be8b       {RECORDED.get(key)} s (recorded once)")
        print("targets: demo command <= 5 s on one core; sweep of 16 <= 30 s.")


if __name__ == "__main__":
    main()
