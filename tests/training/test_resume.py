"""A run killed with SIGKILL resumes from its last checkpoint and loses no record."""

import os
import signal
import subprocess
import sys
import time

import numpy as np

from ncdynamics import experiments, runs

SETTINGS = {"epochs": 60, "checkpoint_every": 3, "width": 16}


def test_sigkill_mid_run_then_resume_matches_an_uninterrupted_run(tmp_path):
    killed = tmp_path / "killed"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    code = (
        "import torch; torch.set_num_threads(1);"
        "from ncdynamics import experiments as E;"
        f"E.run('demo', preset='smoke', out={str(killed)!r}, progress=False, "
        "epochs=60, checkpoint_every=3, width=16)"
    )
    proc = subprocess.Popen([sys.executable, "-c", code], env=env)
    ce = killed / "checkpoints" / "cross-entropy"
    deadline = time.time() + 120
    while time.time() < deadline and not (ce.exists() and any(ce.glob("*.pt"))):
        if proc.poll() is not None:
            break
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    before = runs.Run(killed).metrics
    assert runs.Run(killed).status["state"] == "running"

    import torch

    torch.set_num_threads(1)
    resumed = experiments.run(
        "demo", preset="smoke", out=killed, resume=True, progress=False, **SETTINGS
    )
    reference = experiments.run(
        "demo", preset="smoke", out=tmp_path / "ref", progress=False, **SETTINGS
    )
    got, want = resumed.metrics, reference.metrics
    assert resumed.state == "completed"
    assert len(got) == len(want)
    np.testing.assert_allclose(
        got["value"].to_numpy(), want["value"].to_numpy(), rtol=1e-5, atol=1e-7
    )
    # every record flushed before the kill is still there, with its value
    merged = before.merge(got, on=["step", "name"], suffixes=("_before", "_after"))
    assert len(merged) == len(before)
