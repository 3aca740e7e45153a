"""Fault injection: a run killed at each write point of the store resumes to the same records.

Every file of a run lands through one rename (``os.replace``). The in-process cases replace it
with one that "dies" at the n-th rename onto a chosen file, before or after the rename: an
exception that no handler of the store can swallow, after which every later write fails as
well, so nothing more reaches the disk (what SIGKILL does, except that the temporary file is
removed). The slow cases SIGKILL a real ``ncdyn run`` process at each point instead, which
leaves the temporary file behind. Either way ``--resume`` must finish the run with the same
metrics and summary as an uninterrupted one, and write its report.
"""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from ncdynamics import experiments, runs

SETTINGS = {"losses": ("mse",), "epochs": 2, "width": 16, "depth": 1, "checkpoint_every": 1}

# (id, file pattern relative to the run directory, which occurrence)
POINTS = [
    ("marker", r"\.ncdynamics-run", 1),
    ("config", r"config\.json", 1),
    ("status-created", r"status\.json", 1),
    ("array", r"arrays/.*\.npy", 3),
    ("part", r"metrics/part-.*\.parquet", 1),
    ("checkpoint", r"checkpoints/.*\.pt", 2),
    ("summary", r"summary\.json", 1),
    ("compaction", r"metrics\.parquet", 1),
    ("status-completed", r"status\.json", 2),
    ("figure", r"figures/.*\.png", 1),
    ("report", r"report\.html", 1),
]


class Killed(BaseException):
    """Stands for SIGKILL: raised at the write point and at every write after it."""


def _arm(monkeypatch, root, pattern, occurrence, when):
    real = os.replace
    state = {"seen": 0, "dead": False}
    rx = re.compile(pattern)

    def replace(src, dst):
        rel = os.path.relpath(os.path.abspath(dst), root)
        if rel.startswith(".."):
            return real(src, dst)
        if state["dead"]:
            raise Killed(f"dead before {rel}")
        if rx.fullmatch(rel.replace(os.sep, "/")):
            state["seen"] += 1
            if state["seen"] == occurrence:
                state["dead"] = True
                if when == "after":
                    real(src, dst)
                raise Killed(f"killed at {rel} ({when} the rename)")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    return state


def _leftovers(root):
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.name.endswith(".tmp")) + (
        ["error.txt"] if (root / "error.txt").exists() else []
    )


def _same_json(a, b):
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    run = experiments.run(
        "demo", "smoke", tmp_path_factory.mktemp("ref") / "r", progress=False, **SETTINGS
    )
    return run.metrics, run.summary


CHEAP = [p for p in POINTS if p[0] not in ("figure", "report")]


@pytest.mark.parametrize(("point", "pattern", "occurrence"), CHEAP, ids=[p[0] for p in CHEAP])
@pytest.mark.parametrize("when", ["before", "after"])
def test_killed_at_a_write_point_resumes_to_the_same_records(
    tmp_path, monkeypatch, reference, point, pattern, occurrence, when
):
    out = tmp_path / "r"
    state = _arm(monkeypatch, out, pattern, occurrence, when)
    with pytest.raises(Killed):
        experiments.run("demo", "smoke", out, progress=False, **SETTINGS)
    assert state["dead"]
    monkeypatch.undo()
    resumed = experiments.run("demo", "smoke", out, resume=True, progress=False, **SETTINGS)
    assert resumed.state == "completed"
    pd.testing.assert_frame_equal(resumed.metrics, reference[0])
    assert _same_json(resumed.summary, reference[1])
    assert _leftovers(out) == []
    assert json.loads((out / ".ncdynamics-run").read_text()) == {"format": 1}


def test_killed_while_writing_the_report_ncdyn_resume_writes_it(tmp_path, monkeypatch, capsys):
    from ncdynamics.cli import main

    out = tmp_path / "r"
    argv = ["run", "demo", "--preset", "smoke", "--out", str(out), "--no-progress"]
    argv += ["--set", "epochs=2", "--set", "width=16", "--set", "depth=1"]
    _arm(monkeypatch, out, r"figures/.*\.png", 1, "before")
    with pytest.raises(Killed):
        main(argv)
    monkeypatch.undo()
    assert runs.open(out).state == "completed" and not (out / "report.html").exists()
    before = runs.open(out).metrics
    assert main(argv) == 2  # without --resume: refused, with the hint
    assert "its report is missing: --resume writes it" in capsys.readouterr().err
    assert main([*argv, "--resume"]) == 0
    assert f"report: {out / 'report.html'}" in capsys.readouterr().out
    resumed = runs.open(out)
    assert (out / "report.html").is_file() and len(resumed.figures()) > 1
    pd.testing.assert_frame_equal(resumed.metrics, before)
    assert _leftovers(out) == []


def test_a_corrupt_newest_checkpoint_resumes_from_the_previous_one(
    tmp_path, monkeypatch, reference
):
    out = tmp_path / "r"
    _arm(monkeypatch, out, r"summary\.json", 1, "before")
    with pytest.raises(Killed):
        experiments.run("demo", "smoke", out, progress=False, **SETTINGS)
    monkeypatch.undo()
    newest = sorted((out / "checkpoints" / "mse").glob("step-*.pt"))[-1]
    newest.write_bytes(newest.read_bytes()[:50])
    with pytest.warns(RuntimeWarning, match=newest.name):
        resumed = experiments.run("demo", "smoke", out, resume=True, progress=False, **SETTINGS)
    pd.testing.assert_frame_equal(resumed.metrics, reference[0])
    assert _same_json(resumed.summary, reference[1])


# ---------------------------------------------------------------------------- real SIGKILL
_KILLER = """
import os, re, signal, sys
root, pattern, occurrence, when = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
real, seen = os.replace, [0]

def replace(src, dst):
    rel = os.path.relpath(os.path.abspath(dst), root).replace(os.sep, "/")
    if not rel.startswith("..") and re.fullmatch(pattern, rel):
        seen[0] += 1
        if seen[0] == occurrence:
            if when == "after":
                real(src, dst)
            os.kill(os.getpid(), signal.SIGKILL)
    return real(src, dst)

os.replace = replace
from ncdynamics.cli import main
sys.exit(main(["run", "demo", "--preset", "smoke", "--out", root, "--no-progress"]))
"""


@pytest.fixture(scope="module")
def cli_reference(tmp_path_factory):
    from ncdynamics.cli import main

    out = tmp_path_factory.mktemp("cliref") / "r"
    assert main(["run", "demo", "--preset", "smoke", "--out", str(out), "--no-progress"]) == 0
    run = runs.open(out)
    return run.metrics, run.summary


@pytest.mark.slow
@pytest.mark.parametrize(("point", "pattern", "occurrence"), POINTS, ids=[p[0] for p in POINTS])
@pytest.mark.parametrize("when", ["before", "after"])
def test_sigkill_at_a_write_point_then_resume_finishes_the_run(
    tmp_path, cli_reference, point, pattern, occurrence, when
):
    from ncdynamics.cli import main

    out = tmp_path / "r"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    proc = subprocess.run(
        [sys.executable, "-c", _KILLER, str(out), pattern, str(occurrence), when],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    argv = ["run", "demo", "--preset", "smoke", "--out", str(out), "--no-progress", "--resume"]
    assert main(argv) == 0
    run = runs.open(out)
    assert run.state == "completed" and (out / "report.html").is_file()
    pd.testing.assert_frame_equal(run.metrics, cli_reference[0])
    assert _same_json(run.summary, cli_reference[1])
    assert _leftovers(Path(out)) == []
