import json

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
    with pytest.raises(runs.RunExistsError, match="already holds a completed run"):
        runs.create(tmp_path / "r", config={}, resume=True)
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
