"""Independent trials in a process pool, results gathered in order.

On a CPU the useful parallelism for small networks and simulations is across trials, one
process each with few intra-op threads (see ``docs/performance.md``). Every theory that runs
repeated trials goes through :func:`run_trials`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

import torch

from .._processes import die_with_parent
from .._validation import check_int
from .devices import adopt_device, chosen_device

__all__ = ["TrialError", "default_workers", "run_trials"]


class TrialError(RuntimeError):
    """A trial raised; the message names its index and arguments (its seed)."""


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))


def _init_worker(threads: int, device: torch.device | None = None, parent: int = 0) -> None:
    """Threads of a worker process, and the parent's chosen device made current in it (a
    spawned process starts with none, and would otherwise fall back to auto's choice); the
    worker dies with its parent (pid ``parent``), killed or not."""
    if parent:
        die_with_parent(parent)
    adopt_device(device)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("MPLBACKEND", "Agg")
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(threads)
    threadpool_limits(threads)  # NumPy was imported before this ran: limit its BLAS too


def _call(fn: Callable[..., Any], index: int, args: object) -> Any:
    try:
        return fn(*args) if isinstance(args, tuple) else fn(args)
    except Exception as exc:
        raise TrialError(
            f"trial {index} with arguments {args!r} failed: {type(exc).__name__}: {exc}"
        ) from exc


def run_trials(
    fn: Callable[..., Any],
    trial_args: Sequence[object],
    *,
    workers: int | None = None,
    threads_per_worker: int = 1,
    progress: bool = False,
    desc: str = "trials",
    on_result: Callable[[int, Any], None] | None = None,
) -> list[Any]:
    """Run ``fn(*args)`` for every entry of ``trial_args`` and return results in order.

    Parameters
    ----------
    fn : callable
        A module-level function (it is pickled to the workers).
    trial_args : sequence
        One entry per trial: a tuple of positional arguments, or a single argument. Put the
        trial's seed in its arguments so that a failure can be reproduced.
    workers : int, optional
        Processes; ``1`` runs in this process. Defaults to the number of cores (at most 8).
    threads_per_worker : int, default=1
        Intra-op threads in each worker (torch and OpenMP).
    progress : bool, default=False
        Show a progress bar.
    on_result : callable, optional
        ``on_result(index, result)``, called in this process as each trial ends (in the
        order they end), e.g. to keep finished trials of a sweep that may be killed.

    The device chosen with :func:`ncdynamics.training.use_device` (``ncdyn run --device``)
    is made current in every worker process too.

    Raises
    ------
    TrialError
        The first failing trial, with its index and arguments.
    """
    workers = default_workers() if workers is None else check_int(workers, "workers", low=1)
    threads = check_int(threads_per_worker, "threads_per_worker", low=1)
    items = list(trial_args)
    bar = _bar(len(items), desc, progress)
    if workers == 1 or len(items) <= 1:
        out = []
        for i, a in enumerate(items):
            out.append(_call(fn, i, a))
            if on_result is not None:
                on_result(i, out[-1])
            bar.update(1)
        bar.close()
        return out
    results: list[Any] = [None] * len(items)
    ctx = mp.get_context("spawn")
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(items)),
        mp_context=ctx,
        initializer=_init_worker,
        initargs=(threads, chosen_device(), os.getpid()),
    )
    try:
        futures = {pool.submit(_call, fn, i, a): i for i, a in enumerate(items)}
        from concurrent.futures import as_completed

        for fut in as_completed(futures):
            results[futures[fut]] = fut.result()
            if on_result is not None:
                on_result(futures[fut], results[futures[fut]])
            bar.update(1)
    except BaseException:
        # SIGTERM (ncdynamics.runs' Terminated), SIGINT sent to this process alone, or a
        # failed trial: the trials still running would otherwise be waited for
        _stop_pool(pool)
        raise
    else:
        pool.shutdown(wait=True)
    finally:
        bar.close()
    return results


#: Seconds a worker is given to end after SIGTERM before it is killed.
STOP_GRACE_S = 5.0


def _stop_pool(pool: ProcessPoolExecutor) -> None:
    """End ``pool`` now: drop its queued trials, SIGTERM its workers (a signal sent to the
    parent alone never reaches them), SIGKILL any still alive after :data:`STOP_GRACE_S`,
    and reap them, so that no worker outlives the call and the parent never waits for a
    training to finish."""
    procs = list((getattr(pool, "_processes", None) or {}).values())
    pool.shutdown(wait=False, cancel_futures=True)
    for p in procs:
        if p.is_alive():
            p.terminate()
    deadline = time.monotonic() + STOP_GRACE_S
    for p in procs:
        p.join(max(0.0, deadline - time.monotonic()))
        if p.is_alive():
            p.kill()
            p.join()


def _bar(total: int, desc: str, enabled: bool) -> Any:
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, disable=not enabled, leave=False)
