"""Atlas benchmark: the same small atlas on 1 worker against 2 (runs and confrontations).

Usage: ``.venv/bin/python benchmarks/bench_atlas.py [--runs 8] [--epochs 60] [--quick]``
(``--quick``: 4 runs)

Runs a one-block plan of ``--runs`` cells (the ``atlas`` cell at its ``smoke`` preset, the
learning rate varied, one seed) into a fresh directory on a local pool of 1 worker, then of 2,
and prints both wall times (pool start-up included) and their ratio. The target is near 2 on
two free cores; a machine shared with other work gives less, and says so in the load average
printed beside the times.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path


def _plan(n_runs: int, epochs: int):  # type: ignore[no-untyped-def]
    from ncdynamics.experiments.atlas import AtlasPlan, Block

    rates = tuple(round(0.05 * (1.25**i), 4) for i in range(n_runs))
    return AtlasPlan(
        "atlas",
        "smoke",
        {"epochs": epochs, "record_every": 2},
        (Block("lr", {"loss": ("mse",), "lr": rates}),),
        seeds=1,
    )


def _time(workers: int, n_runs: int, epochs: int, root: Path) -> float:
    from ncdynamics.experiments import LocalExecutor, atlas

    start = time.perf_counter()
    with LocalExecutor(workers=workers) as ex:
        cells = atlas(out=root / f"w{workers}", plan=_plan(n_runs, epochs), executor=ex)
    took = time.perf_counter() - start
    info = cells.attrs["atlas"]
    assert info["runs_now"] == n_runs and info["confronted_now"] == n_runs, info
    return took


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--epochs", type=int, default=60)
    parser.add_argument("--quick", action="store_true", help="4 runs")
    args = parser.parse_args()
    if args.quick:
        args.runs = 4
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        one = _time(1, args.runs, args.epochs, root)
        load1 = os.getloadavg()[0]
        two = _time(2, args.runs, args.epochs, root)
        load2 = os.getloadavg()[0]
    print(f"atlas of {args.runs} runs ({args.epochs} epochs each), runs and confrontations:")
    print(f"  1 worker : {one:7.1f} s   (1-min load average after: {load1:.2f})")
    print(f"  2 workers: {two:7.1f} s   (1-min load average after: {load2:.2f})")
    print(f"  speed-up 1 -> 2 workers: {one / two:.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
