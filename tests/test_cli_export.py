"""``--format {text,csv,latex}`` of ``ncdyn demo`` and ``ncdyn sweep``: the printed table as
CSV or LaTeX, and the same text written beside the outputs."""

import io
import json

import numpy as np
import pandas as pd
import pytest

from ncdynamics.cli import _summary_frame, _table_text, main
from ncdynamics.experiments.sweep import sweep_summary_table

DEMO = ["demo", "--preset", "smoke", "--no-progress"]


def _summary_table(run_dir):
    return json.loads((run_dir / "summary.json").read_text())["table"]


def test_demo_prints_csv_or_latex_and_writes_it_in_the_run(tmp_path, capsys):
    out = tmp_path / "d"
    assert main([*DEMO, "--out", str(out), "--format", "csv"]) == 0
    printed = capsys.readouterr().out
    written = (out / "table.csv").read_text()
    assert printed.startswith(written)  # the same text, printed first
    frame = pd.read_csv(io.StringIO(written), index_col=0)
    table = _summary_table(out)
    assert sorted(frame.index) == sorted(table)  # one row per loss
    for loss, row in table.items():
        for key, value in row.items():
            assert frame.loc[loss, key] == pytest.approx(value, rel=1e-12)
    assert f"table:  {out / 'table.csv'}" in printed
    assert "theory against run" in printed  # the compare part follows as before
    assert not (out / "table.tex").exists()

    # the completed run is not trained again with --resume: its table is printed as LaTeX
    assert main([*DEMO, "--out", str(out), "--resume", "--format", "latex"]) == 0
    printed = capsys.readouterr().out
    tex = (out / "table.tex").read_text()
    assert printed.startswith(tex)
    assert tex.startswith("\\begin{tabular}") and tex.rstrip().endswith("\\end{tabular}")
    assert "nc/nc2\\_etf" in tex and "nc2_etf" not in tex.replace("nc2\\_etf", "")
    body = [ln for ln in tex.splitlines() if ln.startswith(("mse", "cross-entropy"))]
    assert len(body) == 2 and all(ln.endswith("\\\\") for ln in body)
    nc1 = table["mse"]["nc/nc1"]
    assert f"{nc1:.4g}" in next(ln for ln in body if ln.startswith("mse"))


def test_an_exported_demo_run_can_be_overwritten(tmp_path, capsys):
    out = tmp_path / "d"
    assert main([*DEMO, "--out", str(out), "--format", "latex"]) == 0
    assert (out / "table.tex").exists()
    # the exported tables are the run's own files: --overwrite removes them with the run
    assert main([*DEMO, "--out", str(out), "--overwrite"]) == 0
    capsys.readouterr()
    assert not (out / "table.tex").exists()


def test_unknown_formats_are_refused_in_one_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as exited:  # argparse refuses a choice before main runs
        main([*DEMO, "--out", str(tmp_path / "d"), "--format", "html"])
    assert exited.value.code == 2 and not (tmp_path / "d").exists()
    err = capsys.readouterr().err
    assert "invalid choice: 'html'" in err and err.count("\n") == 1
    with pytest.raises(ValueError, match="`--format` must be one of text, csv, latex"):
        _table_text(pd.DataFrame({"a": [1.0]}), "html", index=False)


def test_summary_frame_keeps_rows_and_columns_in_order():
    frame = _summary_frame({"b": {"x": 1.0, "y": 2.0}, "a": {"y": 3.0, "z": 4.0}})
    assert frame.index.tolist() == ["b", "a"] and frame.columns.tolist() == ["x", "y", "z"]
    assert np.isnan(frame.loc["a", "x"]) and frame.loc["a", "z"] == 4.0
    assert "--" in _table_text(frame, "latex", index=True)  # a missing value


SWEEP = [
    "sweep",
    "demo",
    "--preset",
    "smoke",
    "--grid",
    "width=8",
    "--set",
    "epochs=1",
    "--set",
    "depth=1",
    "--workers",
    "1",
    "--no-progress",
]


def test_sweep_prints_csv_then_latex_of_its_summary(tmp_path, capsys):
    out = tmp_path / "s"
    assert main([*SWEEP, "--out", str(out), "--format", "csv"]) == 0
    printed = capsys.readouterr().out
    full = (out / "table.csv").read_text()
    assert printed.startswith(full)  # the whole table, as the sweep wrote it
    assert not (out / "table.tex").exists()

    # the same command again (every run completed: skipped), now as LaTeX
    assert main([*SWEEP, "--out", str(out), "--format", "latex"]) == 0
    printed = capsys.readouterr().out
    tex = (out / "table.tex").read_text()
    assert printed.startswith(tex) and "1 already completed" in printed
    compact = sweep_summary_table(out)
    assert compact.columns[:3].tolist() == ["width", "seed", "status"]
    assert "table.mse.nc/nc1" in compact.columns  # summary scalars, prefix dropped
    assert not any(c.startswith(("summary.", "final.", "run_id")) for c in compact.columns)
    assert "table.mse.nc/nc1" in tex and "width & seed & status" in tex
    assert compact["width"].tolist() == [8] and compact["status"].tolist() == ["completed"]
    with pytest.raises(FileNotFoundError, match="must be a sweep directory"):
        sweep_summary_table(tmp_path)
