"""README lines that failed when run in order, and long work without progress (issue 30,
items 5 and 6)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from ncdynamics import runs
from ncdynamics.cli import cli_words, main
from ncdynamics.experiments import claims


def test_store_refusals_speak_cli_to_the_cli(tmp_path: Path, capsys) -> None:
    out = tmp_path / "r"
    runs.create(out, config={"experiment": "demo"}).finish()
    with pytest.raises(runs.RunExistsError) as info:
        runs.create(out, config={"experiment": "demo"})
    line = cli_words(str(info.value))
    assert "=True" not in line and "--resume" in line and "--overwrite" in line
    assert cli_words("pass resume=True or overwrite=True (ncdyn: --resume or --overwrite) to") == (
        "pass --resume or --overwrite to"
    )


def test_claims_on_runs_without_claims_says_what_they_hold(tmp_path: Path, capsys) -> None:
    for seed in (0, 1):
        run = runs.create(tmp_path / f"s{seed}", experiment="demo", preset="smoke", seed=seed)
        run.save_summary({"final": {"nc1": 0.5}})
        run.finish()
    assert main(["claims", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "demo (2 runs)" in out and "ncdyn claims --run smoke" in out


def test_claims_run_shows_a_progress_bar(tmp_path: Path, monkeypatch, capsys) -> None:
    from ncdynamics.experiments import _registry

    def fake_run(name, preset, out, **kw):
        return SimpleNamespace(path=Path(out))

    monkeypatch.setattr(_registry, "run", fake_run)
    made = claims.run_presets(["lesde.fig1"], "smoke", tmp_path, seeds=(0, 1), progress=True)
    assert made == [tmp_path / "lesde.fig1" / "seed0", tmp_path / "lesde.fig1" / "seed1"]
    err = capsys.readouterr().err
    assert "claims smoke" in err and "2/2" in err and "lesde.fig1 seed 1" in err


def test_run_help_states_its_default_preset(capsys) -> None:
    with pytest.raises(SystemExit):
        main(["run", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "default smoke" in text and "`ncdyn demo` runs it at cpu" in text


def test_report_compare_shows_a_progress_bar(tmp_path: Path, capsys) -> None:
    made = []
    for lr in (0.1, 0.05):
        run = runs.create(tmp_path / f"lr{lr}", config={"lr": lr})
        for t in range(3):
            run.log(t, {"nc/nc1": lr * t})
        run.finish()
        made.append(str(run.path))
    assert main(["report", "--compare", *made]) == 0
    captured = capsys.readouterr()
    assert "report --compare" in captured.err and "reading lr0.05" in captured.err
    assert "report: " in captured.out


def test_sweep_prints_its_table_at_the_end(tmp_path: Path, capsys) -> None:
    argv = ["sweep", "demo", "--grid", "lr=0.01,0.05", "--set", "epochs=1", "--set", "width=8"]
    argv += ["--set", "depth=1", "--workers", "1", "--no-progress", "--out", str(tmp_path / "s")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    table, _, tail = out.partition("runs:   2")
    header = table.strip().splitlines()[0].split()
    assert "lr" in header and "seed" in header, table
    assert len(table.strip().splitlines()) == 4 and "more columns in table.csv" in table
    assert "sweep:" in tail
