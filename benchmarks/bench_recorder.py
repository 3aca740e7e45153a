"""Recorder overhead in the demo configuration.

Trains the demo MLP on digits with and without a Recorder that evaluates the collapse and
performance probes on the demo's probe set (a class-balanced subset of the training set)
every epoch, plus the test-set evaluation every ``test_every`` epochs, and prints the
overhead as a fraction of the training time without it. Both trainings write checkpoints
the same way, so the difference is the Recorder alone.

On a shared machine the speed drifts from one second to the next, by more than the effect
measured here. So the two trainings run in one process, in two threads that take turns one
epoch at a time (only one runs at any moment): both see the machine in the same state, and
each is charged only for its own turns (wall time) and its own thread's CPU time. The turn
is handed over at the start of every epoch, through a wrapper around the training loop's
batch sampler.

Usage: python benchmarks/bench_recorder.py [--quick]

``--quick`` trains 10 epochs, where the one-off costs weigh twenty times more than in the
demo (it printed 16-18% when the full run printed 9-11%): it checks that the script runs.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time

import numpy as np
import torch
from threadpoolctl import threadpool_limits

from ncdynamics import data, runs
from ncdynamics.experiments.demo import DemoConfig
from ncdynamics.models import MLP
from ncdynamics.training import Recorder, loop, train


class Turns:
    """Two threads run alternately; each accumulates the wall and CPU time of its turns."""

    def __init__(self) -> None:
        self.cond = threading.Condition()
        self.turn = 0
        self.done = [False, False]
        self.wall = [0.0, 0.0]
        self.cpu = [0.0, 0.0]
        self.local = threading.local()

    def _start(self, me: int) -> None:
        self.local.t0 = (time.perf_counter(), time.thread_time())

    def _stop(self, me: int) -> None:
        w0, c0 = self.local.t0
        self.wall[me] += time.perf_counter() - w0
        self.cpu[me] += time.thread_time() - c0

    def begin(self, me: int) -> None:
        self.local.me = me
        with self.cond:
            self.cond.wait_for(lambda: self.turn == me)
        self._start(me)

    def switch(self) -> None:
        me = self.local.me
        self._stop(me)
        with self.cond:
            if not self.done[1 - me]:
                self.turn = 1 - me
                self.cond.notify_all()
                self.cond.wait_for(lambda: self.turn == me)
        self._start(me)

    def end(self) -> None:
        me = self.local.me
        self._stop(me)
        with self.cond:
            self.done[me] = True
            self.turn = 1 - me
            self.cond.notify_all()


def training(ds, cfg: DemoConfig, epochs: int, with_recorder: bool) -> None:
    """One demo training (the recorded one also evaluates the test set, as the demo does)."""
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


def paired(ds, cfg: DemoConfig, epochs: int, first: int) -> tuple[list[float], list[float]]:
    """Wall and CPU seconds of (plain, recorded), trained in alternating epochs."""
    turns = Turns()
    sampler = loop._batches

    def batches(*args, **kwargs):
        turns.switch()
        return sampler(*args, **kwargs)

    def worker(me: int) -> None:
        turns.begin(me)
        try:
            training(ds, cfg, epochs, with_recorder=me == 1)
        finally:
            turns.end()

    turns.turn = first
    loop._batches = batches
    try:
        threads = [threading.Thread(target=worker, args=(me,)) for me in (0, 1)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        loop._batches = sampler
    return turns.wall, turns.cpu


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the CLI's default)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    cfg = DemoConfig()
    # the demo's own length: one-off costs (the epoch-0 record, which also evaluates the
    # whole training set) weigh on it as they do in the demo
    epochs = 10 if args.quick else cfg.epochs
    repeat = 3 if args.quick else 5
    ds = data.load("digits")
    paired(ds, cfg, 2, 0)  # warm-up
    walls, cpus = [], []
    for r in range(repeat):
        wall, cpu = paired(ds, cfg, epochs, first=r % 2)  # who starts alternates too
        walls.append(wall)
        cpus.append(cpu)
    print(
        f"demo MLP {cfg.depth}x{cfg.width} on digits, {epochs} epochs, torch threads "
        f"{torch.get_num_threads()}, {repeat} rounds of paired trainings in alternating epochs"
    )
    for clock, times in (("CPU", cpus), ("wall", walls)):
        t = np.array(times)  # (repeat, 2): plain, recorded
        rounds = t[:, 1] / t[:, 0] - 1.0
        print(
            f"{clock:4s} time: training without recorder {np.median(t[:, 0]):.3f} s, with "
            f"{np.median(t[:, 1]):.3f} s (medians); recorder overhead rounds median "
            f"{100 * np.median(rounds):.1f}% [{100 * rounds.min():.1f}, {100 * rounds.max():.1f}]"
            " (target <= 10%)"
        )


if __name__ == "__main__":
    main()
