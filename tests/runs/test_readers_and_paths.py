"""Readers that overlap the end-of-run compaction, and run paths that look like URIs."""

from __future__ import annotations

import pandas as pd
import pytest

from ncdynamics import runs
from ncdynamics.runs import _store


def _writer(path, *, compacted_before: bool):
    run = runs.create(path, config={})
    for step in range(4):
        run.log(step, loss=float(step))
        if step == 1 and compacted_before:
            run.flush()
            run._compact_metrics()  # an earlier metrics.parquet, as after a resume
        run.flush()
    return run


@pytest.mark.parametrize("compacted_before", [False, True])
def test_a_reader_overlapping_compaction_sees_every_record_and_no_damage(
    tmp_path, monkeypatch, compacted_before
):
    writer = _writer(tmp_path / "run", compacted_before=compacted_before)
    want = writer.metrics.reset_index(drop=True)
    reader = runs.open(tmp_path / "run")
    real_read = _store.read_metric_table
    calls = []

    def read_then_compact(path):
        frame = real_read(path)
        calls.append(path)
        if len(calls) == 1:  # the writer compacts just after the reader's first file
            writer._compact_metrics()
        return frame

    monkeypatch.setattr(_store, "read_metric_table", read_then_compact)
    got = reader.metrics.reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want)
    writer.close()


@pytest.mark.parametrize("name", ["lr:0.1", "s3:x", "file:y"])
def test_a_relative_path_with_a_colon_is_a_path(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    run = runs.create(name, config={"lr": 0.1})
    run.log(0, loss=1.0)
    run.log(1, loss=0.5)
    run.finish()
    back = runs.open(name)
    assert back.state == "completed"
    assert back.metrics["value"].tolist() == [1.0, 0.5]
    assert (tmp_path / name / "metrics.parquet").is_file()


def test_a_sweep_table_under_a_path_with_a_colon(tmp_path, monkeypatch):
    import importlib
    import json

    sweep = importlib.import_module("ncdynamics.experiments.sweep")

    monkeypatch.chdir(tmp_path)
    (tmp_path / "lr:0.1").mkdir()
    (tmp_path / "lr:0.1" / "sweep.json").write_text(json.dumps({"runs": {}}))
    sweep.write_sweep_table("lr:0.1")
    assert sweep.read_sweep_table("lr:0.1").empty


@pytest.mark.parametrize(
    "step, values, match",
    [
        (2**70, {"loss": 1.0}, "`step` must be within the 64-bit"),
        ("3", {"loss": 1.0}, "`step` must be an integer"),
        (3, {"loss": 10**400}, "metric 'loss' at step 3 must be a real number"),
        (3, {"loss": "high"}, "metric 'loss' at step 3 must be a real number"),
    ],
)
def test_a_record_that_cannot_be_written_is_refused_when_logged(tmp_path, step, values, match):
    run = runs.create(tmp_path / "run", config={})
    run.log(0, loss=2.0)
    with pytest.raises(ValueError, match=match) as info:
        run.log(step, values)
    assert "\n" not in str(info.value)
    run.finish()  # the refused record is not buffered: the run still finishes
    assert runs.open(tmp_path / "run").state == "completed"
