"""A signal to a process whose trials run in a pool ends it promptly (issue 29, item 1).

``ncdyn claims`` stopped with SIGTERM while the pool of ``ntk_collapse.fig12`` was training
did not exit: the parent waited for its workers to finish their trainings, and the workers,
which the signal never reached, went on. Here a script opens a run and calls
:func:`~ncdynamics.training.run_trials` with two workers: one trial ends at once and is kept
as a checkpoint, the two others "train" until stopped. The test signals the parent alone, as
``kill`` does, and checks that it exits within seconds, that the kept checkpoint is intact,
that nothing half-written is left, and that no worker outlives it, even when the parent is
killed outright (SIGKILL).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from ncdynamics import runs

TRIALS = textwrap.dedent(
    """
    import os, time
    from pathlib import Path

    def trial(k, folder):
        if k == 0:
            return 0
        Path(folder, f"started{k}").write_text(str(os.getpid()))
        while True:  # a training that only a signal stops
            time.sleep(0.05)
    """
)

SCRIPT = textwrap.dedent(
    """
    import signal, sys

    import ncdynamics
    from ncdynamics.training import run_trials

    if __name__ == "__main__":  # the spawned workers import this file too
        # Ctrl-C as at a terminal, even where the test runner was started with SIGINT ignored
        signal.signal(signal.SIGINT, signal.default_int_handler)
        sys.path.insert(0, sys.argv[2])
        import pool_trials

        with ncdynamics.runs.create(sys.argv[1]) as run:
            def keep(i, result):
                run.save_checkpoint(0, {"result": result}, tag=f"trial{i:03d}", keep=1)

            args = [(k, sys.argv[2]) for k in range(3)]
            run_trials(pool_trials.trial, args, workers=2, on_result=keep)
    """
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie waiting to be reaped counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs /proc (Linux)")
@pytest.mark.parametrize(
    ("sig", "reason"),
    [
        (signal.SIGTERM, "interrupted by SIGTERM"),
        (signal.SIGINT, "interrupted by SIGINT"),
        (signal.SIGKILL, None),  # no unwinding: the workers must notice the parent is gone
    ],
)
def test_a_signal_to_the_parent_stops_the_pool_and_keeps_what_was_made(
    tmp_path: Path, sig: int, reason: str | None
) -> None:
    (tmp_path / "pool_trials.py").write_text(TRIALS)
    (tmp_path / "main.py").write_text(SCRIPT)
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path))
    log = tmp_path / "stderr.txt"
    with log.open("w") as stderr:  # a file, not a pipe: a surviving worker would hold a pipe open
        proc = subprocess.Popen(
            [sys.executable, str(tmp_path / "main.py"), str(out), str(tmp_path)],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
            env=env,
        )
    markers = [tmp_path / "started1", tmp_path / "started2"]
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 120
        # both workers are training and the finished trial is kept
        while not (
            all(m.is_file() and m.read_text() for m in markers)
            and list((out / "checkpoints" / "trial000").glob("step-*.pt"))
        ):
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()
            time.sleep(0.05)
        workers = [int(m.read_text()) for m in markers]
        proc.send_signal(sig)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the process did not exit within 20 s of {signal.Signals(sig).name}")
        err = log.read_text()
        if sig == signal.SIGTERM:
            assert proc.returncode == 143, err
        # no worker outlives its parent
        deadline = time.monotonic() + 10
        while any(_alive(pid) for pid in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [pid for pid in workers if _alive(pid)]
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run = runs.open(out)
    if reason is None:  # killed outright: the run stays as it was
        assert run.state == "running" and run.status["error"] is None
    else:
        assert run.state == "failed" and run.status["error"] == reason
    kept = torch.load(out / "checkpoints" / "trial000" / "step-000000000.pt", weights_only=True)
    assert kept["result"] == 0
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["trial000"]
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
