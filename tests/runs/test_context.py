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


@pytest.mark.parametrize(
    ("state", "keyword"),
    [("completed", "overwrite=True"), ("running", "resume=True"), ("running", "overwrite=True")],
)
def test_refusals_name_the_python_keyword_and_the_cli_flag(tmp_path, state, keyword):
    run = runs.create(tmp_path / "r")
    if state == "completed":
        run.mark_completed()
    run.close()
    with pytest.raises(runs.RunExistsError) as info:
        runs.create(tmp_path / "r")
    message = str(info.value)
    assert keyword in message
    assert "--" + keyword.split("=")[0] in message  # the CLI prints the same line


def test_log_kernel_stores_block_statistics_and_arrays(tmp_path):
    import numpy as np

    from ncdynamics.probes import kernel_block_stats

    rng = np.random.default_rng(0)
    labels = np.repeat(np.arange(3), 4)
    feats = rng.normal(size=(12, 5)) + 3 * np.eye(5)[labels]
    kernel = feats @ feats.T
    with runs.create(tmp_path / "r") as run:
        stats = runs.log_kernel(run, "my_ntk", 5, kernel, labels)
        runs.log_kernel(run, "by_hand", 6, kernel_block_stats(kernel, labels))
    assert repr(stats) == repr(kernel_block_stats(kernel, labels))
    again = runs.open(tmp_path / "r")
    wide = again.metrics_wide()
    assert wide.loc[5, "my_ntk/alignment"] == pytest.approx(stats.alignment)
    assert wide.loc[5, "my_ntk/same_class"] == pytest.approx(stats.values.same_class)
    assert wide.loc[5, "my_ntk/block_residual"] == pytest.approx(stats.block_residual)
    assert wide.loc[6, "by_hand/different_class"] == pytest.approx(stats.values.different_class)
    np.testing.assert_allclose(again.arrays("my_ntk.traced")[5], kernel)
    np.testing.assert_array_equal(again.arrays("my_ntk.labels")[5], labels)
    assert "by_hand.labels" not in again.array_names()


def test_log_kernel_needs_labels_for_a_raw_kernel(tmp_path):
    import numpy as np

    with runs.create(tmp_path / "r") as run, pytest.raises(ValueError, match="`labels`"):
        runs.log_kernel(run, "k", 0, np.eye(4))


def test_log_kernel_writes_to_any_sink_and_is_not_a_run_method():
    """The kernel bookkeeping lives beside the run store, not in ``Run``: any object with
    ``log`` and ``save_array`` (a ``TeeSink``, a tracker) receives the same records."""
    import numpy as np

    class Sink:
        def __init__(self):
            self.scalars, self.arrays = {}, {}

        def log(self, step, values):
            self.scalars[step] = dict(values)

        def save_array(self, name, step, array):
            self.arrays[(name, step)] = np.asarray(array)

    labels = np.repeat(np.arange(2), 3)
    kernel = np.eye(6) + (labels[:, None] == labels[None, :])
    sink = Sink()
    stats = runs.log_kernel(sink, "k", 2, kernel, labels)
    assert sorted(sink.scalars[2]) == [
        "k/alignment",
        "k/alignment_centered",
        "k/block_residual",
        "k/diagonal",
        "k/different_class",
        "k/same_class",
    ]
    assert sink.scalars[2]["k/alignment"] == stats.alignment
    assert sorted(sink.arrays) == [("k.labels", 2), ("k.traced", 2)]
    assert not hasattr(runs.Run, "log_kernel")


def test_a_run_shows_inline_in_jupyter_with_escaped_text(tmp_path):
    with runs.create(tmp_path / "r", experiment="demo", preset="smoke", seed=3) as run:
        run.log(0, {"nc/nc1": 2.0, "probe/accuracy": 0.5})
        run.log(4, {"nc/nc1": 0.25, "probe/accuracy": 0.75, "<b>odd</b>": 1.0})
    page = runs.open(tmp_path / "r")._repr_html_()
    assert "completed" in page and "demo" in page and "smoke" in page
    assert "nc/nc1" in page and "0.25" in page and "0.75" in page  # final values
    assert "2.0" not in page  # only the last record of each metric
    assert "<b>odd</b>" not in page and "&lt;b&gt;odd&lt;/b&gt;" in page
    assert str(tmp_path / "r") in page


def test_a_failed_run_shows_its_error_inline(tmp_path):
    with pytest.raises(ValueError), runs.create(tmp_path / "r"):
        raise ValueError("bad <input>")
    page = runs.open(tmp_path / "r")._repr_html_()
    assert "failed" in page and "ValueError: bad &lt;input&gt;" in page


def test_report_figure_functions_are_public():
    import ncdynamics.report as report

    for name in ("metric_figures", "kernel_figures", "sweep_figures", "metric_groups"):
        assert name in report.__all__ and callable(getattr(report, name))
        assert getattr(report, name).__doc__
