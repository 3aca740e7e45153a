"""``ncdyn atlas``: one-line errors with exit code 2, and the smoke atlas end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncdynamics.cli import _ATLAS_PRESETS, main
from ncdynamics.experiments.atlas import ATLAS_PRESETS, PLANS


def test_the_cli_presets_are_the_atlas_plans():
    assert _ATLAS_PRESETS == ATLAS_PRESETS == tuple(PLANS)


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["atlas", "--seeds", "0"], "`--seeds` must be at least 1; got 0."),
        (["atlas", "--workers", "0"], "`--workers` must be at least 1; got 0."),
        (["atlas", "--preset", "huge"], "invalid choice: 'huge'"),
        (["atlas", "--backend", "slurm"], "invalid choice: 'slurm'"),
    ],
)
def test_bad_input_is_one_line_with_exit_code_2(argv, fragment, tmp_path, capsys):
    try:
        code = main([*argv, "--out", str(tmp_path / "a"), "--no-progress"])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    assert code == 2
    err = capsys.readouterr().err
    assert fragment in err and err.count("\n") == 1
    assert not (tmp_path / "a").exists()


def test_an_out_that_is_a_file_is_refused_and_kept(tmp_path: Path, capsys):
    out = tmp_path / "f"
    out.write_text("mine")
    assert main(["atlas", "--out", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "exists and is not a directory" in err and err.count("\n") == 1
    assert out.read_text() == "mine"


@pytest.mark.slow
def test_the_smoke_atlas_runs_then_resumes_with_nothing_to_do(tmp_path: Path, capsys):
    out = tmp_path / "atlas"
    assert main(["atlas", "--out", str(out), "--no-progress"]) == 0
    first = capsys.readouterr().out
    assert "runs:   16 run now, 0 failed; confronted now: 16" in first
    assert (out / "report.html").is_file() and (out / "cells.csv").is_file()
    assert main(["atlas", "--out", str(out), "--no-progress"]) == 0
    assert "runs:   0 run now, 0 failed; confronted now: 0" in capsys.readouterr().out
