"""Recorder overhead in the demo configuration: whole trainings, A/B in interleaved rounds.

Trains the demo MLP on digits without a Recorder, with one (synchronous), and with one in
background mode (the probes evaluated by a recording thread on a snapshot while the next
epoch trains), each a complete training of the demo's length, in interleaved rounds (the
order rotates every round). The Recorder evaluates the collapse and performance probes on the
demo's probe set (a class-balanced subset of the training set) every epoch, plus the test
set every ``test_every`` epochs, as the demo does. Every training writes checkpoints the
same way, so the difference is the Recorder alone. The overhead is the ratio of a recorded
training's wall time to the plain one's, minus one: the median of the rounds' medians, and
the range of the per-round ratios. The training thread's own CPU time is reported too:
what the Recorder costs the training when a core is free for the recording thread (it
leaves out waiting for a core, which dominates the wall-time spread on a shared machine,
and the recording thread's work). (A fourth variant, the background mode with the
training loop's test-set logging made non-waiting, went when ``training/loop.py`` adopted
that change.)

An earlier version ran the two trainings in two threads that took turns one epoch at a
time; it charged each only its own turns, but printed 9.3% where alternating whole
trainings gave 11-16%: the Recorder's cost is also in what it leaves behind for the next
epoch (cold caches), which turn-taking hides. Whole trainings are what a user pays.

Usage: python benchmarks/bench_recorder.py [--quick] [--rounds R] [--threads N]

``--quick`` trains 20 epochs, where the one-off costs (the epoch-0 record, which also
evaluates the whole training set) weigh ten times more than in the demo: it checks that the
script runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np
import torch
from _timing import Timing, emit_all, interleaved, print_timings, ratio
from threadpoolctl import threadpool_limits

from ncdynamics import data, runs
from ncdynamics.experiments.demo import DemoConfig
from ncdynamics.models import MLP
from ncdynamics.training import Recorder, train


def training(ds, cfg: DemoConfig, epochs: int, recorder: str | None) -> None:
    """One demo training; ``recorder`` None, "sync" or "background" (a recorded one also
    evaluates the test set, as the demo does)."""
    with_recorder = recorder is not None
    model = MLP(
        64, 10, depth=cfg.depth, width=cfg.width, generator=torch.Generator().manual_seed(0)
    )
    with tempfile.TemporaryDirectory() as tmp:
        run = runs.create(f"{tmp}/r")
        probe = data.balanced_subset(ds.y_train, cfg.probe_per_class, np.random.default_rng(0))
        rec = (
            Recorder(
                run,
                ds.x_train[probe],
                ds.y_train[probe],
                num_classes=10,
                background=recorder == "background",
            )
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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the CLI's default)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    cfg = DemoConfig()
    epochs = 20 if args.quick else cfg.epochs
    rounds = args.rounds or (3 if args.quick else 7)
    ds = data.load("digits")
    thread_cpu: dict[str, list[float]] = {}

    def charged(name: str, fn):
        """``fn`` with the CPU time of this (the training) thread kept per call."""

        def run() -> None:
            t0 = time.thread_time()
            fn()
            thread_cpu.setdefault(name, []).append(time.thread_time() - t0)

        return run

    variants = {
        "plain": lambda: training(ds, cfg, epochs, recorder=None),
        "recorder": lambda: training(ds, cfg, epochs, recorder="sync"),
        "recorder, background": lambda: training(ds, cfg, epochs, recorder="background"),
    }
    timings = interleaved(
        {name: charged(name, fn) for name, fn in variants.items()}, rounds=rounds, warmup=1
    )
    # the training thread's own CPU time (the warm-up call dropped): what the Recorder costs
    # the training where a core is free for the recording thread; waiting for a core and
    # the recording thread's work are left out
    cpu = {
        name: Timing(name, tuple(t[1:]), "training-thread CPU") for name, t in thread_cpu.items()
    }
    size = f"MLP {cfg.depth}x{cfg.width}, digits, {epochs} epochs"
    print_timings(
        f"demo {size}, torch threads {torch.get_num_threads()}, whole trainings",
        timings,
        baseline="plain",
    )
    for name in ("recorder", "recorder, background"):
        r, lo, hi = ratio(timings["plain"], timings[name])
        print(
            f"  overhead, {name}: {100 * (1 / r - 1):.1f}% of the training time "
            f"(rounds {100 * (1 / hi - 1):.1f}% to {100 * (1 / lo - 1):.1f}%; target <= 5%)"
        )
    emit_all("recorder_overhead", timings, baseline="plain", size=size)
    print_timings(f"demo {size}, the training thread's CPU time", cpu, baseline="plain")
    for name in ("recorder", "recorder, background"):
        r, lo, hi = ratio(cpu["plain"], cpu[name])
        print(
            f"  training-thread CPU overhead, {name}: {100 * (1 / r - 1):.1f}% "
            f"(rounds {100 * (1 / hi - 1):.1f}% to {100 * (1 / lo - 1):.1f}%)"
        )
    emit_all("recorder_overhead_thread_cpu", cpu, baseline="plain", size=size)


if __name__ == "__main__":
    main()
