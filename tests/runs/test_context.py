"""`with runs.create(...) as run:` closes the run: completed on exit, failed on error."""

from __future__ import annotations

import pytest

from ncdynamics import runs


def test_normal_exit_marks_the_run_completed_and_releases_the_lock(tmp_path):
    with runs.create(tmp_path / "r") as run:
        run.log(0, loss=1.0)
    again = runs.open(tmp_path / "r")
    assert again.state == "completed"
    assert again.metrics["value"].tolist() == [1.0]
    runs.create(tmp_path / "r", overwrite=True).close()  # the lock was released


def test_exception_marks_the_run_failed_with_its_line_and_propagates(tmp_path):
    with pytest.raises(ZeroDivisionError), runs.create(tmp_path / "r") as run:
        run.log(0, loss=1.0)
        1 / 0  # noqa: B018
    again = runs.open(tmp_path / "r")
    assert again.state == "failed"
    assert again.status["error"] == "ZeroDivisionError: division by zero"
    assert again.metrics["value"].tolist() == [1.0]  # flushed before failing


def test_a_multiline_message_is_kept_to_its_first_line(tmp_path):
    with pytest.raises(ValueError), runs.create(tmp_path / "r"):
        raise ValueError("first line\nsecond line")
    assert runs.open(tmp_path / "r").status["error"] == "ValueError: first line"


def test_a_state_set_inside_the_block_is_kept(tmp_path):
    with runs.create(tmp_path / "a") as run:
        run.mark_failed("gave up")
    assert runs.open(tmp_path / "a").status["error"] == "gave up"
    with pytest.raises(KeyError), runs.create(tmp_path / "b") as run:
        run.mark_completed()
        raise KeyError("after completion")
    assert runs.open(tmp_path / "b").state == "completed"


def test_complete_on_exit_false_leaves_the_run_running(tmp_path):
    with runs.create(tmp_path / "r") as run:
        run.complete_on_exit = False
    assert runs.open(tmp_path / "r").state == "running"
    runs.create(tmp_path / "r", resume=True).close()  # lock released, resumable


def test_a_run_opened_for_reading_is_never_marked(tmp_path):
    runs.create(tmp_path / "r").close()
    with runs.open(tmp_path / "r") as run:
        assert run.state == "running"
    assert runs.open(tmp_path / "r").state == "running"
