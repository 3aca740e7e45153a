"""Fixtures shared by the sweep and executor tests."""

import json
import os
import signal
import time

import pytest


def _kill_when_running(root, run_id, killed):
    """SIGKILL the worker that holds ``run_id`` once its run has started.

    The wait is long because on a loaded machine a Ray cluster and its workers can take
    more than a minute to start (a 60 s wait once gave up before the run began, and the test
    then failed for want of a kill); the thread is a daemon, so a long wait costs nothing
    when the run starts early."""
    deadline = time.monotonic() + 600
    status, pidfile = root / run_id / "status.json", root / ".workers" / f"{run_id}.json"
    while time.monotonic() < deadline:
        try:
            if json.loads(status.read_text())["state"] == "running":
                pid = json.loads(pidfile.read_text())["pid"]
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
                return
        except (OSError, ValueError, KeyError):
            pass
        time.sleep(0.01)


@pytest.fixture
def kill_when_running():
    """``kill(root, run_id, killed)``: kill the sweep worker running ``run_id``."""
    return _kill_when_running
