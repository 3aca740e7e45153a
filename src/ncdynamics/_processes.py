"""Worker processes that end with their parent.

Both process pools of the toolkit (:class:`ncdynamics.experiments.executors.LocalExecutor`
and :func:`ncdynamics.training.run_trials`) start their workers through this guard, so that a
parent killed outright (SIGKILL, out of memory) leaves no worker behind that goes on
training or writing.
"""

from __future__ import annotations

import os
import signal
import threading
import time

__all__ = ["PARENT_POLL_S", "die_with_parent"]

#: Seconds between two looks at the parent.
PARENT_POLL_S = 0.25


def die_with_parent(parent: int) -> None:
    """SIGKILL this process as soon as its parent process (pid ``parent``) is gone.

    A daemon thread polls ``os.getppid()``, which changes when the parent dies and the
    worker is re-parented; it works on every POSIX system and whichever thread of the parent
    started the worker. The worker then dies as it would from a kill: a run it writes keeps
    every record flushed so far and its lock is freed by the kernel.
    """

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_S)
        os.kill(os.getpid(), signal.SIGKILL)

    if os.getppid() != parent:  # the parent died before this worker got here
        os.kill(os.getpid(), signal.SIGKILL)
    threading.Thread(target=watch, name="ncdynamics-parent-watch", daemon=True).start()
