"""Timing helpers shared by the benchmark scripts (not part of the package).

Every benchmark times its variants with :func:`interleaved`: each round calls every variant
once, in an order that rotates from round to round, so that a change in the machine's speed
(other jobs on a shared machine) hits all variants alike. It reports the median and the range
(min, max) of the rounds, and the ratio of the baseline's median to each variant's median
together with the range of the per-round ratios.

:func:`emit` stores one result record. The records go to the JSON-lines file named by the
environment variable ``NCDYN_BENCH_RESULTS`` when it is set (``benchmarks/run_all.py`` sets
it and gathers the records of every script into ``benchmarks/results/<host>-<date>.json``);
without it they are only printed. A script that times in its own way (e.g. in CPU time or in
paired threads) can still call :func:`emit` with a :class:`Timing` it built itself.

Usage in a script::

    from _timing import interleaved, emit_all

    timings = interleaved({"ours": fast, "loop": slow}, rounds=5)
    emit_all("bench_x", timings, baseline="loop", size="K=10")
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

RESULTS_ENV = "NCDYN_BENCH_RESULTS"


@dataclass(frozen=True)
class Timing:
    """Seconds per call of one variant, one entry per round (``scale`` already applied)."""

    variant: str
    times: tuple[float, ...]
    clock: str = "wall"

    @property
    def median(self) -> float:
        return float(np.median(self.times))

    @property
    def min(self) -> float:
        return float(np.min(self.times))

    @property
    def max(self) -> float:
        return float(np.max(self.times))

    def text(self) -> str:
        return f"{_fmt(self.median)} [{_fmt(self.min)}, {_fmt(self.max)}]"


def interleaved(
    variants: Mapping[str, Callable[[], object]],
    *,
    rounds: int,
    warmup: int = 1,
    pause: float = 0.0,
    scale: float | Mapping[str, float] = 1.0,
    clock: str = "wall",
    sync: Callable[[], object] | None = None,
    outputs: dict[str, object] | None = None,
) -> dict[str, Timing]:
    """Time each variant over ``rounds`` rounds, one call of each per round.

    The order of the variants rotates by one each round. ``warmup`` untimed calls of each
    come first. ``pause`` seconds of sleep before each timed call let a multi-threaded BLAS
    go idle. ``scale`` multiplies a variant's times (e.g. ``1 / n_steps`` for seconds per
    step, or an extrapolation factor). ``clock`` is ``"wall"`` (``time.perf_counter``) or
    ``"cpu"`` (``time.process_time``: leaves out the time spent waiting for a core).
    ``sync`` is called after every call, inside the timed span, so that work a call leaves
    queued on a device counts (``torch.cuda.synchronize``). ``outputs``, when given, receives
    each variant's result of its last timed call (for checking that the variants agree).
    """
    if rounds < 1:
        raise ValueError(f"`rounds` must be >= 1; got {rounds}.")
    if clock not in ("wall", "cpu"):
        raise ValueError(f"`clock` must be 'wall' or 'cpu'; got {clock!r}.")
    now = time.perf_counter if clock == "wall" else time.process_time
    names = list(variants)
    for _ in range(warmup):
        for name in names:
            variants[name]()
            if sync is not None:
                sync()
    raw: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        k = r % len(names)
        for name in names[k:] + names[:k]:
            if pause:
                time.sleep(pause)
            t0 = now()
            result = variants[name]()
            if sync is not None:
                sync()
            raw[name].append(now() - t0)
            if outputs is not None:
                outputs[name] = result
    out = {}
    for name in names:
        s = scale[name] if isinstance(scale, Mapping) else scale
        out[name] = Timing(name, tuple(t * s for t in raw[name]), clock)
    return out


def ratio(baseline: Timing, variant: Timing) -> tuple[float, float, float]:
    """Baseline median / variant median, and the min and max of the per-round ratios."""
    per_round = np.array(baseline.times) / np.array(variant.times)
    return baseline.median / variant.median, float(per_round.min()), float(per_round.max())


def ratio_text(baseline: Timing, variant: Timing) -> str:
    """:func:`ratio` as ``"  3.10x [2.90, 3.30]"`` (median ratio, range over the rounds)."""
    r, lo, hi = ratio(baseline, variant)
    return f"{r:6.2f}x [{lo:.2f}, {hi:.2f}]"


def _fmt(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:.3f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds * 1e6:.1f} us"


def print_timings(
    title: str, timings: Mapping[str, Timing], *, baseline: str | None = None
) -> None:
    """Print each variant's median [min, max] and, with ``baseline``, baseline / variant."""
    n = len(next(iter(timings.values())).times)
    print(f"{title} ({n} interleaved rounds; median [min, max], {_clock(timings)} time)")
    width = max(len(v) for v in timings)
    for name, t in timings.items():
        line = f"  {name:<{width}}  {t.text()}"
        if baseline is not None and name != baseline:
            r, lo, hi = ratio(timings[baseline], t)
            line += f"   {baseline} / {name} {r:.2f}x (rounds {lo:.2f}-{hi:.2f}x)"
        print(line, flush=True)


def _clock(timings: Mapping[str, Timing]) -> str:
    return next(iter(timings.values())).clock


def _environment() -> dict[str, object]:
    """Host, torch's intra-op threads and version (where torch is loaded), BLAS threads."""
    from threadpoolctl import threadpool_info

    blas = [p["num_threads"] for p in threadpool_info() if p.get("user_api") == "blas"]
    env: dict[str, object] = {
        "host": platform.node(),
        "threads": None,
        "blas_threads": max(blas) if blas else None,
        "torch": None,
    }
    torch = sys.modules.get("torch")
    if torch is not None:
        env["threads"] = torch.get_num_threads()
        env["torch"] = torch.__version__
    else:
        from importlib.metadata import PackageNotFoundError, version

        try:
            env["torch"] = version("torch")
        except PackageNotFoundError:
            pass
    return env


def emit(
    benchmark: str,
    timing: Timing,
    *,
    size: str = "",
    baseline: Timing | None = None,
    device: str = "cpu",
    note: str = "",
    **extra: object,
) -> dict[str, object]:
    """One result record; appended to ``$NCDYN_BENCH_RESULTS`` (JSON lines) when set.

    The record holds ``benchmark, variant, size, median_s, min_s, max_s, rounds, clock``,
    and with a ``baseline`` its name, ``ratio`` (baseline median / this median) and
    ``ratio_min``/``ratio_max`` over the rounds; ``device``, ``threads`` (torch's intra-op
    threads now, where torch is loaded), ``blas_threads``, ``torch`` (version), ``host`` and
    ``loadavg`` (1-minute load average), and ``extra`` (e.g. ``max_rel_diff``). ``run_all.py``
    adds the commit.
    """
    rec: dict[str, object] = {
        "benchmark": benchmark,
        "variant": timing.variant,
        "size": size,
        "median_s": timing.median,
        "min_s": timing.min,
        "max_s": timing.max,
        "rounds": len(timing.times),
        "clock": timing.clock,
        "baseline": None,
        "ratio": None,
        "ratio_min": None,
        "ratio_max": None,
        "device": device,
        "note": note,
        "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "loadavg": os.getloadavg()[0] if hasattr(os, "getloadavg") else None,
        **_environment(),
        **extra,
    }
    if baseline is not None and baseline.variant != timing.variant:
        r, lo, hi = ratio(baseline, timing)
        rec.update(baseline=baseline.variant, ratio=r, ratio_min=lo, ratio_max=hi)
    path = os.environ.get(RESULTS_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
    return rec


def emit_all(
    benchmark: str,
    timings: Mapping[str, Timing],
    *,
    baseline: str | None = None,
    size: str = "",
    device: str = "cpu",
    skip: Sequence[str] = (),
) -> list[dict[str, object]]:
    """:func:`emit` for every variant of ``timings`` (the baseline's record has no ratio)."""
    base = timings[baseline] if baseline is not None else None
    return [
        emit(benchmark, t, size=size, baseline=base, device=device)
        for name, t in timings.items()
        if name not in skip
    ]


def report(label: str, ours: float, baseline: float, baseline_label: str) -> None:
    """One line: our time, the baseline's and their ratio (kept for older scripts)."""
    print(
        f"{label:<58} ours {ours * 1e3:9.1f} ms   {baseline_label} {baseline * 1e3:9.1f} ms"
        f"   ratio {baseline / ours:6.2f}x"
    )
