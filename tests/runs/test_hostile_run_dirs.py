"""A run directory someone sends you can touch nothing outside it (issue 32).

Links and hard links planted in a run (or a sweep directory) must be refused before anything
is written through them, and nothing outside the directory may change.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch

from ncdynamics import runs
from ncdynamics.experiments.sweep import _open_sweep_dir
from ncdynamics.runs._lock import acquire

VICTIM_TEXT = "precious\n"


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "outside" / "victim.txt"
    victim.parent.mkdir()
    victim.write_text(VICTIM_TEXT)
    return victim


def _finished_run(path: Path) -> None:
    run = runs.create(path, config={"a": 1})
    run.save_checkpoint(1, {"w": torch.zeros(2)})
    run.log(1, loss=1.0)
    run.flush()
    run.close()


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
@pytest.mark.parametrize("flag", ["new", "resume", "overwrite"])
def test_a_planted_lock_file_is_refused_and_its_target_untouched(tmp_path, how, flag):
    victim = _victim(tmp_path)
    run_dir = tmp_path / "run"
    if flag == "new":
        run_dir.mkdir()
    else:
        _finished_run(run_dir)
        (run_dir / ".lock").unlink()
    (os.symlink if how == "symlink" else os.link)(victim, run_dir / ".lock")
    with pytest.raises(runs.RunExistsError, match=r"\.lock") as info:
        runs.create(
            run_dir, config={"a": 1}, resume=flag == "resume", overwrite=flag == "overwrite"
        )
    assert "\n" not in str(info.value)
    assert victim.read_text() == VICTIM_TEXT


def test_a_lock_file_that_is_not_a_lock_record_is_not_truncated(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / ".lock").write_text("some user's notes\n")
    with pytest.raises(runs.RunExistsError, match=r"\.lock"):
        acquire(run_dir)
    assert (run_dir / ".lock").read_text() == "some user's notes\n"


def test_a_fifo_as_lock_file_is_refused_without_hanging(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    os.mkfifo(run_dir / ".lock")
    with pytest.raises(runs.RunExistsError, match=r"\.lock"):
        acquire(run_dir)


def test_the_lock_this_program_wrote_is_taken_again(tmp_path):
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    assert (run_dir / ".lock").read_text().startswith('{"pid"')
    runs.create(run_dir, config={"a": 1}, resume=True).finish()


@pytest.mark.parametrize("how", ["symlink", "hardlink"])
def test_a_sweep_directory_s_planted_lock_is_refused(tmp_path, how):
    victim = _victim(tmp_path)
    sweep = tmp_path / "sweep"
    sweep.mkdir()
    (os.symlink if how == "symlink" else os.link)(victim, sweep / ".lock")
    with pytest.raises(runs.RunExistsError, match=r"\.lock"):
        _open_sweep_dir(sweep, {"experiment": "demo"})
    assert victim.read_text() == VICTIM_TEXT


@pytest.mark.parametrize("folder", ["checkpoints/main", "checkpoints", "arrays/x", "metrics"])
def test_resume_refuses_a_linked_folder_inside_the_run(tmp_path, folder):
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    run = runs.create(run_dir, config={"a": 1}, resume=True, overwrite=False)
    run.save_array("x", 1, [1.0])
    run.close()
    elsewhere = tmp_path / "outside" / "folder"
    elsewhere.mkdir(parents=True)
    theirs = elsewhere / "step-000000001.pt"
    theirs.write_bytes(b"theirs")
    planted = run_dir / folder
    target = run_dir / "moved"
    os.rename(planted, target)
    os.symlink(elsewhere, planted)
    with pytest.raises(runs.RunExistsError, match="link") as info:
        runs.create(run_dir, config={"a": 1}, resume=True)
    assert "\n" not in str(info.value) and folder.split("/")[0] in str(info.value)
    assert sorted(p.name for p in elsewhere.iterdir()) == ["step-000000001.pt"]
    assert theirs.read_bytes() == b"theirs"


def test_a_link_planted_while_running_is_not_written_through(tmp_path):
    run_dir = tmp_path / "run"
    run = runs.create(run_dir, config={"a": 1})
    elsewhere = tmp_path / "outside"
    elsewhere.mkdir()
    (run_dir / "checkpoints").mkdir()
    os.symlink(elsewhere, run_dir / "checkpoints" / "main")
    with pytest.raises(runs.RunExistsError, match="link"):
        run.save_checkpoint(1, {"w": torch.zeros(2)})
    os.symlink(elsewhere, run_dir / "figures")
    import matplotlib.pyplot as plt

    with pytest.raises(runs.RunExistsError, match="link"):
        run.save_figure(plt.figure(), "f")
    run.close()
    assert list(elsewhere.iterdir()) == []
