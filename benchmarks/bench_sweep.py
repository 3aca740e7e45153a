"""Sweep executor benchmark: overhead per run, and a smoke sweep on 1 worker against 2.

Usage: ``.venv/bin/python benchmarks/bench_sweep.py [--quick]``

1. Executor overhead: a :class:`LocalExecutor` round trip for a task that does nothing
   (pool start-up excluded, it is paid once per sweep); the pool's concurrency on sleeping
   tasks (free of CPU load); and the whole-sweep overhead per run: the sweep's wall time on
   one warm worker (its start-up and warm-up, imports and dataset, excluded), minus the same
   runs' ``experiments.run`` time measured in this process (one thread, after a warm-up run),
   divided by the number of runs.
2. Scaling: the same 16-run ``demo`` smoke sweep (8 with ``--quick``) on 1 worker (the
   baseline) and on 2 workers, on a warm pool and with the pool's start-up and shutdown;
   prints both times and the ratios (target: at least 1.7x on two free cores; a machine shared
   with other work gives less). The sweeps run before anything trains in this process, in
   interleaved rounds (3; 1 with ``--quick``), medians printed.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from _timing import Timing, emit_all, interleaved, print_timings

from ncdynamics.experiments import LocalExecutor, Task, run, sweep

SMALL = {"epochs": 3, "depth": 1, "checkpoint_every": 10}


def noop(i: int) -> int:
    return i


def warm(i: int) -> int:
    """One-time costs of a worker, paid once per sweep: import every theory, load digits."""
    from ncdynamics import data
    from ncdynamics.experiments import list_experiments

    list_experiments()
    data.load("digits")
    return i


def nap(i: int) -> int:
    time.sleep(0.25)
    return i


def _nap_time(workers: int, n: int) -> float:
    """Wall time of ``n`` quarter-second sleeps on a warm pool: concurrency without CPU."""
    with LocalExecutor(workers=workers) as ex:
        list(ex.run([Task(f"warm{i}", noop, (i,)) for i in range(workers)]))
        t0 = time.perf_counter()
        list(ex.run([Task(f"t{i}", nap, (i,)) for i in range(n)]))
        return time.perf_counter() - t0


def _timed_sweep(out: Path, workers: int, grid: dict, seeds: int) -> tuple[float, float, float]:
    """(wall time including pool start-up and shutdown, pool start-up, the sweep call alone)."""
    t0 = time.perf_counter()
    with LocalExecutor(workers=workers) as ex:
        list(ex.run([Task(f"warm{i}", warm, (i,)) for i in range(workers)]))
        t_start = time.perf_counter() - t0
        t1 = time.perf_counter()
        res = sweep("demo", "smoke", out, grid=grid, seeds=seeds, overrides=SMALL, executor=ex)
        t_sweep = time.perf_counter() - t1
    wall = time.perf_counter() - t0
    if not res.ok:
        raise RuntimeError(f"sweep failed: {res.failed}")
    return wall, t_start, t_sweep


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 runs instead of 16")
    args = parser.parse_args()
    grid = {"lr": [0.05, 0.1], "width": [16, 24]}
    seeds = 2 if args.quick else 4
    tmp = Path(tempfile.mkdtemp(prefix="bench_sweep_"))
    try:
        with LocalExecutor(workers=1) as ex:
            list(ex.run([Task("warm", noop, (0,))]))
            n = 200
            t0 = time.perf_counter()
            list(ex.run([Task(f"t{i}", noop, (i,)) for i in range(n)]))
            per_task = (time.perf_counter() - t0) / n
        print(f"executor round trip per task (no-op, warm pool): {per_task * 1e3:8.2f} ms")

        n_nap = 8
        nap1, nap2 = _nap_time(1, n_nap), _nap_time(2, n_nap)
        print(
            f"{n_nap} x 0.25 s sleeps   1 worker {nap1:6.2f} s   2 workers {nap2:6.2f} s   "
            f"ratio {nap1 / nap2:5.2f}x  (concurrency of the pool, free of CPU load)"
        )

        # the sweeps first, in a parent that has not trained anything yet, in interleaved
        # rounds; each call writes into a fresh folder
        calls = {1: [], 2: []}

        def sweeper(workers: int):
            def fn() -> None:
                out = tmp / f"w{workers}-{len(calls[workers])}"
                calls[workers].append(_timed_sweep(out, workers, grid, seeds))

            return fn

        rounds = 1 if args.quick else 3
        walls = interleaved(
            {"1 worker": sweeper(1), "2 workers": sweeper(2)}, rounds=rounds, warmup=0
        )
        sweep_only = {
            name: Timing(name, tuple(c[2] for c in calls[w]))
            for name, w in (("1 worker", 1), ("2 workers", 2))
        }
        one, two = walls["1 worker"].median, walls["2 workers"].median
        start1 = float(np.median([c[1] for c in calls[1]]))
        start2 = float(np.median([c[1] for c in calls[2]]))
        sweep1, sweep2 = sweep_only["1 worker"].median, sweep_only["2 workers"].median
        size = f"{len(grid['lr']) * len(grid['width']) * seeds}-run demo smoke sweep"
        print_timings(f"{size}, warm pool", sweep_only, baseline="1 worker")
        print_timings(f"{size}, with pool start-up and shutdown", walls, baseline="1 worker")
        emit_all("sweep_scaling", sweep_only, baseline="1 worker", size=size + ", warm pool")

        # in-process time of the runs themselves (the work a sweep cannot avoid), one thread
        # as in a worker; the first run (data loading, warm-up) is not counted
        torch.set_num_threads(1)
        run("demo", "smoke", tmp / "warmup", progress=False, **SMALL)
        t0 = time.perf_counter()
        runs_n = 0
        for lr in grid["lr"]:
            for width in grid["width"]:
                for s in range(seeds):
                    cfg = {**SMALL, "lr": lr, "width": width}
                    out = tmp / f"inproc-{lr}-{width}-{s}"
                    run("demo", "smoke", out, seed=s, progress=False, **cfg)
                    runs_n += 1
        inproc = time.perf_counter() - t0
        overhead = (sweep1 - inproc) / runs_n
        print(
            f"runs per sweep: {runs_n}; in-process run time {inproc:.2f} s "
            f"({inproc / runs_n:.2f} s per run)"
        )
        print(f"sweep overhead per run on 1 worker (warm pool): {overhead:.3f} s")
        print(
            f"{runs_n}-run smoke sweep, warm pool   1 worker {sweep1:7.2f} s   2 workers "
            f"{sweep2:7.2f} s   ratio {sweep1 / sweep2:5.2f}x   (target >= 1.7x)"
        )
        print(
            f"the same with pool start-up and shutdown   1 worker {one:7.2f} s   2 workers "
            f"{two:7.2f} s   ratio {one / two:5.2f}x   (start-ups {start1:.2f} s, {start2:.2f} s)"
        )
        print(
            f"load average during the benchmark: {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
