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


# ------------------------------------------------------------------ hostile files, read side
class _Blocked(BaseException):
    """Raised by the alarm; a BaseException, so that no ``except Exception`` swallows it."""


def _with_timeout(seconds: int):
    """Fail (instead of hanging the suite) when the body blocks longer than ``seconds``."""
    import signal

    def _alarm(signum, frame):
        raise _Blocked(f"blocked for more than {seconds} s")

    class _Guard:
        def __enter__(self):
            self.old = signal.signal(signal.SIGALRM, _alarm)
            signal.alarm(seconds)

        def __exit__(self, *exc):
            signal.alarm(0)
            signal.signal(signal.SIGALRM, self.old)

    return _Guard()


def _plant_fifo_checkpoint(run_dir: Path) -> None:
    os.mkfifo(run_dir / "checkpoints" / "main" / "step-000000009.pt")


def test_a_fifo_as_newest_checkpoint_does_not_hang_resume(tmp_path):
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    _plant_fifo_checkpoint(run_dir)
    run = runs.open(run_dir)
    with _with_timeout(20), pytest.warns(RuntimeWarning, match="step-000000009.pt"):
        state = run.load_checkpoint()
    assert state["step"] == 1


def test_a_linked_checkpoint_is_not_read(tmp_path):
    run_dir = tmp_path / "run"
    _finished_run(run_dir)
    outside = tmp_path / "theirs.pt"
    torch.save({"step": 99}, outside)
    os.symlink(outside, run_dir / "checkpoints" / "main" / "step-000000099.pt")
    with pytest.warns(RuntimeWarning, match="step-000000099.pt"):
        assert runs.open(run_dir).load_checkpoint()["step"] == 1


def _report_run(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    run = runs.create(run_dir, config={"a": 1})
    for step in range(3):
        run.log(step, loss=1.0 / (step + 1))
    run.finish()
    return run_dir


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "outside-file"])
def test_report_reads_only_regular_figures_inside_the_run(tmp_path, kind):
    from ncdynamics.report import write_report

    run_dir = _report_run(tmp_path)
    (run_dir / "figures").mkdir(exist_ok=True)
    planted = run_dir / "figures" / "zz-planted.png"
    secret = tmp_path / "secret.png"
    secret.write_bytes(b"\x89PNG secret-bytes-from-outside")
    if kind == "fifo":
        os.mkfifo(planted)
    else:
        os.symlink("/dev/zero" if kind == "dev-zero" else secret, planted)
    with _with_timeout(60):
        report = write_report(run_dir, draw=False)
    html = Path(report).read_text()
    import base64

    assert base64.b64encode(secret.read_bytes()).decode()[:24] not in html
    assert "zz-planted" not in html


def test_deeply_nested_json_is_named_in_one_line_and_spares_the_index(tmp_path):
    from ncdynamics.report import write_index

    good = _report_run(tmp_path / "good")
    bad = _report_run(tmp_path / "bad")
    (bad / "summary.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(runs.RunCorruptError, match="summary.json") as info:
        _ = runs.open(bad).summary
    assert "\n" not in str(info.value)
    index = write_index(tmp_path)
    assert good.parent.name in Path(index).read_text()


def test_an_oversized_json_file_is_refused_without_reading_it_whole(tmp_path, monkeypatch):
    from ncdynamics.runs import _io

    run_dir = _report_run(tmp_path)
    monkeypatch.setattr(_io, "JSON_LIMIT", 1000)
    (run_dir / "summary.json").write_text('{"x": "' + "a" * 5000 + '"}')
    with pytest.raises(runs.RunCorruptError, match="summary.json.*bytes"):
        _ = runs.open(run_dir).summary


def test_a_linked_status_file_is_not_read(tmp_path):
    run_dir = _report_run(tmp_path)
    outside = tmp_path / "status-elsewhere.json"
    os.replace(run_dir / "status.json", outside)
    os.symlink(outside, run_dir / "status.json")
    with pytest.raises((runs.RunCorruptError, FileNotFoundError), match="status.json"):
        _ = runs.open(run_dir).status


def test_array_names_made_of_dots_are_refused(tmp_path):
    run = runs.create(tmp_path / "run", config={})
    for name in ("..", "."):
        with pytest.raises(ValueError, match="`name`"):
            run.save_array(name, 0, [1.0])
    run.close()
    assert not (tmp_path / "run" / "000000000.npy").exists()


def test_reading_arrays_never_leaves_the_arrays_folder(tmp_path):
    run_dir = tmp_path / "run"
    run = runs.create(run_dir, config={})
    run.save_array("x", 0, [1.0])
    run.finish()
    import numpy as np

    np.save(run_dir / "000000001.npy", np.ones(2))  # a file in the run root
    for name in ("..", ".", "../arrays/x"):
        with pytest.raises(KeyError):
            runs.open(run_dir).arrays(name)
