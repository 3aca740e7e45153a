"""A single background thread that runs jobs in order, for the Recorder's overlapped mode.

The Recorder in ``background=True`` mode hands every record, and every other write to its
sink, to one :class:`BackgroundWorker`; the jobs run one at a time in submission order, so
the sink sees exactly the calls of the synchronous mode, from one thread. The queue holds
at most ``max_pending`` jobs: a caller that outruns the worker waits at :meth:`submit`
(which bounds the memory of the snapshots the jobs hold).

An exception raised by a job (``KeyboardInterrupt`` included) is kept and raised again in
the caller's thread at the next :meth:`submit`, :meth:`wait` or :meth:`close`; the jobs
queued after it are dropped, none runs after a failure.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable

__all__ = ["BackgroundWorker"]

_STOP = object()


class BackgroundWorker:
    """Runs submitted callables in order on one daemon thread.

    Parameters
    ----------
    max_pending : int, default=1
        Jobs that may wait in the queue besides the running one.
    name : str, default="ncdynamics-recorder"
        The thread's name.
    """

    def __init__(self, *, max_pending: int = 1, name: str = "ncdynamics-recorder") -> None:
        self._queue: queue.Queue[object] = queue.Queue(maxsize=max(1, int(max_pending)))
        self._error: BaseException | None = None
        self._closed = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    @property
    def alive(self) -> bool:
        """Whether the thread is still running."""
        return self._thread.is_alive()

    def _run(self) -> None:
        while True:
            job = self._queue.get()
            try:
                if job is _STOP:
                    return
                if self._error is None:  # after a failure the remaining jobs are dropped
                    job()  # type: ignore[operator]  # every item but _STOP is a callable
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                self._error = exc
            finally:
                self._queue.task_done()

    def _raise(self) -> None:
        err, self._error = self._error, None
        if err is not None:
            raise err

    def submit(self, job: Callable[[], object]) -> None:
        """Queue ``job`` (waits while the queue is full); raises a job's earlier error."""
        if self._closed:
            raise RuntimeError("the background worker is closed; `submit` needs an open one.")
        self._raise()
        self._queue.put(job)

    def wait(self) -> None:
        """Block until every queued job has run; raises a job's error."""
        if self._thread.is_alive():
            self._queue.join()
        self._raise()

    def close(self) -> None:
        """Run the queued jobs, stop the thread and raise a job's error, if any."""
        if not self._closed:
            self._closed = True
            if self._thread.is_alive():
                self._queue.put(_STOP)
                self._thread.join()
        self._raise()
