"""`compare` over many runs and sweeps: the summary table and its CSV, LaTeX and HTML."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from ncdynamics import runs
from ncdynamics.experiments import streams
from ncdynamics.experiments.compare_many import compare_runs, expand_run_dirs, summary_table
from ncdynamics.report.confront import summary_latex, write_summary_report
from ncdynamics.theories.confrontation import Confrontation, Curves, Need, Param, Stream, TheoryFit


def _fit(stream: Stream) -> TheoryFit:
    steps, loss = stream.scalar("loss")
    slope, icept = np.polyfit(steps, np.log(loss), 1)
    rate = float(-slope)
    return TheoryFit(
        theory="toy",
        params={"rate": Param(rate, interval=(rate * 0.9, rate * 1.1), unit="1/step")},
        curves=Curves(
            fitted={"loss": (steps, np.exp(icept + slope * steps))},
            predict=lambda at: {"loss": np.exp(icept + slope * np.asarray(at))},
        ),
    )


TOY = Confrontation(
    "toy", "s", (Need("scalar", "loss", "run.log"),), lambda s: {"loss": s.scalar("loss")}, _fit
)


@pytest.fixture(autouse=True)
def only_toy(monkeypatch):
    monkeypatch.setattr(streams, "confrontations", lambda: [TOY])


def _run(path, rate, lr):
    run = runs.create(path, config={"lr": lr, "seed": 0, "experiment": "toy"})
    for t in range(12):
        run.log(t, {"loss": float(np.exp(-rate * t))})
    run.mark_completed()
    return path


def _sweep(root):
    root.mkdir()
    (root / "sweep.json").write_text(json.dumps({"experiment": "toy"}))
    _run(root / "lr=0.1", 0.1, 0.1)
    _run(root / "lr=0.2", 0.2, 0.2)
    (root / "not-a-run").mkdir()
    return root


def test_a_sweep_directory_expands_to_its_runs(tmp_path):
    sweep = _sweep(tmp_path / "sw")
    lone = _run(tmp_path / "lone", 0.3, 0.3)
    labels = [label for label, _ in expand_run_dirs([sweep, lone])]
    assert labels == ["sw/lr=0.1", "sw/lr=0.2", "lone"]
    with pytest.raises(FileNotFoundError, match="run_dir"):
        expand_run_dirs([tmp_path / "nope"])


def test_summary_has_a_row_per_run_with_varying_settings_and_verdicts(tmp_path):
    results = compare_runs([_sweep(tmp_path / "sw")], windows=False)
    table = summary_table(results)
    assert table["run"].tolist() == ["sw/lr=0.1", "sw/lr=0.2"]
    assert table["lr"].tolist() == [0.1, 0.2] and "seed" not in table  # seed does not vary
    cells = table["toy"].tolist()
    # exact exponentials are lines in log, which a random walk with drift extrapolates too
    assert cells[0].startswith("not distinguished; rate = 0.1 [0.09, 0.11] 1/step")
    assert cells[1].startswith("not distinguished; rate = 0.2 [0.18, 0.22] 1/step")


def test_a_damaged_run_is_reported_and_the_others_still_compared(tmp_path):
    sweep = _sweep(tmp_path / "sw")
    (sweep / "lr=0.2" / "status.json").write_text("[1, 2]")
    results = compare_runs([sweep], windows=False)
    assert "must hold a JSON object" in results[1].error and results[0].entries
    assert "error" in summary_table(results).columns


def test_summary_files_are_written_and_latex_is_escaped(tmp_path):
    results = compare_runs([_sweep(tmp_path / "sw")], windows=False)
    page = write_summary_report(results, tmp_path / "out")
    out = page.parent
    assert {p.name for p in out.iterdir()} >= {
        "summary.csv",
        "summary.tex",
        "summary.html",
        "table.csv",
        ".ncdynamics-compare",
    }
    assert pd.read_csv(out / "summary.csv").shape[0] == 2
    tex = (out / "summary.tex").read_text()
    assert tex.startswith("\\begin{tabular}{lll}") and "sw/lr=0.1" in tex
    assert summary_latex(pd.DataFrame({"a_b": ["50% & $x$"]})).splitlines()[2] == r"a\_b \\"
    assert r"50\% \& \$x\$" in summary_latex(pd.DataFrame({"a": ["50% & $x$"]}))
    html = (out / "summary.html").read_text()
    assert 'class="verdict v-not-distinguished"' in html and "lr=0.2" in html
