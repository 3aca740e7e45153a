"""``benchmarks/gpu_campaign.py`` (``make gpu-campaign``) on the CPU: it stops at its budget,
marks the killed step unfinished, packs what must come back into at most 8 plain files, and a
second call given that folder resumes without redoing finished work (issue 33)."""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from ncdynamics import experiments

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "benchmarks" / "gpu_campaign.py"
PY = sys.executable


@pytest.fixture
def gc(monkeypatch):
    spec = importlib.util.spec_from_file_location("gpu_campaign_under_test", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, mod)  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _args(out, work, **kw):
    base = dict(
        out=str(out), work=str(work), budget=6.0, reserve=1.0, min_step=0.5, device="cpu",
        source=None, site=None, max_out_mb=14.0, max_file_mb=4.0, max_log_kb=64,
        retry_failed=False, tests_cap=240.0, bench_cap=150.0,
    )  # fmt: skip
    return argparse.Namespace(**{**base, **kw})


def test_queue_items_parse_and_name_safe_folders(gc):
    item = gc.parse_item("ntk_collapse.fig2:gpu@3/inits=lecun-normal/epochs=4")
    assert (item.name, item.preset, item.seed) == ("ntk_collapse.fig2", "gpu", 3)
    assert item.overrides == (("inits", "lecun-normal"), ("epochs", "4"))
    assert item.slug == "ntk_collapse.fig2-gpu-s3-inits_lecun-normal-epochs_4"
    assert gc.parse_item("lesde.fig3").preset == "gpu"
    for bad in ("x@one", "x/epochs", ":gpu"):
        with pytest.raises(ValueError, match="`--queue`"):
            gc.parse_item(bad)


def test_default_queue_runs_declared_gpu_presets_with_valid_overrides(gc):
    items = [gc.parse_item(q) for q in gc.DEFAULT_QUEUE]
    assert len({i.slug for i in items}) == len(items)
    declared = {s.name for s in experiments.list_experiments() if "gpu" in s.presets}
    assert {i.name for i in items} == declared  # every gpu preset is queued
    for i in items:  # each resolves: the preset exists and the overrides are config fields
        experiments.get(i.name).make_config(i.preset, dict(i.overrides))


def test_steps_run_tests_then_benchmarks_then_runs_on_the_device(gc, tmp_path):
    args = _args(tmp_path / "o", tmp_path / "w", device="cuda", skip=set(), bench_args="--quick")
    args.queue, args.peer = ["ntk_collapse.fig1:gpu"], False
    steps = gc.build_steps(args, PY)
    assert [s.id for s in steps] == [
        "tests-gpu",
        "bench-ntk",
        "bench-collapse",
        "bench-lesde",
        "run:ntk_collapse.fig1-gpu-s0",
    ]
    by_id = {s.id: s.argv for s in steps}
    assert by_id["tests-gpu"][1:6] == ["-m", "pytest", "-q", "-m", "gpu"]
    for sid in ("bench-ntk", "bench-lesde"):
        assert by_id[sid][-3:] == ["--device", "cuda", "--quick"]
    assert "--device" not in by_id["bench-collapse"]  # NumPy: no device to choose
    assert {s.cap for s in steps if s.group == "bench"} == {150.0}
    assert steps[0].cap == 240.0 and steps[-1].cap is None  # a run stops at the deadline only
    run = by_id["run:ntk_collapse.fig1-gpu-s0"]
    assert {"--resume", "--no-progress"} <= set(run)
    assert run[run.index("--device") + 1] == "cuda" and run[run.index("--preset") + 1] == "gpu"
    args.skip = {"tests", "bench"}
    assert [s.id for s in gc.build_steps(args, PY)] == ["run:ntk_collapse.fig1-gpu-s0"]


def _fake_run(gc, name, body):
    """A step that plays a run: ``body`` runs with ``d``, the run folder, created."""
    item = gc.RunItem(name, "smoke", 0)  # its folder and step id: NAME-smoke-s0
    code = f"import os, time, pathlib\nd = pathlib.Path(os.environ['RUNS']) / {item.slug!r}\n"
    code += "d.mkdir(parents=True, exist_ok=True)\n" + textwrap.dedent(body)
    return gc.Step(f"run:{item.slug}", [PY, "-c", code], "runs", run=item)


def test_steps_stop_at_the_budget_and_resume_from_the_copied_folder(gc, tmp_path):
    out = tmp_path / "out"
    steps = lambda: [  # noqa: E731
        _fake_run(gc, "done", "(d / 'summary.json').write_text('{}')"),
        _fake_run(gc, "big", "(d / 'summary.json').write_text('{}')\n"
                  "(d / 'arrays.bin').write_bytes(bytes(2 * 2**20))"),  # fmt: skip
        _fake_run(gc, "slow", """\
            if (d / 'part.txt').exists():
                (d / 'summary.json').write_text('{"resumed": true}')
            else:
                (d / 'part.txt').write_text('half done')
                time.sleep(120)
            """),
    ]  # fmt: skip

    def call(work, budget, out=out):
        c = gc.Campaign(_args(out, work, budget=budget, max_file_mb=1.0))
        c.start()
        results = []
        for s in steps():
            s.env = {"RUNS": str(work / "runs")}
            results.append(c.run_step(s))
            if not results[-1]:
                break
        c.pack()
        return c, results

    done, big, slow = (f"run:{n}-smoke-s0" for n in ("done", "big", "slow"))
    t = time.monotonic()
    c1, results = call(tmp_path / "w1", budget=6.0)
    assert time.monotonic() - t < 6.0 + gc.GRACE + 3.0  # killed at the deadline
    assert results == [True, True, False]
    st = c1.state["steps"]
    assert st[done]["status"] == "finished" and st[done]["copy_complete"]
    assert st[big]["status"] == "finished" and not st[big]["copy_complete"]
    assert st[slow]["status"] == "unfinished" and st[slow]["copy_complete"]
    log = (out / "campaign.log").read_text()
    assert "run:big-smoke-s0: left out arrays.bin (2.0 MiB): over the size caps" in log
    assert "run:slow-smoke-s0: killed at the deadline, unfinished in" in log
    # only plain files at the top: what a device machine sends back
    assert sorted(p.name for p in out.iterdir()) == [
        "artefacts.tar.gz", "campaign-state.json", "campaign.log",
    ]  # fmt: skip
    with tarfile.open(out / "artefacts.tar.gz") as tar:
        names = set(tar.getnames())
    assert "runs/done-smoke-s0/summary.json" in names and "logs/run_slow-smoke-s0.log" in names
    assert "runs/slow-smoke-s0/part.txt" in names  # the unfinished run's copy
    assert "runs/big-smoke-s0/arrays.bin" not in names

    # a fresh machine: new work folder, the same out folder given back
    c2, results = call(tmp_path / "w2", budget=20.0)
    st = c2.state["steps"]
    assert results == [True, True, True]
    assert st[done]["attempts"] == 1 and st[big]["attempts"] == 1
    assert st[slow] == {**st[slow], "status": "finished", "attempts": 2}
    resumed = json.loads((tmp_path / "w2/runs/slow-smoke-s0/summary.json").read_text())
    assert resumed == {"resumed": True}  # it found its first half, restored from the copy
    log = (out / "campaign.log").read_text()
    assert "run:done-smoke-s0: skipped (finished in an earlier call)" in log
    assert "run:slow-smoke-s0: restored its unfinished run from the copy" in log
    assert len(c2.state["calls"]) == 2

    # the same machine again, given nothing back (an empty out): it resumes from its own copy
    c3, results = call(tmp_path / "w2", budget=20.0, out=tmp_path / "out2")
    assert results == [True, True, True] and len(c3.state["calls"]) == 3
    log = (tmp_path / "out2" / "campaign.log").read_text()  # the log carried over, too
    assert log.split("] call 3:")[1].count("skipped (finished in an earlier call)") == 3


def test_campaign_runs_real_presets_stops_and_resumes_on_the_cpu(tmp_path):
    """Two calls of the script itself, with ncdyn runs: the first finishes a smoke run and is
    stopped by its budget inside a long (resumable) demo; the second, on a fresh work folder
    given the first one's output, skips the finished run, resumes the demo from its copied
    checkpoint and writes the claims tables."""
    out = tmp_path / "out"
    queue = "ntk_collapse.phases:smoke,demo:smoke/epochs=100000"
    base = [PY, str(SCRIPT), "--out", str(out), "--device", "cpu", "--queue", queue]

    def call(work, budget, reserve, skip):
        t = time.monotonic()
        proc = subprocess.run(
            [*base, "--work", str(work), "--budget", str(budget), "--reserve", str(reserve)]
            + ["--skip", skip, "--min-step", "2", "--wheels", str(tmp_path / "none")],
            capture_output=True, text=True, timeout=budget + 30,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stdout + proc.stderr
        return time.monotonic() - t

    assert call(tmp_path / "w1", 32, 4, "tests,bench,claims") < 32 + 10
    state = json.loads((out / "campaign-state.json").read_text())["steps"]
    phases, demo = "run:ntk_collapse.phases-smoke-s0", "run:demo-smoke-s0-epochs_100000"
    assert state[phases]["status"] == "finished"
    assert state[demo]["status"] == "unfinished"

    call(tmp_path / "w2", 26, 12, "tests,bench")
    state = json.loads((out / "campaign-state.json").read_text())["steps"]
    assert state[phases]["attempts"] == 1  # not run again
    assert state[demo]["attempts"] == 2 and state[demo]["status"] == "unfinished"
    log = (out / "campaign.log").read_text()
    assert f"{phases}: skipped (finished in an earlier call)" in log
    assert f"{demo}: restored its unfinished run from the copy" in log
    assert "claims: tables of 1 run(s)" in log
    rows = json.loads((out / "claims-gpu.json").read_text())
    assert {r["experiment"] for r in rows} == {"ntk_collapse.phases"}
    files = sorted(p.name for p in out.iterdir())
    assert all(p.is_file() and p.stat().st_size < 16 * 2**20 for p in out.iterdir())
    assert files == [
        "artefacts.tar.gz", "campaign-state.json", "campaign.log", "claims-gpu.json",
        "claims-gpu.md",
    ]  # fmt: skip
    with tarfile.open(out / "artefacts.tar.gz") as tar:
        names = set(tar.getnames())
    run = "runs/ntk_collapse.phases-smoke-s0"
    assert {f"{run}/summary.json", f"{run}/metrics.parquet", f"{run}/status.json"} <= names
    assert any(n.startswith("runs/demo-smoke-s0-epochs_100000/checkpoints/") for n in names)


def test_a_step_past_its_cap_is_failed_and_the_call_goes_on(gc, tmp_path):
    c = gc.Campaign(_args(tmp_path / "out", tmp_path / "w", budget=30.0))
    c.start()
    pidfile = tmp_path / "worker.pid"
    # the step starts a worker that ignores SIGTERM: the group's SIGKILL must end it too
    worker = (
        "import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid())); time.sleep(60)"
    )
    code = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {worker!r}]); "
    code += "time.sleep(60)"
    capped = gc.Step("bench-x", [PY, "-c", code], "bench", cap=1.0)
    t = time.monotonic()
    assert c.run_step(capped) is True  # not the deadline: the call goes on
    assert time.monotonic() - t < 1.0 + gc.GRACE + 3.0
    assert c.state["steps"]["bench-x"]["status"] == "failed"
    pid = int(pidfile.read_text())
    time.sleep(0.5)
    status = Path(f"/proc/{pid}/status")
    assert not status.exists() or "\nState:\tZ" in status.read_text()  # gone (or a zombie)
    assert c.run_step(gc.Step("bench-y", [PY, "-c", "pass"], "bench", cap=1.0)) is True
    assert c.state["steps"]["bench-y"]["status"] == "finished"
    assert (
        "bench-x: killed at its cap of 1 s, failed" in (tmp_path / "out/campaign.log").read_text()
    )


def test_plan_prints_the_steps_and_writes_nothing(tmp_path):
    out = tmp_path / "out"
    proc = subprocess.run(
        [PY, str(SCRIPT), "--out", str(out), "--plan", "--skip", "bench"],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "tests-gpu: python -m pytest -q -m gpu -p no:cacheprovider"
    assert lines[1].startswith("run:ntk_collapse.fig1-gpu-s0: ncdyn run ntk_collapse.fig1 ")
    assert len(lines) == 1 + 14 and not out.exists()
