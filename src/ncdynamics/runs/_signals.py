"""SIGTERM and SIGINT end a run as a failed one, its records written.

While a run that this process writes is open, SIGTERM (sent by ``kill``, a scheduler or a
container runtime) raises :class:`Terminated` in the main thread instead of ending the
process where it stands: ``with runs.create(...) as run:`` then unwinds, the run's buffered
records are flushed and it is marked ``failed`` with the reason ``"interrupted by SIGTERM"``,
and the process exits with status 143 (128 + 15), as it would have. SIGINT (Ctrl-C) raises
``KeyboardInterrupt`` as usual and is recorded as ``"interrupted by SIGINT"``. The handler is
installed only from the main thread and only over the default action (a handler of the
program's own is left alone), and the default is restored when the last open run closes.
A process that exits without leaving its ``with`` block (``sys.exit`` in a script that did
not use one) still flushes its runs' records at exit.
"""

from __future__ import annotations

import atexit
import signal
import threading
import weakref
from types import FrameType
from typing import Any

__all__ = ["Terminated", "interruption_reason", "unwatch", "watch"]


class Terminated(SystemExit):
    """Raised in the main thread by SIGTERM while a run is open (exit status 143)."""

    def __init__(self) -> None:
        super().__init__(128 + signal.SIGTERM)


_live: weakref.WeakSet[Any] = weakref.WeakSet()
_installed = False
_previous: Any = None


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise Terminated


def _flush_at_exit() -> None:
    for run in list(_live):
        try:
            run.flush()
        except Exception:  # noqa: BLE001, S110 - the process is ending; nothing to report to
            pass


atexit.register(_flush_at_exit)


def watch(run: Any) -> None:
    """Register ``run`` (open for writing); install the SIGTERM handler if none is set."""
    global _installed, _previous
    _live.add(run)
    if _installed or threading.current_thread() is not threading.main_thread():
        return
    current = signal.getsignal(signal.SIGTERM)
    if current is not signal.SIG_DFL:
        return
    signal.signal(signal.SIGTERM, _on_sigterm)
    _installed, _previous = True, current


def unwatch(run: Any) -> None:
    """Forget ``run``; restore the default SIGTERM action when no open run is left."""
    global _installed
    _live.discard(run)
    if not _installed or len(_live) or threading.current_thread() is not threading.main_thread():
        return
    if signal.getsignal(signal.SIGTERM) is _on_sigterm:
        signal.signal(signal.SIGTERM, _previous)
    _installed = False


def interruption_reason(error: BaseException) -> str | None:
    """``"interrupted by SIGTERM"`` / ``"interrupted by SIGINT"`` for those exceptions."""
    if isinstance(error, Terminated):
        return "interrupted by SIGTERM"
    if isinstance(error, KeyboardInterrupt):
        return "interrupted by SIGINT"
    return None
