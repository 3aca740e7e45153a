"""Recorder overhead in the demo configuration, measured two ways.

**Paired epochs** (``--method paired``): one training records after every other epoch
(steps 1, 3, 5, ...), so epochs that follow a record and epochs that do not alternate within
it and a change in the machine's speed hits both alike. The cost of a record is its own time
(``Recorder.step``), the test-set evaluations spread over the records (the demo evaluates the
test set at every fifth record), and the after-effect: how much longer the epoch after a
record takes than the epoch after none (the record leaves cold caches behind; in background
mode the recording thread competes with that epoch). The overhead is that cost over the
plain epoch, per training, median and range over trainings. Three kinds: the synchronous
Recorder, the background mode, and the floor (:class:`ForwardOnly`: the probe set's forward
pass and nothing else, with the same test-set evaluations), which no synchronous Recorder
of the demo's probe set can undercut.

**Whole trainings** (``--method whole``): the demo's training without a Recorder, with one
(synchronous), with one in background mode, and with the floor, each a complete training of
the demo's length, in interleaved rounds (the order rotates every round). The overhead is a
recorded training's wall time over the plain one's, minus one. The training thread's own CPU
time is reported too. On a shared machine whole trainings vary by more than the effect
(plain trainings from 8.4 s to 14.4 s in one run), so the paired method is the one to read
there.

An earlier version ran two trainings in two threads that took turns one epoch at a time and
charged each only its own turns; it printed 9.3% where alternating whole trainings gave
11-16%, because it left out the after-effect, which the paired method measures.

**Per-record persistence** (``--method persist``): what putting a record on disk as it is
made costs (``Run.persist``, which the Recorder calls after every record: one append to the
run's metric journal), timed on records of the demo's own scalars, against the plain epoch
of the demo (median of a short training without a Recorder). It is part of the Recorder's
time in the two methods above; this line isolates it.

Usage: python benchmarks/bench_recorder.py [--quick] [--rounds R] [--threads N]
[--method whole|paired|persist|both]

``--quick`` trains 20 epochs, where the one-off costs (the epoch-0 record, which also
evaluates the whole training set) weigh ten times more than in the demo: it checks that the
script runs.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass

import numpy as np
import torch
from _timing import Timing, emit, emit_all, interleaved, print_timings, ratio
from threadpoolctl import threadpool_limits

from ncdynamics import data, runs
from ncdynamics.experiments.demo import DemoConfig
from ncdynamics.models import MLP, eval_mode
from ncdynamics.training import Recorder, Schedule, train
from ncdynamics.training import loop as training_loop


class ForwardOnly(Recorder):
    """The floor of any synchronous Recorder: at each record, the probe set's forward pass
    (in eval mode, without gradients) and nothing else; the training loop still evaluates
    the test set at the same epochs as with the real Recorder."""

    def record(self, model, step, *, evaluate=None, **extra):
        with torch.no_grad(), eval_mode(model):
            model(self.x)
        if evaluate is not None:
            evaluate(model)
        return {}


def training(
    ds,
    cfg: DemoConfig,
    epochs: int,
    recorder: str | None,
    *,
    schedule: Schedule | int = 1,
    checkpoints: bool = True,
) -> None:
    """One demo training; ``recorder`` None, "sync", "background" or "forward" (the floor,
    :class:`ForwardOnly`); a recorded one also evaluates the test set, as the demo does."""
    with_recorder = recorder is not None
    kind = ForwardOnly if recorder == "forward" else Recorder
    model = MLP(
        64, 10, depth=cfg.depth, width=cfg.width, generator=torch.Generator().manual_seed(0)
    )
    with tempfile.TemporaryDirectory() as tmp:
        run = runs.create(f"{tmp}/r")
        probe = data.balanced_subset(ds.y_train, cfg.probe_per_class, np.random.default_rng(0))
        rec = (
            kind(
                run,
                ds.x_train[probe],
                ds.y_train[probe],
                num_classes=10,
                background=recorder == "background",
                schedule=schedule,
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
            store=run if checkpoints else None,
            checkpoint_every=cfg.checkpoint_every,
            progress=False,
            evaluate_test=with_recorder,
            test_every=cfg.test_every,
        )
        if rec is not None:
            rec.close()


class _EpochClock:
    """Times every training epoch and every scheduled record (``Recorder.step``, which also
    evaluates the test set when it is due; the initial record at step 0 is not a step) of
    the trainings run inside it, by wrapping those two functions for its duration."""

    def __init__(self) -> None:
        self.epochs: list[float] = []  # in epoch order
        self.records: dict[int, float] = {}  # step -> seconds of Recorder.step

    def __enter__(self) -> _EpochClock:
        self._saved = (training_loop._train_epoch, Recorder.step)
        epoch_fn, record_fn = self._saved

        def timed(fn, sink):
            def wrapper(*args, **kwargs):
                t0 = time.perf_counter()
                out = fn(*args, **kwargs)
                sink(time.perf_counter() - t0, args)
                return out

            return wrapper

        training_loop._train_epoch = timed(epoch_fn, lambda t, a: self.epochs.append(t))
        Recorder.step = timed(record_fn, lambda t, a: self.records.__setitem__(int(a[2]), t))
        return self

    def __exit__(self, *exc) -> None:
        training_loop._train_epoch, Recorder.step = self._saved


@dataclass(frozen=True)
class PairedCost:
    """Seconds per epoch of one training that recorded after every other epoch."""

    plain: float  # median epoch after an epoch without a record
    record: float  # median Recorder.step without the test set
    tests: float  # what the test-set evaluations add, spread over the records
    after: float  # median epoch after a record, minus ``plain``

    @property
    def with_record(self) -> float:
        return self.plain + self.record + self.tests + self.after


def paired_cost(ds, cfg: DemoConfig, epochs: int, recorder: str) -> PairedCost:
    """One training that records after every other epoch (steps 1, 3, 5, ...): the median
    epoch that follows an epoch without a record (the plain epoch), and what a record costs:
    its own time, what the test-set evaluations add to the records that make them (the
    demo's every fifth epoch; in background mode they run in the recording thread too),
    spread over all records, and the after-effect, i.e. how much longer the epoch after a
    record takes than the plain epoch (cold caches; in background mode the recording thread
    competing with training). Both conditions alternate within one training, so a change in
    the machine's speed hits them alike."""
    steps = Schedule(every=None, steps=tuple(range(1, epochs + 1, 2)))
    with _EpochClock() as clock:
        training(ds, cfg, epochs, recorder, schedule=steps, checkpoints=False)
    # epoch e (0-based) ends at step e + 1, so a record follows epochs 0, 2, 4, ...
    times = np.array(clock.epochs)
    after_record = times[1::2]  # epochs 1, 3, ...
    after_plain = times[2::2]  # epochs 2, 4, ... (epoch 0 follows the initial record)
    tested = [t for s, t in clock.records.items() if s % cfg.test_every == 0 or s == epochs]
    untested = [t for s, t in clock.records.items() if not (s % cfg.test_every == 0 or s == epochs)]
    record = float(np.median(untested))
    plain = float(np.median(after_plain))
    return PairedCost(
        plain=plain,
        record=record,
        tests=(float(np.median(tested)) - record) * len(tested) / len(clock.records),
        after=float(np.median(after_record)) - plain,
    )


def paired(ds, cfg: DemoConfig, epochs: int, rounds: int) -> None:
    """:func:`paired_cost` for each recording kind, ``rounds`` trainings each, interleaved."""
    kinds = {
        "recorder": "sync",
        "recorder, background": "background",
        "forward only (floor)": "forward",
    }
    costs: dict[str, list[PairedCost]] = {name: [] for name in kinds}
    names = list(kinds)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            costs[name].append(paired_cost(ds, cfg, epochs, kinds[name]))
    size = f"MLP {cfg.depth}x{cfg.width}, digits, {epochs} epochs, per epoch"
    print(f"demo {size}: one record after every other epoch ({rounds} trainings per kind)")
    print("  overhead = (record + test-set share + after-effect) / plain epoch; ms medians")
    for name in names:
        c = costs[name]
        base = Timing("epoch without a record", tuple(x.plain for x in c), "wall")
        t = Timing(f"epoch + {name}", tuple(x.with_record for x in c), "wall")
        r, lo, hi = ratio(base, t)  # as the generated table gives it
        parts = {
            k: 1e3 * float(np.median([getattr(x, k) for x in c]))
            for k in PairedCost.__dataclass_fields__
        }
        print(
            f"  {name:<22} {100 * (1 / r - 1):5.1f}% (trainings {100 * (1 / hi - 1):.1f}% to "
            f"{100 * (1 / lo - 1):.1f}%; target <= 5%)  plain {parts['plain']:.2f}, "
            f"record {parts['record']:.2f}, tests {parts['tests']:.2f}, "
            f"after-effect {parts['after']:.2f}"
        )
        emit("recorder_overhead_paired", t, size=size, baseline=base)
        if name == "recorder":
            emit("recorder_overhead_paired", base, size=size)


def persist_cost(ds, cfg: DemoConfig, epochs: int, n_records: int = 200) -> None:
    """Seconds of ``Run.persist`` per record of the demo's scalars, against a plain epoch."""
    with tempfile.TemporaryDirectory() as tmp:
        run = runs.create(f"{tmp}/r")
        probe = data.balanced_subset(ds.y_train, cfg.probe_per_class, np.random.default_rng(0))
        model = MLP(64, 10, depth=cfg.depth, width=cfg.width)
        scalars = Recorder(run, ds.x_train[probe], ds.y_train[probe], num_classes=10).record(
            model, 0
        )
        times = []
        for step in range(1, n_records + 1):
            run.log(step, scalars)
            t0 = time.perf_counter()
            run.persist()
            times.append(time.perf_counter() - t0)
        run.finish()
    with _EpochClock() as clock:
        training(ds, cfg, epochs, None, checkpoints=False)
    epoch = float(np.median(clock.epochs))
    cost = float(np.median(times))
    print(
        f"per-record persistence (journal append of {len(scalars)} scalars): median "
        f"{1e6 * cost:.0f} us (max {1e6 * max(times):.0f} us) per record = "
        f"{100 * cost / epoch:.2f}% of a plain demo epoch ({1e3 * epoch:.1f} ms; target <= 1%)"
    )
    emit(
        "recorder_persist",
        Timing("Run.persist per record", tuple(times), "wall"),
        size=f"{len(scalars)} scalars",
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--threads", type=int, default=1, help="torch threads (the CLI's default)")
    parser.add_argument(
        "--method",
        choices=("whole", "paired", "persist", "both"),
        default="both",
        help="whole trainings A/B, records after alternate epochs within trainings, or both",
    )
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    cfg = DemoConfig()
    epochs = 20 if args.quick else cfg.epochs
    rounds = args.rounds or (3 if args.quick else 7)
    ds = data.load("digits")
    if args.method in ("persist", "both"):
        persist_cost(ds, cfg, min(epochs, 10))
    if args.method in ("paired", "both"):
        paired(ds, cfg, epochs, rounds)
    if args.method in ("whole", "both"):
        whole(ds, cfg, epochs, rounds)


def whole(ds, cfg: DemoConfig, epochs: int, rounds: int) -> None:
    """Whole trainings without and with a Recorder, interleaved."""
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
        "forward only (floor)": lambda: training(ds, cfg, epochs, recorder="forward"),
    }
    recorded = [name for name in variants if name != "plain"]
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
    for name in recorded:
        r, lo, hi = ratio(timings["plain"], timings[name])
        print(
            f"  overhead, {name}: {100 * (1 / r - 1):.1f}% of the training time "
            f"(rounds {100 * (1 / hi - 1):.1f}% to {100 * (1 / lo - 1):.1f}%; target <= 5%)"
        )
    emit_all("recorder_overhead", timings, baseline="plain", size=size)
    print_timings(f"demo {size}, the training thread's CPU time", cpu, baseline="plain")
    for name in recorded:
        r, lo, hi = ratio(cpu["plain"], cpu[name])
        print(
            f"  training-thread CPU overhead, {name}: {100 * (1 / r - 1):.1f}% "
            f"(rounds {100 * (1 / hi - 1):.1f}% to {100 * (1 / lo - 1):.1f}%)"
        )
    emit_all("recorder_overhead_thread_cpu", cpu, baseline="plain", size=size)


if __name__ == "__main__":
    main()
