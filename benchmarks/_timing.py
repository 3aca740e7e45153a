"""Small timing helpers shared by the benchmark scripts (not part of the package)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


def best_of(fn: Callable[[], Any], repeat: int = 5, warmup: int = 1) -> float:
    """Minimum wall time of ``fn()`` over ``repeat`` calls, after ``warmup`` calls."""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def report(label: str, ours: float, baseline: float, baseline_label: str) -> None:
    print(
        f"{label:<58} ours {ours * 1e3:9.1f} ms   {baseline_label} {baseline * 1e3:9.1f} ms"
        f"   ratio {baseline / ours:6.2f}x"
    )
