"""`overwrite` removes only what the run store wrote; anything else is refused, untouched."""

import json
import os
import re

import numpy as np
import pytest
import torch

from ncdynamics import runs


def _snapshot(root):
    """Every entry under ``root`` with its bytes (files) or None (folders, links)."""
    out = {}
    for p in sorted(root.rglob("*")):
        rel = str(p.relative_to(root))
        out[rel] = p.read_bytes() if p.is_file() and not p.is_symlink() else None
    return out


def _completed_run(path):
    run = runs.create(path, config={"a": 1}, experiment="x", preset="smoke")
    run.log(0, loss=1.0)
    run.save_array("kernel", 0, np.eye(2))
    run.save_checkpoint(0, {"w": torch.zeros(2)}, tag="main")
    run.save_summary({"s": 1.0})
    run.mark_completed()
    (run.path / "report.html").write_text("<html></html>")
    (run.path / "figures").mkdir(exist_ok=True)
    (run.path / "figures" / "loss.png").write_bytes(b"png")
    return run


@pytest.mark.parametrize(
    ("foreign", "named"),
    [
        ("notes.txt", "'notes.txt'"),
        ("figures/mine.txt", "'figures/mine.txt'"),
        ("arrays/kernel/readme.md", "'arrays/kernel/readme.md'"),
        ("checkpoints/main/best-model.bin", "'checkpoints/main/best-model.bin'"),
        ("metrics/extra.csv", "'metrics/extra.csv'"),
        ("tb/events.out.tfevents", "'tb'"),  # a foreign folder is named as a whole
    ],
)
def test_overwrite_refuses_a_run_holding_a_foreign_file_and_touches_nothing(
    tmp_path, foreign, named
):
    _completed_run(tmp_path / "r")
    target = tmp_path / "r" / foreign
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("the user's own file")
    before = _snapshot(tmp_path / "r")
    with pytest.raises(runs.RunExistsError, match=re.escape(named)) as info:
        runs.create(tmp_path / "r", config={"a": 2}, overwrite=True)
    assert "\n" not in str(info.value)
    assert _snapshot(tmp_path / "r") == before


def test_overwrite_refuses_a_symlink_and_never_follows_it(tmp_path):
    _completed_run(tmp_path / "r")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "precious.txt").write_text("keep")
    os.symlink(tmp_path / "elsewhere", tmp_path / "r" / "figures" / "link")
    with pytest.raises(runs.RunExistsError, match="link"):
        runs.create(tmp_path / "r", config={}, overwrite=True)
    assert (tmp_path / "elsewhere" / "precious.txt").read_text() == "keep"


@pytest.mark.parametrize(
    ("files", "named"),
    [
        ({"status.json": '{"state": "completed"}', "data.csv": "1,2"}, "data.csv"),
        ({"status.json": "{}", "config.json": "{}", "thesis.tex": "x"}, "thesis.tex"),
        ({"keep.txt": "mine"}, "keep.txt"),
        ({"config.json": '{"mine": 1}'}, "config.json"),
    ],
)
@pytest.mark.parametrize("flag", ["overwrite", "resume"])
def test_a_directory_that_is_not_a_run_is_refused_untouched(tmp_path, files, named, flag):
    d = tmp_path / "userdocs"
    d.mkdir()
    for name, text in files.items():
        (d / name).write_text(text)
    before = _snapshot(d)
    with pytest.raises(runs.RunExistsError, match=named.replace(".", r"\.")) as info:
        runs.create(d, config={}, **{flag: True})
    assert "\n" not in str(info.value)
    assert _snapshot(d) == before  # no lock file, no marker, nothing


def test_overwrite_removes_every_file_the_store_wrote_and_starts_fresh(tmp_path):
    old = _completed_run(tmp_path / "r")
    (old.path / "error.txt").write_text("old traceback")
    (old.path / "metrics" / ".part-000009.parquet.1a2b3c4d.tmp").parent.mkdir(exist_ok=True)
    (old.path / "metrics" / ".part-000009.parquet.1a2b3c4d.tmp").write_bytes(b"half")
    fresh = runs.create(tmp_path / "r", config={"a": 2}, overwrite=True)
    assert fresh.state == "running" and fresh.config["a"] == 2
    assert fresh.metrics.empty and fresh.summary == {} and fresh.array_names() == []
    assert fresh.load_checkpoint("main") is None and fresh.figures() == []
    left = {p.name for p in fresh.path.rglob("*") if p.is_file()}
    assert left == {".ncdynamics-run", ".lock", "config.json", "status.json"}
    assert json.loads((fresh.path / ".ncdynamics-run").read_text()) == {"format": 1}


def _legacy(path):
    """A completed run as earlier versions wrote it: no format marker, no lock file."""
    run = _completed_run(path)
    run.close()
    (path / ".ncdynamics-run").unlink()
    (path / ".lock").unlink()
    return run


def test_a_legacy_run_opens_for_reading_and_resumes_only_when_it_holds_store_files(tmp_path):
    _legacy(tmp_path / "r")
    old = runs.open(tmp_path / "r")
    assert old.state == "completed" and old.metrics["value"].tolist() == [1.0]
    old._set_status(state="failed")
    (tmp_path / "r" / "notes.txt").write_text("mine")
    with pytest.raises(runs.RunExistsError, match=r"notes\.txt"):
        runs.create(tmp_path / "r", config={"a": 1}, experiment="x", preset="smoke", resume=True)
    assert not (tmp_path / "r" / ".ncdynamics-run").exists()
    (tmp_path / "r" / "notes.txt").unlink()
    resumed = runs.create(
        tmp_path / "r", config={"a": 1}, experiment="x", preset="smoke", resume=True
    )
    assert resumed.state == "running" and resumed.metrics["value"].tolist() == [1.0]
    assert json.loads((tmp_path / "r" / ".ncdynamics-run").read_text()) == {"format": 1}


def test_a_legacy_run_holding_only_store_files_can_be_overwritten(tmp_path):
    _legacy(tmp_path / "r")
    fresh = runs.create(tmp_path / "r", config={"b": 1}, overwrite=True)
    assert fresh.metrics.empty and fresh.config["b"] == 1


def test_resume_keeps_foreign_files_of_a_marked_run(tmp_path):
    run = runs.create(tmp_path / "r", config={"a": 1})
    run.mark_failed("stopped")
    (tmp_path / "r" / "tb").mkdir()
    (tmp_path / "r" / "tb" / "events").write_text("tensorboard")
    resumed = runs.create(tmp_path / "r", config={"a": 1}, resume=True)
    assert resumed.state == "running" and (tmp_path / "r" / "tb" / "events").is_file()


def test_out_that_is_a_file_is_refused(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(runs.RunExistsError, match="is not a directory"):
        runs.create(tmp_path / "f", overwrite=True)
    assert (tmp_path / "f").read_text() == "x"


def test_overwrite_stopped_midway_leaves_a_run_that_never_started(tmp_path, monkeypatch):
    """status.json goes first: a half-removed run is never mistaken for one with records."""
    from pathlib import Path

    _completed_run(tmp_path / "r")
    real = Path.unlink
    removed = []

    def unlink(self, missing_ok=False):
        if len(removed) == 2:
            raise KeyboardInterrupt  # stands for a kill in the middle of the removal
        removed.append(self.name)
        return real(self, missing_ok=missing_ok)

    monkeypatch.setattr(Path, "unlink", unlink)
    with pytest.raises(KeyboardInterrupt):
        runs.create(tmp_path / "r", config={"a": 2}, overwrite=True)
    monkeypatch.undo()
    assert removed[0] == "status.json" and (tmp_path / "r" / "metrics.parquet").exists()
    with pytest.raises(runs.RunExistsError, match="killed before it started"):
        runs.create(tmp_path / "r", config={"a": 2})
    fresh = runs.create(tmp_path / "r", config={"a": 2}, resume=True)
    assert fresh.state == "running" and fresh.metrics.empty and fresh.summary == {}


def test_demo_twice_with_overwrite_removes_its_own_compare_and_forecast_output(tmp_path):
    # Regression: `ncdyn demo` writes RUN/compare, and `make demo` runs it again with
    # --overwrite; the store refused the run because it did not know that folder.
    from ncdynamics.cli import main

    out = tmp_path / "demo"
    argv = ["demo", "--preset", "smoke", "--out", str(out), "--overwrite", "--no-progress"]
    assert main(argv) == 0
    assert main(["forecast", str(out), "--at", "0.5"]) == 0
    assert (out / "compare" / ".ncdynamics-compare").is_file()
    assert (out / "forecast-0.5" / ".ncdynamics-forecast").is_file()
    assert main(argv) == 0
    assert not (out / "forecast-0.5").exists() and (out / "compare" / "report.html").is_file()


def test_overwrite_refuses_an_unmarked_folder_inside_a_run(tmp_path):
    run = runs.create(tmp_path / "r", config={"a": 1})
    run.mark_completed()
    run.close()
    (tmp_path / "r" / "compare").mkdir()
    (tmp_path / "r" / "compare" / "notes.txt").write_text("mine")
    with pytest.raises(runs.RunExistsError, match="'compare'"):
        runs.create(tmp_path / "r", config={"a": 1}, overwrite=True)
    assert (tmp_path / "r" / "compare" / "notes.txt").read_text() == "mine"
