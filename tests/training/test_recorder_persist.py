"""A killed own-loop training keeps every record made before the kill (issue 30, item 1).

The README's pattern (``with runs.create(...) as run:`` and a Recorder stepped by the
user's loop) runs in a subprocess that prints the step of every record once ``rec.step``
has returned; the test kills it at random moments, reopens the run and checks that every
record up to the last printed step is on disk. SIGTERM and SIGINT must also mark the run
failed with the signal named.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from ncdynamics import runs

LOOP = textwrap.dedent(
    """
    import signal, sys, time
    import torch

    # Ctrl-C as at a terminal, even where the test runner was started with SIGINT ignored
    signal.signal(signal.SIGINT, signal.default_int_handler)
    import ncdynamics
    from ncdynamics.training import Recorder

    torch.manual_seed(0)
    x = torch.randn(60, 5)
    y = torch.arange(60) % 3
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    opt = torch.optim.SGD(model.parameters(), lr=0.05)
    with ncdynamics.runs.create(sys.argv[1]) as run:
        rec = Recorder(run, x, y, probes=["performance"], layer="2")
        for step in range(100000):
            loss = torch.nn.functional.cross_entropy(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            rec.step(model, step, loss=float(loss))
            print(step, flush=True)
            time.sleep(float(sys.argv[2]))
    """
)


def _start(tmp_path: Path, out: Path, pause: float) -> subprocess.Popen[str]:
    script = tmp_path / "loop.py"
    script.write_text(LOOP)
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.Popen(
        [sys.executable, str(script), str(out), str(pause)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def _kill_after(proc: subprocess.Popen[str], n_records: int, delay: float, sig: int) -> int:
    """Wait for ``n_records`` printed steps, sleep ``delay``, send ``sig``; the last step
    printed before the process ended."""
    assert proc.stdout is not None
    last = -1
    for _ in range(n_records):
        line = proc.stdout.readline()
        assert line, proc.stderr.read() if proc.stderr else "the loop ended early"
        last = int(line)
    time.sleep(delay)
    proc.send_signal(sig)
    rest, _ = proc.communicate(timeout=60)
    printed = [int(s) for s in rest.split()]
    return printed[-1] if printed else last


def _assert_every_record_up_to(out: Path, last: int) -> None:
    run = runs.open(out)
    wide = run.metrics_wide()
    steps = wide.index.to_numpy()
    assert np.array_equal(steps[steps <= last], np.arange(last + 1)), steps
    assert wide.loc[:last, ["loss", "probe/accuracy"]].notna().all().all()


@pytest.mark.parametrize("trial", range(4))
def test_sigkill_at_a_random_moment_keeps_every_record_made_before(
    tmp_path: Path, trial: int
) -> None:
    rng = random.Random(trial)
    out = tmp_path / "run"
    proc = _start(tmp_path, out, pause=0.0)
    last = _kill_after(proc, rng.randint(1, 25), rng.uniform(0.0, 0.05), signal.SIGKILL)
    _assert_every_record_up_to(out, last)
    assert runs.open(out).state == "running"  # nothing could mark it: it was killed


@pytest.mark.parametrize(("sig", "name"), [(signal.SIGTERM, "SIGTERM"), (signal.SIGINT, "SIGINT")])
def test_sigterm_and_sigint_flush_and_mark_the_run_failed(
    tmp_path: Path, sig: int, name: str
) -> None:
    out = tmp_path / "run"
    proc = _start(tmp_path, out, pause=0.01)
    last = _kill_after(proc, 5, 0.02, sig)
    _assert_every_record_up_to(out, last)
    run = runs.open(out)
    assert run.state == "failed"
    assert run.status["error"] == f"interrupted by {name}"
    if sig == signal.SIGTERM:
        assert proc.returncode == 143, proc.stderr.read() if proc.stderr else ""
    # the records are in a Parquet part now: the journal was turned into one on the flush
    assert not list((out / "metrics").glob("journal-*"))


def test_a_resumed_killed_run_reads_and_compacts_its_journal(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = runs.create(out)
    run.log(0, a=1.0)
    run.persist()
    run.log(1, a=2.0)
    run.persist()
    journals = list((out / "metrics").glob("journal-*.jsonl"))
    assert len(journals) == 1
    # a write cut short by a kill: bytes without a final newline are ignored
    with open(journals[0], "ab") as fh:
        fh.write(b"0000")
    run.close()  # as a kill would leave it: the buffer is not flushed
    assert runs.open(out).metrics["value"].tolist() == [1.0, 2.0]
    again = runs.create(out, resume=True)
    again.drop_records_after(0)
    again.log(1, a=3.0)
    again.finish()
    done = runs.open(out)
    assert done.state == "completed"
    assert done.metrics["value"].tolist() == [1.0, 3.0]
    assert not list((out / "metrics").glob("*"))


def test_a_damaged_journal_line_is_named(tmp_path: Path) -> None:
    out = tmp_path / "run"
    run = runs.create(out)
    run.log(0, a=1.0)
    run.persist()
    run.close()
    journal = next((out / "metrics").glob("journal-*.jsonl"))
    journal.write_bytes(journal.read_bytes().replace(b"1.0", b"7.0"))
    with pytest.raises(runs.RunCorruptError, match="journal.*line 1"):
        _ = runs.open(out).metrics


def test_log_alone_reaches_the_journal_every_persist_every_seconds(tmp_path: Path) -> None:
    run = runs.create(tmp_path / "run")
    run.persist_every = 0.0
    run.log(0, a=1.0)
    run.close()
    assert runs.open(tmp_path / "run").metrics["value"].tolist() == [1.0]


def test_ncdyn_run_stopped_by_sigterm_is_marked_and_says_so(tmp_path: Path) -> None:
    out = tmp_path / "run"
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONPATH=os.pathsep.join(sys.path))
    code = "import sys; from ncdynamics.cli import main; sys.exit(main())"
    argv = ["run", "demo", "--set", "epochs=400", "--set", "width=8", "--no-progress"]
    proc = subprocess.Popen(
        [sys.executable, "-c", code, *argv, "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 120
    while not list((out / "checkpoints").glob("*/step-*.pt")):  # training has started
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.strip().splitlines()[-1].startswith("ncdyn: terminated (SIGTERM)")
    run = runs.open(out)
    assert run.state == "failed" and run.status["error"] == "interrupted by SIGTERM"
