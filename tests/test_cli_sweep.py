import json
import os
import signal
import subprocess
import sys
import time

import pytest

from ncdynamics.cli import main


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["sweep", "demo", "--grid", "nope=1,2"], "its options: dataset, losses, depth"),
        (["sweep", "demo"], "`--grid` must name at least one option"),
        (["sweep", "demo", "--grid", "lr="], "`--grid` must be KEY=V1,V2"),
        (["sweep", "demo", "--grid", "lr=1", "lr=2"], "names 'lr' twice"),
        (["sweep", "nope", "--grid", "lr=1"], "`experiment` must be one of"),
        (["report"], "needs a run directory or --index"),
    ],
)
def test_bad_input_is_one_line_with_exit_2(argv, match, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_ray_address_that_does_not_answer(tmp_path, capsys):
    start = time.monotonic()
    argv = [
        "sweep",
        "demo",
        "--grid",
        "lr=0.1",
        "--backend",
        "ray",
        "--address",
        "127.0.0.1:9",
        "--out",
        str(tmp_path / "s"),
    ]
    assert main(argv) == 2
    assert time.monotonic() - start < 30
    err = capsys.readouterr().err
    assert "no Ray cluster answered" in err and err.count("\n") == 1
    assert not (tmp_path / "s").exists()


def test_report_index_of_an_empty_folder(tmp_path, capsys):
    assert main(["report", "--index", str(tmp_path)]) == 0
    assert "index:" in capsys.readouterr().out
    assert "0 sweep(s), 0 run(s)" in (tmp_path / "index.html").read_text()


SWEEP = [
    "sweep",
    "demo",
    "--grid",
    "lr=0.05,0.1",
    "--set",
    "epochs=40",  # runs of a few seconds: long enough to be caught mid-run on a busy machine
    "--set",
    "depth=1",
    "--set",
    "width=16",
    "--set",
    "checkpoint_every=1",
    "--workers",
    "1",
    "--no-progress",
]


@pytest.mark.slow
def test_sweep_interrupted_with_ctrl_c_resumes(tmp_path):
    """SIGINT to the process group mid-run: exit 130, then the same command finishes."""
    out = tmp_path / "s"
    cmd = [sys.executable, "-m", "ncdynamics.cli", *SWEEP, "--out", str(out)]
    env = {**os.environ, "MPLBACKEND": "Agg"}
    proc = subprocess.Popen(cmd, start_new_session=True, env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    status = out / "lr=0.05_seed=0" / "status.json"
    while time.monotonic() < deadline and proc.poll() is None:
        if status.is_file() and json.loads(status.read_text()).get("state") == "running":
            break
        time.sleep(0.02)
    assert proc.poll() is None, "the sweep finished before it could be interrupted"
    os.killpg(proc.pid, signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert "run the same command again to resume" in err
    assert json.loads(status.read_text())["state"] in ("failed", "running")
    again = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    table = (out / "table.csv").read_text()
    assert table.count("completed") == 2 and (out / "report.html").is_file()
