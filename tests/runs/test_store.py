import json
import os
import stat

import numpy as np
import pandas as pd
import pytest

from ncdynamics import runs


def test_run_round_trips_config_metrics_arrays_and_summary(tmp_path):
    run = runs.create(tmp_path / "r", config={"lr": 0.1}, seed=3, experiment="x", preset="smoke")
    run.log(0, {"a": 1.0, "b": 2.0})
    run.log(1, a=0.5)
    run.save_array("kernel", 1, np.eye(3))
    run.save_summary({"final": 0.5})
    run.mark_completed()
    again = runs.open(tmp_path / "r")
    assert again.config["lr"] == 0.1 and again.status["seed"] == 3
    assert again.state == "completed"
    df = again.metrics
    assert list(df.columns) == ["step", "name", "value"]
    assert df[df["name"] == "a"]["value"].tolist() == [1.0, 0.5]
    np.testing.assert_array_equal(again.arrays("kernel")[1], np.eye(3))
    assert again.summary == {"final": 0.5}
    # readable with pandas and numpy alone
    assert len(pd.read_parquet(tmp_path / "r" / "metrics.parquet")) == 3
    assert json.loads((tmp_path / "r" / "status.json").read_text())["state"] == "completed"


def test_completed_run_is_never_rewritten_unless_asked(tmp_path):
    runs.create(tmp_path / "r", config={}).mark_completed()
    with pytest.raises(runs.RunExistsError, match="already holds a completed run"):
        runs.create(tmp_path / "r", config={})
    fresh = runs.create(tmp_path / "r", config={"new": 1}, overwrite=True)
    assert fresh.config["new"] == 1 and fresh.state == "running"


def test_unfinished_run_needs_resume_with_the_same_config(tmp_path):
    first = runs.create(tmp_path / "r", config={"a": 1})
    first.log(0, x=1.0)
    first.flush()
    with pytest.raises(runs.RunExistsError, match="--resume"):
        runs.create(tmp_path / "r", config={"a": 1})
    with pytest.raises(ValueError, match="config differs"):
        runs.create(tmp_path / "r", config={"a": 2}, resume=True)
    resumed = runs.create(tmp_path / "r", config={"a": 1}, resume=True)
    resumed.log(0, x=2.0)  # a record written again after resuming: the last one wins
    assert resumed.metrics["value"].tolist() == [2.0]


def test_checkpoints_flush_metrics_and_keep_the_newest(tmp_path):
    run = runs.create(tmp_path / "r")
    run.log(1, x=1.0)
    for step in (1, 2, 3):
        run.save_checkpoint(step, {"w": step}, tag="m")
    assert (tmp_path / "r" / "metrics").exists() and len(run.metrics) == 1
    assert run.load_checkpoint("m")["w"] == 3
    assert len(list((tmp_path / "r" / "checkpoints" / "m").glob("*.pt"))) == 2
    assert run.load_checkpoint("other") is None


def test_open_rejects_non_runs_and_unknown_format(tmp_path):
    with pytest.raises(FileNotFoundError, match="run directory"):
        runs.open(tmp_path)
    run = runs.create(tmp_path / "r")
    run._set_status(format_version=99)
    with pytest.raises(ValueError, match="format version 99"):
        runs.open(tmp_path / "r")


def test_failed_write_leaves_no_partial_file(tmp_path):
    from ncdynamics.runs._io import atomic_write

    def boom(path):
        path.write_text("half")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        atomic_write(tmp_path / "f.json", boom)
    assert list(tmp_path.iterdir()) == []


def test_non_finite_metric_is_recorded_with_a_warning(tmp_path):
    run = runs.create(tmp_path / "r")
    with pytest.warns(RuntimeWarning, match="metric 'loss' at step 2 is nan"):
        run.log(2, loss=float("nan"))


def test_bad_array_name_and_missing_array(tmp_path):
    run = runs.create(tmp_path / "r")
    with pytest.raises(ValueError, match="`name` must contain only"):
        run.save_array("a b", 0, np.zeros(2))
    with pytest.raises(KeyError, match="no arrays named 'k'"):
        run.arrays("k")


def test_non_run_directory_is_not_overwritten(tmp_path):
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(runs.RunExistsError, match="not a run directory"):
        runs.create(tmp_path, config={})


def test_drop_records_after_keeps_the_step_itself_and_everything_before(tmp_path):
    run = runs.create(tmp_path / "r")
    for step in range(6):
        run.log(step, x=float(step), y=-float(step))
        run.save_array("k", step, np.full(2, step))
        if step % 2:
            run.flush()  # records spread over parts and the buffer
    run.log(2, x=-2.0)  # buffered, at or before the step: kept (and the last record wins)
    run.log(9, x=9.0)  # buffered, after the step: dropped
    run.drop_records_after(3)
    assert run.metrics.set_index(["name", "step"]).loc[("x", 2), "value"] == -2.0
    assert sorted(set(run.metrics["step"])) == [0, 1, 2, 3]
    assert sorted(run.arrays("k")) == [0, 1, 2, 3]
    run.drop_records_after(-1)
    assert run.metrics.empty and run.arrays("k") == {}


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_run_files_follow_the_umask(tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        run = runs.create(tmp_path / "r", config={})
        run.log(0, x=1.0)
        run.save_array("k", 0, np.zeros(2))
        run.save_summary({"a": 1})
        run.mark_completed()
    finally:
        os.umask(old)
    files = [p for p in (tmp_path / "r").rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"config.json", "status.json", "metrics.parquet"}
    assert {p.relative_to(tmp_path): stat.S_IMODE(p.stat().st_mode) for p in files} == {
        p.relative_to(tmp_path): mode for p in files
    }


def test_resume_of_a_completed_run_returns_it_and_cleans_leftovers(tmp_path):
    run = runs.create(tmp_path / "r", config={"a": 1})
    run.log(0, x=1.0)
    run.mark_completed()
    finished = run.status["finished"]
    (tmp_path / "r" / "error.txt").write_text("stale traceback of an earlier attempt")
    (tmp_path / "r" / ".summary.json.0badc0de.tmp").write_text("{")
    with pytest.raises(runs.RunExistsError, match="--resume"):
        runs.create(tmp_path / "r", config={"a": 1})
    with pytest.raises(ValueError, match="config differs"):
        runs.create(tmp_path / "r", config={"a": 2}, resume=True)
    again = runs.create(tmp_path / "r", config={"a": 1}, resume=True)
    assert again.state == "completed" and again.status["finished"] == finished
    assert again.metrics["value"].tolist() == [1.0]
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == [
        ".lock",
        ".ncdynamics-run",
        "config.json",
        "metrics",
        "metrics.parquet",
        "status.json",
    ]


def test_completion_removes_leftover_temporary_files_and_a_stale_error(tmp_path):
    run = runs.create(tmp_path / "r", config={})
    (tmp_path / "r" / "error.txt").write_text("traceback of the killed attempt")
    (tmp_path / "r" / "metrics").mkdir()
    (tmp_path / "r" / "metrics" / ".part-000001-1-ab.parquet.deadbeef.tmp").write_bytes(b"x")
    (tmp_path / "r" / "user.tmp").write_text("not ours: kept")
    run.mark_completed()
    names = {p.name for p in (tmp_path / "r").rglob("*")}
    assert "error.txt" not in names and not any(n.startswith(".part") for n in names)
    assert "user.tmp" in names


def test_status_records_the_source_commit(tmp_path):
    from ncdynamics.runs._store import source_commit

    run = runs.create(tmp_path / "r", config={"a": 1})
    commit = run.status["versions"]["ncdynamics_commit"]
    assert commit == (source_commit() or "unknown")
    if commit != "unknown":  # a source checkout: a 40-hex commit, maybe marked dirty
        assert len(commit.split("+")[0]) == 40
