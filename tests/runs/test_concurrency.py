"""One writer per run directory: a second one is refused with the holder's PID; no part is lost."""

import os
import signal
import subprocess
import sys

import pytest

from ncdynamics import runs

HOLD = (
    "import sys, time\n"
    "from ncdynamics import runs\n"
    "run = runs.create(sys.argv[1], config={'a': 1})\n"
    "run.log(0, x=1.0)\n"
    "run.flush()\n"
    "print('ready', flush=True)\n"
    "time.sleep(300)\n"
)


@pytest.fixture
def live_writer(tmp_path):
    """A process that created ``tmp_path/r`` and keeps running (a live run)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path / "r")],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield proc
    proc.kill()
    proc.wait()


def _files(root):
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


@pytest.mark.parametrize(
    "kwargs", [{"resume": True}, {"overwrite": True}, {}], ids=["resume", "overwrite", "plain"]
)
def test_a_second_writer_is_refused_naming_the_pid_that_holds_the_run(
    tmp_path, live_writer, kwargs
):
    before = _files(tmp_path / "r")
    with pytest.raises(runs.RunInUseError, match=f"process {live_writer.pid}") as info:
        runs.create(tmp_path / "r", config={"a": 1}, **kwargs)
    assert "\n" not in str(info.value)
    assert isinstance(info.value, runs.RunExistsError)  # the CLI prints it in one line, exit 2
    assert _files(tmp_path / "r") == before


def test_a_killed_writer_frees_the_run_for_resume(tmp_path, live_writer):
    live_writer.send_signal(signal.SIGKILL)
    live_writer.wait()
    resumed = runs.create(tmp_path / "r", config={"a": 1}, resume=True)
    assert resumed.state == "running" and resumed.metrics["value"].tolist() == [1.0]


def test_two_writers_flushing_at_once_lose_no_part(tmp_path, monkeypatch):
    """Writer A lists the parts, then writer B flushes before A's part lands."""
    a = runs.create(tmp_path / "r", config={})
    b = runs.Run(tmp_path / "r")
    a.log(0, x=1.0)
    b.log(1, x=2.0)
    real = os.replace
    state = {"inside": False}

    def interleaved(src, dst):
        if not state["inside"] and os.path.basename(os.path.dirname(dst)) == "metrics":
            state["inside"] = True
            b.flush()  # B's whole flush happens after A chose its part's name, before it lands
        return real(src, dst)

    monkeypatch.setattr(os, "replace", interleaved)
    a.flush()
    monkeypatch.undo()
    df = runs.Run(tmp_path / "r").metrics
    assert sorted(df["step"].tolist()) == [0, 1]


def test_part_names_are_unique_and_sort_in_write_order(tmp_path):
    run = runs.create(tmp_path / "r", config={})
    for step in range(12):
        run.log(step, x=float(step))
        run.flush()
    names = [p.name for p in sorted((tmp_path / "r" / "metrics").glob("part-*.parquet"))]
    assert len(set(names)) == 12
    assert str(os.getpid()) in names[0]
    run.log(3, x=-1.0)  # written again later: the last record wins
    run.flush()
    got = run.metrics.set_index("step")["value"]
    assert got[3] == -1.0 and got[11] == 11.0
