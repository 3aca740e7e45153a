import subprocess
import sys

import pytest

from ncdynamics.cli import main


def test_demo_smoke_prints_table_and_writes_report(tmp_path, capsys):
    assert main(["demo", "--preset", "smoke", "--out", str(tmp_path / "d"), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "nc/nc1" in out and "cross-entropy" in out and "mse" in out
    assert (tmp_path / "d" / "report.html").exists()
    assert list((tmp_path / "d" / "figures").glob("metrics-*.png"))
    assert "theory against run" in out and (tmp_path / "d" / "compare" / "report.html").exists()


def test_list_names_prints_one_per_line(capsys):
    assert main(["list", "--names"]) == 0
    names = capsys.readouterr().out.split()
    assert names[0] == "demo" and all(" " not in n for n in names)


def test_run_with_overrides_and_report_again(tmp_path, capsys):
    out = tmp_path / "r"
    assert (
        main(
            [
                "run",
                "demo",
                "--out",
                str(out),
                "--set",
                "epochs=2",
                "--set",
                "width=8",
                "--no-progress",
            ]
        )
        == 0
    )
    assert main(["report", str(out), "--out", str(tmp_path / "copy.html")]) == 0
    assert (tmp_path / "copy.html").read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["run", "nope"], "`experiment` must be one of"),
        (["run", "demo", "--set", "nokey"], "KEY=VALUE"),
        (["run", "demo", "--set", "colour=red"], "unknown option"),
        (["run", "demo", "--preset", "huge"], "invalid choice"),
        (["report", "/nonexistent/run"], "run directory"),
        (["frobnicate"], "invalid choice"),
    ],
)
def test_errors_are_one_line_with_exit_code_2(argv, fragment, tmp_path):
    argv = [*argv, "--out", str(tmp_path / "o")] if argv[0] == "run" else argv
    proc = subprocess.run(
        [sys.executable, "-m", "ncdynamics.cli", *argv], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0] and "Traceback" not in proc.stderr


def test_completed_run_is_refused_in_one_line(tmp_path, capsys):
    out = str(tmp_path / "r")
    assert main(["run", "demo", "--out", out, "--set", "epochs=1", "--no-progress"]) == 0
    assert main(["run", "demo", "--out", out, "--set", "epochs=1", "--no-progress"]) == 2
    assert "already holds a completed run" in capsys.readouterr().err


def test_run_with_device_cpu_records_cpu_where_auto_would_pick_cuda(tmp_path, monkeypatch):
    # CUDA faked present, so the default (auto) would choose it: `--device cpu` must reach
    # the experiment (a torch one, with trial workers) and its records
    import json

    import torch

    from ncdynamics.training import devices

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert devices.resolve_device("auto").type == "cuda"  # the fake takes effect
    out = tmp_path / "xor"
    args = ["run", "alignment.xor", "--preset", "smoke", "--device", "cpu", "--no-progress"]
    assert main([*args, "--out", str(out)]) == 0
    assert json.loads((out / "status.json").read_text())["device"] == "cpu"


def test_list_theories_shows_each_citation(capsys):
    """``ncdyn list --theories`` shows what a verdict reason's "[1]" cites."""
    from ncdynamics import theories

    assert main(["list", "--theories"]) == 0
    out = capsys.readouterr().out
    for name in theories.available():
        assert f"[1] {theories.get(name).citation}" in out, name
