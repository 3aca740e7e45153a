"""Recorder overhead in the demo configuration.

Trains the demo MLP on digits for a few epochs with and without a Recorder that evaluates
the collapse and performance probes on the demo's probe set (a class-balanced subset of
the training set) every epoch, plus the test-set evaluation every ``test_every`` epochs,
and prints the overhead as a fraction of the training time without it. Both runs write
checkpoints the same way, so the difference is the Recorder alone.

Usage: python benchmarks/bench_recorder.py [--quick]
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from ncdynamics import data, runs
from ncdynamics.experiments.demo import DemoConfig
from ncdynamics.models import MLP
from ncdynamics.training import Recorder, train


def once(ds, cfg: DemoConfig, epochs: int, with_recorder: bool) -> tuple[float, float]:
    """Wall and CPU seconds of one training (CPU time is immune to other tenants taking the
    core; with one thread it is the cost)."""
    model = MLP(
        64, 10, depth=cfg.depth, width=cfg.width, generator=torch.Generator().manual_seed(0)
    )
    with tempfile.TemporaryDirectory() as tmp:
        run = runs.create(f"{tmp}/r")
        probe = data.balanced_subset(ds.y_train, cfg.probe_per_class, np.random.default_rng(0))
        rec = (
            Recorder(run, ds.x_train[probe], ds.y_train[probe], num_classes=10)
            if with_recorder
            else None
        )
        t0, c0 = time.perf_counter(), time.process_time()
        train(
            model,
            ds,
            epochs=epochs,
            loss="mse",
            lr=cfg.lr,
            momentum=cfg.momentum,
            weight_decay=cfg.weight_decay,
            batch_size=cfg.batch_size,
            recorder=rec,
            store=run,
            checkpoint_every=cfg.checkpoint_every,
            progress=False,
            evaluate_test=with_recorder,
            test_every=cfg.test_every,
        )
        if rec is not None:
            rec.close()
        return time.perf_counter() - t0, time.process_time() - c0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the CLI's default)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    epochs = 10 if args.quick else 40
    repeat = 3 if args.quick else 7
    cfg = DemoConfig()
    ds = data.load("digits")
    once(ds, cfg, 2, True)  # warm-up
    # Alternate the two variants so that drifting machine load hits both alike; report the
    # overhead of each round (recorded after plain), in CPU time and in wall time.
    plain, recorded = [], []
    for _ in range(repeat):
        plain.append(once(ds, cfg, epochs, False))
        recorded.append(once(ds, cfg, epochs, True))
    print(
        f"demo MLP {cfg.depth}x{cfg.width} on digits, {epochs} epochs, torch threads "
        f"{torch.get_num_threads()}, {repeat} alternating rounds"
    )
    for k, clock in enumerate(("CPU", "wall")):
        p, r = np.array([t[k] for t in plain]), np.array([t[k] for t in recorded])
        rounds = r / p - 1.0
        print(
            f"{clock:4s} time: training without recorder {np.median(p):.3f} s, with "
            f"{np.median(r):.3f} s (medians); recorder overhead rounds median "
            f"{100 * np.median(rounds):.1f}% [{100 * rounds.min():.1f}, {100 * rounds.max():.1f}]"
            " (target <= 10%)"
        )


if __name__ == "__main__":
    main()
