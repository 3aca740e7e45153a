"""Executors: where the runs of a sweep execute, behind one interface.

An :class:`Executor` takes tasks ``(key, fn, args)`` and yields one :class:`Outcome` per
task as tasks finish. A task that raises, or whose worker process dies, gives an outcome
with ``ok=False`` and a one-line ``error``; the executor keeps going, so one bad run never
stops a sweep. Two executors:

- :class:`LocalExecutor`: a pool of long-lived worker processes on this machine. Each worker
  holds one task at a time; a worker that dies (killed, out of memory) is replaced and only
  its own task fails. Workers die with their parent: a killed sweep leaves no worker behind
  that goes on writing.
- :class:`RayExecutor`: tasks on a Ray cluster, a new local one or an existing one at
  ``address`` (install with ``pip install 'ncdynamics[ray]'``).

``fn`` must be a module-level function (it is pickled to the workers).
"""

from __future__ import annotations

import abc
import multiprocessing as mp
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from multiprocessing.connection import wait
from typing import Any

from .._processes import die_with_parent
from .._reasons import one_line_reason
from .._validation import check_int

__all__ = ["Executor", "LocalExecutor", "Outcome", "RayExecutor", "Task", "make_executor"]

ADDRESS_TIMEOUT_S = 10.0


@dataclass(frozen=True)
class Task:
    """One unit of work: ``fn(*args)`` under a unique ``key``."""

    key: str
    fn: Callable[..., Any]
    args: tuple[Any, ...] = ()


@dataclass(frozen=True)
class Outcome:
    """What became of one task.

    Attributes
    ----------
    key : str
        The task's key.
    ok : bool
        Whether ``fn`` returned.
    value : Any
        Its return value (``None`` on failure).
    error : str or None
        One line, ``"ExceptionType: message"`` or the way the worker died.
    seconds : float
        Wall time from dispatch to outcome.
    """

    key: str
    ok: bool
    value: Any = None
    error: str | None = None
    seconds: float = 0.0


def _set_threads(threads: int) -> None:
    os.environ["OMP_NUM_THREADS"] = str(threads)
    os.environ.setdefault("MPLBACKEND", "Agg")
    import torch

    torch.set_num_threads(threads)


class Executor(abc.ABC):
    """Runs tasks and yields their outcomes as they finish (in completion order)."""

    @abc.abstractmethod
    def run(self, tasks: Sequence[Task]) -> Iterator[Outcome]:
        """Execute ``tasks``; yield one :class:`Outcome` per task."""

    @abc.abstractmethod
    def close(self) -> None:
        """Release workers (idempotent)."""

    def __enter__(self) -> Executor:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


# ---------------------------------------------------------------------------- local
def _worker_main(conn: Any, threads: int, parent: int) -> None:
    """Loop of one local worker: receive a task, send back ``(ok, value_or_error)``."""
    die_with_parent(parent)
    _set_threads(threads)
    while True:
        try:
            msg = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if msg is None:
            return
        fn, args = msg
        try:
            reply = (True, fn(*args))
        except KeyboardInterrupt:
            try:
                conn.send((False, "KeyboardInterrupt: interrupted"))
            except OSError:
                pass
            return
        except BaseException as exc:  # noqa: BLE001 - reported to the parent, worker lives on
            reply = (False, one_line_reason(exc))
        try:
            conn.send(reply)
        except Exception as exc:  # an unpicklable return value
            conn.send((False, f"could not return the result: {one_line_reason(exc)}"))


class _Worker:
    def __init__(self, ctx: Any, threads: int) -> None:
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=_worker_main, args=(child, threads, os.getpid()), daemon=True
        )
        self.proc.start()
        child.close()
        self.task: Task | None = None
        self.started = 0.0


class LocalExecutor(Executor):
    """A pool of worker processes on this machine.

    Parameters
    ----------
    workers : int, default=1
        Worker processes (long-lived: their start-up cost is paid once per sweep).
    threads_per_worker : int, default=1
        Intra-op threads of torch and OpenMP in each worker.
    """

    def __init__(self, *, workers: int = 1, threads_per_worker: int = 1) -> None:
        self.workers = check_int(workers, "workers", low=1)
        self.threads_per_worker = check_int(threads_per_worker, "threads_per_worker", low=1)
        self._ctx = mp.get_context("spawn")
        self._pool: list[_Worker] = []

    def _spawn(self) -> _Worker:
        w = _Worker(self._ctx, self.threads_per_worker)
        self._pool.append(w)
        return w

    def run(self, tasks: Sequence[Task]) -> Iterator[Outcome]:
        pending = list(tasks)[::-1]
        busy: dict[int, _Worker] = {}
        try:
            while pending or busy:
                while len(self._pool) < min(self.workers, len(pending) + len(busy)):
                    self._spawn()
                for w in list(self._pool):
                    if w.task is None and pending:
                        w.task, w.started = pending.pop(), time.perf_counter()
                        w.conn.send((w.task.fn, w.task.args))
                        busy[id(w)] = w
                live = list(busy.values())
                ready = wait([w.conn for w in live] + [w.proc.sentinel for w in live])
                for w in list(busy.values()):
                    if w.conn in ready or w.proc.sentinel in ready:
                        outcome = self._collect(w)
                        if outcome is not None:
                            del busy[id(w)]
                            yield outcome
        except BaseException:
            self._interrupt(busy.values())
            raise

    def _collect(self, w: _Worker) -> Outcome | None:
        task = w.task
        assert task is not None
        elapsed = time.perf_counter() - w.started
        if w.conn.poll():
            try:
                ok, payload = w.conn.recv()
            except (EOFError, OSError):  # the worker is gone
                ok, payload = None, None
                w.proc.join(5.0)
            if ok is not None:
                w.task = None
                if ok:
                    return Outcome(task.key, True, value=payload, seconds=elapsed)
                return Outcome(task.key, False, error=payload, seconds=elapsed)
        if w.proc.is_alive():
            return None
        code = w.proc.exitcode
        how = f"killed by signal {-code}" if code is not None and code < 0 else f"exit code {code}"
        self._pool.remove(w)
        w.conn.close()
        error = f"WorkerDied: worker process {w.proc.pid} died ({how})"
        return Outcome(task.key, False, error=error, seconds=elapsed)

    def _interrupt(self, busy: Any) -> None:
        """Ask running tasks to stop (SIGINT), give them a few seconds, then terminate.

        A Ctrl-C at a terminal has already reached the workers (same process group): they
        get two seconds to stop by themselves before the SIGINT is sent.
        """
        busy = list(busy)
        grace = time.monotonic() + 2.0
        for w in busy:
            w.proc.join(max(0.0, grace - time.monotonic()))
        for w in busy:
            if w.proc.is_alive() and w.proc.pid:
                try:
                    os.kill(w.proc.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass
        deadline = time.monotonic() + 10.0
        for w in busy:
            w.proc.join(max(0.0, deadline - time.monotonic()))
        self.close()

    def close(self) -> None:
        for w in self._pool:
            if w.proc.is_alive():
                try:
                    w.conn.send(None)
                except (OSError, BrokenPipeError):
                    pass
        for w in self._pool:
            w.proc.join(2.0)
            if w.proc.is_alive():
                w.proc.terminate()
                w.proc.join(2.0)
            w.conn.close()
        self._pool = []


# ---------------------------------------------------------------------------- ray
def _ray_call(fn: Callable[..., Any], threads: int, args: tuple[Any, ...]) -> Any:
    _set_threads(threads)
    return fn(*args)


def _check_address(address: str, timeout: float) -> None:
    """Raise ``ConnectionError`` unless something listens at ``address`` (host:port)."""
    hostport = address.split("://", 1)[-1].rstrip("/")
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(
            f"`address` must be host:port (or ray://host:port) of a running Ray cluster; "
            f"got {address!r}."
        )
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ConnectionError(
            f"`address` {address!r}: no Ray cluster answered within {timeout:.0f} s "
            f"({exc.strerror or exc}); start one with `ray start --head` or leave the "
            "address out to start Ray on this machine. Nothing was started."
        ) from None


class RayExecutor(Executor):
    """Tasks on a Ray cluster (``pip install 'ncdynamics[ray]'``).

    Parameters
    ----------
    address : str, optional
        ``host:port`` (or ``ray://host:port``) of a running cluster. It is checked (TCP, at
        most ``ADDRESS_TIMEOUT_S`` seconds) before Ray is touched, so an address that does not
        answer fails fast and starts nothing. Without it Ray starts on this machine with
        ``workers`` CPUs and stops on :meth:`close`.
    workers : int, default=1
        CPUs of a locally started Ray (ignored with ``address``: the cluster's CPUs count).
    threads_per_worker : int, default=1
        Intra-op threads in each task; every task asks Ray for one CPU.
    """

    def __init__(
        self, *, address: str | None = None, workers: int = 1, threads_per_worker: int = 1
    ) -> None:
        self.workers = check_int(workers, "workers", low=1)
        self.threads_per_worker = check_int(threads_per_worker, "threads_per_worker", low=1)
        if address is not None:
            _check_address(address, ADDRESS_TIMEOUT_S)
        try:
            import ray
        except ImportError:
            raise ImportError(
                "the Ray backend needs the `ray` package: pip install 'ncdynamics[ray]'."
            ) from None
        self._ray = ray
        self._started_here = not ray.is_initialized()
        if self._started_here:
            kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False}
            if address is not None:
                ray.init(address=address, **kwargs)
            else:
                ray.init(num_cpus=self.workers, **kwargs)
        self._remote = ray.remote(num_cpus=1, max_retries=0)(_ray_call)

    def run(self, tasks: Sequence[Task]) -> Iterator[Outcome]:
        ray = self._ray
        refs: dict[Any, tuple[Task, float]] = {}
        for t in tasks:
            ref = self._remote.remote(t.fn, self.threads_per_worker, tuple(t.args))
            refs[ref] = (t, time.perf_counter())
        try:
            while refs:
                done, _ = ray.wait(list(refs), num_returns=1)
                for ref in done:
                    task, start = refs.pop(ref)
                    elapsed = time.perf_counter() - start
                    try:
                        value = ray.get(ref)
                    except ray.exceptions.RayTaskError as exc:
                        cause = exc.cause if getattr(exc, "cause", None) is not None else exc
                        yield Outcome(
                            task.key, False, error=one_line_reason(cause), seconds=elapsed
                        )
                    except ray.exceptions.RayError as exc:  # worker died, node lost, ...
                        yield Outcome(task.key, False, error=one_line_reason(exc), seconds=elapsed)
                    else:
                        yield Outcome(task.key, True, value=value, seconds=elapsed)
        except BaseException:
            for ref in refs:
                ray.cancel(ref)  # SIGINT to running tasks: they stop and mark their run failed
            raise

    def close(self) -> None:
        if self._started_here and self._ray.is_initialized():
            self._ray.shutdown()


def make_executor(
    backend: str = "local",
    *,
    workers: int = 1,
    threads_per_worker: int = 1,
    address: str | None = None,
) -> Executor:
    """An executor by name: ``"local"`` (process pool) or ``"ray"``."""
    from .._validation import check_option

    check_option(backend, "backend", ("local", "ray"))
    if backend == "local":
        if address is not None:
            raise ValueError(f"`address` is for the ray backend; got {address!r} with local.")
        return LocalExecutor(workers=workers, threads_per_worker=threads_per_worker)
    return RayExecutor(address=address, workers=workers, threads_per_worker=threads_per_worker)
