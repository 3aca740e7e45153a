"""Run figures read at a glance: labelled panels, one time axis, LR changes marked,
constant and once-recorded metrics in a table, overlays for any prefix, class means drawn,
and a report that shows itself in Jupyter."""

import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest

from ncdynamics import report, runs
from ncdynamics.report.figures import lr_changes, metric_figures, static_metrics, time_axis


def _run(path, steps, *, prefixes=("adam", "sgd"), lr_drop=(10, 20), config=None):
    run = runs.create(path, config=config or {}, seed=0)
    for t in steps:
        row = {}
        for i, p in enumerate(prefixes):
            lr = 0.1 * 0.1 ** sum(t >= d for d in lr_drop)
            row.update(
                {
                    f"{p}/nc/nc1": float(np.exp(-0.2 * (i + 1) * t)),
                    f"{p}/test/accuracy": 1 - 0.5 * np.exp(-t / 5),
                    f"{p}/lr": lr,
                    f"{p}/pair_X": 3.5,
                }
            )
        run.log(int(t), row)
    run.flush()
    return run


def _panels(figs):
    return {ax.get_title(): ax for _, fig in figs for ax in fig.axes if ax.get_visible()}


def test_any_prefix_overlays_in_one_labelled_panel(tmp_path):
    run = _run(tmp_path / "r", range(31))
    figs = metric_figures(run.metrics, unit="epoch")
    names = [n for n, _ in figs]
    assert names == ["metrics-nc", "metrics-performance"]  # no lr, no constant panel
    panels = _panels(figs)
    nc1 = panels["NC1: within-class variability"]
    assert [ln.get_label() for ln in nc1.lines if not ln.get_label().startswith("_")] == [
        "adam",
        "sgd",
    ]
    assert nc1.get_yscale() == "log" and nc1.get_ylabel() == "Tr(Σ_W Σ_B⁺) / C"
    assert nc1.get_xscale() == "linear" and nc1.get_xlabel() == "epoch"
    for fig in (f for _, f in figs):
        plt.close(fig)


def test_overlapping_lines_stay_distinguishable(tmp_path):
    run = runs.create(tmp_path / "r", config={}, seed=0)
    for t in range(20):
        run.log(t, {"a/nc/nc1": 1.0 / (t + 1), "b/nc/nc1": 1.0 / (t + 1)})  # identical
    run.flush()
    ((_, fig),) = metric_figures(run.metrics)
    a, b = [ln for ln in fig.axes[0].lines if ln.get_label() in ("a", "b")]
    assert a.get_linestyle() != b.get_linestyle() and a.get_marker() != b.get_marker()
    assert a.get_color() != b.get_color()
    assert b.get_zorder() > a.get_zorder() and b.get_linewidth() < a.get_linewidth()
    plt.close(fig)


def test_time_axis_is_linear_for_even_records_and_log_for_geometric_ones():
    assert time_axis([np.arange(0.0, 200)]).scale == "linear"
    geometric = np.array([0.0] + [2.0**k for k in range(12)])
    axis = time_axis([geometric])
    assert axis.scale == "log" and "step 0 not shown" in axis.label
    assert time_axis([np.arange(0.0, 1001, 10)]).scale == "linear"


def test_log_spaced_records_draw_a_log_axis_never_symlog(tmp_path):
    run = runs.create(tmp_path / "r", config={}, seed=0)
    for t in [0, 1, 2, 4, 8, 16, 32, 64, 128, 256]:
        run.log(t, {"nc/nc1": 1.0 / (t + 1), "train/loss": 2.0 / (t + 1)})
    run.flush()
    figs = metric_figures(run.metrics)
    scales = {ax.get_xscale() for _, fig in figs for ax in fig.axes if ax.get_visible()}
    assert scales == {"log"}
    for _, fig in figs:
        plt.close(fig)


def test_lr_changes_are_vertical_lines_on_every_panel(tmp_path):
    run = _run(tmp_path / "r", range(31))
    assert [c[0] for c in lr_changes(run.metrics)] == [10, 20]
    before, after = lr_changes(run.metrics)[0][1:]
    assert before == pytest.approx(0.1) and after == pytest.approx(0.01)
    figs = metric_figures(run.metrics)
    for ax in _panels(figs).values():
        vertical = [ln.get_xdata()[0] for ln in ax.lines if len(set(ln.get_xdata())) == 1]
        assert sorted(vertical) == [10, 20], ax.get_title()
    for _, fig in figs:
        plt.close(fig)


def test_constant_metrics_go_to_a_table_not_a_panel(tmp_path):
    run = _run(tmp_path / "r", range(31), lr_drop=())
    static = static_metrics(run.metrics)
    assert set(static["key"]) == {"lr", "pair_X"} and set(static["kind"]) == {"constant"}
    assert set(static.loc[static["key"] == "pair_X", "value"]) == {3.5}
    titles = set(_panels(metric_figures(run.metrics)))
    assert "Learning rate" not in titles and "Input distance X (squared)" not in titles
    plt.close("all")


def test_a_run_recorded_once_gives_a_table_and_no_figure(tmp_path):
    run = _run(tmp_path / "r", [7])
    assert metric_figures(run.metrics) == []
    static = static_metrics(run.metrics)
    assert set(static["kind"]) == {"recorded once"} and set(static["step"]) == {7}
    page = report.write_report(run).read_text()
    assert "Constant and once-recorded metrics" in page
    assert "NC1: within-class variability" in page and "recorded once at 7" in page
    assert not list((run.path / "figures").glob("metrics-*.png"))


def test_class_means_are_drawn(tmp_path):
    run = runs.create(tmp_path / "r", config={}, seed=0)
    rng = np.random.default_rng(0)
    target = rng.normal(size=(4, 6))
    for t in range(5):
        run.save_array("mse.class_means_features", t, target * (t + 1) + rng.normal(size=(4, 6)))
    run.log(0, {"mse/nc/nc1": 1.0})
    run.flush()
    ((name, fig),) = report.class_means_figures(run)
    assert name == "class-means-mse"
    paths, gram = fig.axes[0], fig.axes[1]
    assert len(paths.lines) == 4 and all(len(ln.get_xdata()) == 5 for ln in paths.lines)
    cos = np.asarray(gram.images[0].get_array())
    assert cos.shape == (4, 4) and np.allclose(np.diag(cos), 1.0)
    plt.close(fig)


def test_write_report_labels_the_summary_and_redraws_only_its_own_figures(tmp_path):
    run = _run(tmp_path / "r", range(31), config={"epochs": 30})
    run.save_summary({"table": {"adam": {"nc/nc1": 0.1, "test/accuracy": 0.9}}})
    (run.path / "figures").mkdir()
    (run.path / "figures" / "metrics-scalars.png").write_bytes(b"stale")  # an old drawing
    (run.path / "figures" / "mine.png").write_bytes(b"user's own")
    page = report.write_report(run).read_text()
    assert "<th>NC1<span" in page and "<th>test acc.<span" in page
    assert "epoch 10: 0.1 → 0.01" in page and "The x-axis counts epochs" in page
    figures = sorted(p.name for p in (run.path / "figures").iterdir())
    assert figures == ["metrics-nc.png", "metrics-performance.png", "mine.png", "overview.png"]


def test_write_report_returns_a_path_that_shows_inline_in_jupyter(tmp_path):
    run = _run(tmp_path / "r", range(3))
    page = report.write_report(run, draw=False)
    assert isinstance(page, Path) and isinstance(page, report.Report)
    assert page == run.path / "report.html" and os.fspath(page) == str(run.path / "report.html")
    shown = page._repr_html_()
    assert shown.startswith("<iframe srcdoc=") and "&lt;h1&gt;" in shown and "<h1>" not in shown
    assert report.Report(tmp_path / "gone.html")._repr_html_() is None


def test_dollar_signs_in_names_are_text_not_mathtext(tmp_path):
    run = runs.create(tmp_path / "r", config={}, seed=0)
    for t in range(4):
        run.log(t, {"$x$/nc/nc1": 1.0 / (t + 1), r"cost $\nosuchsymbol$": float(t)})
    run.flush()
    paths = report.write_figures(run)  # as mathtext, the unknown symbol fails to draw
    assert {p.name for p in paths} >= {"metrics-nc.png", "metrics-other.png"}
