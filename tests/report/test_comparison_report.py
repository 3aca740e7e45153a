"""Several runs on one figure: seeds of one setting as mean and band, others as lines."""

import matplotlib.pyplot as plt
import numpy as np
import pytest

from ncdynamics import report, runs
from ncdynamics.cli import main


def _runs(root):
    made = []
    for i, (lr, seed) in enumerate([(0.1, 0), (0.1, 1), (0.1, 2), (0.05, 0)]):
        run = runs.create(root / f"run{i}", config={"lr": lr, "epochs": 10}, seed=seed)
        for t in range(11):
            run.log(t, {"adam/nc/nc1": (1 + seed) * np.exp(-lr * t), "adam/pair_X": 2.0})
        run.flush()
        run.mark_completed()
        made.append(run)
    return made


def test_seeds_are_one_group_drawn_as_mean_and_min_max_band(tmp_path):
    made = _runs(tmp_path)
    ((name, fig),) = report.comparison_figures(made)
    assert name == "compare-nc"
    ax = fig.axes[0]
    assert ax.get_title() == "NC1: within-class variability"
    lines = {ln.get_label(): ln for ln in ax.lines if not ln.get_label().startswith("_")}
    assert set(lines) == {"lr=0.1 (3 seeds) · adam", "lr=0.05 · adam"}
    t = np.arange(11)
    mean = np.mean([(1 + s) * np.exp(-0.1 * t) for s in range(3)], axis=0)
    assert np.allclose(lines["lr=0.1 (3 seeds) · adam"].get_ydata(), mean)
    (band,) = ax.collections  # the lone lr=0.05 run has no band
    ys = band.get_paths()[0].vertices[:, 1]
    assert ys.max() == pytest.approx(3.0) and ys.min() == pytest.approx(np.exp(-1.0))
    plt.close(fig)


def test_comparison_report_and_cli(tmp_path, capsys):
    made = _runs(tmp_path)
    out = tmp_path / "cmp"
    argv = ["report", "--compare", *(str(r.path) for r in made), "--out", str(out)]
    assert main(argv) == 0
    page = (out / "report.html").read_text()
    assert "Comparison of 4 runs" in page and "lr=0.1 (3 seeds)" in page
    assert "Final values per group" in page and "data:image/png;base64," in page
    assert main(argv + ["--metric", "nc/nc1"]) == 0  # its own folder: written again
    assert main(["report", "--compare", str(made[0].path)]) == 0
    assert (tmp_path / "comparison" / "report.html").is_file()  # default beside the runs
    capsys.readouterr()


@pytest.mark.parametrize(
    ("extra", "match"),
    [
        (["--out", "{run0}"], "already holds files that are not a comparison report"),
        (["--metric", "nope"], "`keys` (--metric) must name recorded metric keys"),
    ],
)
def test_comparison_bad_input_is_one_line(tmp_path, capsys, extra, match):
    made = _runs(tmp_path)
    extra = [e.format(run0=made[0].path) for e in extra]
    assert main(["report", "--compare", str(made[0].path), str(made[1].path), *extra]) == 2
    err = capsys.readouterr().err
    assert match in err and err.count("\n") == 1


def test_metric_needs_compare(tmp_path, capsys):
    made = _runs(tmp_path)
    assert main(["report", str(made[0].path), "--metric", "nc/nc1"]) == 2
    assert "`--metric` needs --compare" in capsys.readouterr().err


def test_runs_with_the_same_seed_are_not_called_seeds(tmp_path):
    made = []
    for i in range(2):
        run = runs.create(tmp_path / f"copy{i}", config={"lr": 0.1}, seed=0)
        for t in range(5):
            run.log(t, {"nc/nc1": 1.0 / (t + 1 + i)})
        run.flush()
        made.append(run)
    ((_, fig),) = report.comparison_figures(made)
    labels = [ln.get_label() for ln in fig.axes[0].lines if not ln.get_label().startswith("_")]
    assert labels == ["copy0 (2 runs)"]
    plt.close(fig)
