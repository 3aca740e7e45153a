"""`ncdyn compare` and `ncdyn forecast` on a demo run, and their one-line errors."""

import dataclasses

import pandas as pd
import pytest

from ncdynamics.cli import main


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cmp") / "demo"
    args = ["run", "demo", "--out", str(out), "--no-progress"]
    args += [
        "--set",
        "epochs=8",
        "--set",
        "width=16",
        "--set",
        "depth=2",
        "--set",
        "milestones=100",
        # plain SGD, no weight decay: inside the LE-SDE and alignment regimes, so that their
        # fits on real records are exercised (the demo's own settings are outside both)
        "--set",
        "momentum=0",
        "--set",
        "weight_decay=0",
        "--set",
        "in_regime=true",  # the stretch inside the two-point regime (off in smoke)
    ]
    assert main(args) == 0
    return out


def test_compare_prints_each_theory_and_writes_report(demo_run, capsys):
    assert main(["compare", str(demo_run)]) == 0
    out = capsys.readouterr().out
    assert "lesde" in out and "alignment" in out and "params" in out and "goodness" in out
    assert "power of two" in out and "out of regime" in out  # hadamard on 10 digits
    assert "ntk_invariant" in out  # ntk_collapse: what to record
    assert "ncdyn run ntk_collapse.fig2" in out  # and the demo's own line on why not
    table = pd.read_csv(demo_run / "compare" / "table.csv")
    fitted = table[table["status"] == "fitted"]
    # each theory is fitted only on the streams of its own loss (alignment: MSE and the
    # demo's two-point stretch; lesde: CE)
    assert set(zip(fitted["theory"], fitted["stream"], strict=True)) == {
        ("alignment", "mse/"),
        ("alignment", "two-point/"),
        ("lesde", "cross-entropy/"),
    }
    assert set(table["verdict"]) <= {
        "holds",
        "holds in a window",
        "not distinguished",
        "fails",
        "degenerate",
        "out of regime",
        "missing",
        "error",
    }
    assert table["reason"].notna().all()
    assert (demo_run / "compare" / "report.html").is_file()
    # the citation that a reason's "[1]" refers to heads each theory's rows
    from ncdynamics import theories

    lines = out.splitlines()
    for theory in ("alignment", "hadamard", "lesde", "ntk_collapse"):
        cite = f"[1] ({theory}) {theories.get(theory).citation}"
        first_row = next(i for i, line in enumerate(lines) if line.startswith(theory))
        assert lines[first_row - 1] == cite, lines[first_row - 1]


def test_forecast_scores_theories_and_baselines(demo_run, capsys, tmp_path):
    out_dir = tmp_path / "fc"
    argv = ["forecast", str(demo_run), "--at", "0.5", "--change", "none", "--out", str(out_dir)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "last value" in out and "power law" in out and "theory (lesde)" in out
    table = pd.read_csv(out_dir / "table.csv")
    scored = table.dropna(subset=["method"])
    scored = scored[scored["stream"] != "two-point/"]  # the demo's 1200-epoch stretch
    assert (scored["cutoff"] == 4.0).all() and (scored["final_step"] == 8.0).all()
    assert (scored["n_after"] == 4).all()  # every record after the cut is scored
    for (_, _, _), g in scored.groupby(["theory", "stream", "observable"]):
        assert len(g) == 3  # theory, last value, power law


def test_forecast_default_origins_go_to_run_forecast(demo_run, capsys):
    assert main(["forecast", str(demo_run)]) == 0
    table = pd.read_csv(demo_run / "forecast" / "table.csv")
    assert table.dropna(subset=["method"])["cutoff"].nunique() >= 2


def test_compare_on_several_runs_writes_a_summary(demo_run, capsys, tmp_path):
    out_dir = tmp_path / "many"
    argv = ["compare", str(demo_run), str(demo_run), "--no-windows", "--out", str(out_dir)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "summary.csv" in out
    summary = pd.read_csv(out_dir / "summary.csv")
    assert summary.shape[0] == 2 and "lesde (mse)" in summary.columns
    assert (out_dir / "summary.tex").is_file() and (out_dir / "summary.html").is_file()


def test_demo_config_states_each_streams_settings(demo_run):
    from ncdynamics import runs
    from ncdynamics.experiments import config_of
    from ncdynamics.theories.confrontation import Stream

    run = runs.open(demo_run)
    for loss in ("mse", "cross-entropy"):
        stream = Stream(run, f"{loss}/")
        assert stream.setting("loss") == loss and stream.setting("lr") == 0.05
        assert stream.setting("milestones") == [100] and stream.setting("init") == "pytorch-default"
    _, config = config_of(run)  # the derived settings read back (resume, report)
    assert config.streams["mse"]["loss"] == "mse"


def test_demo_streams_cannot_be_set_by_hand():
    from ncdynamics.experiments.demo import DemoConfig

    with pytest.raises(ValueError, match="`streams` is derived"):
        DemoConfig(streams={"mse": {"loss": "cross-entropy"}})


@pytest.mark.parametrize(
    ("argv", "match"),
    [
        (["forecast", "{run}", "--at", "1.5"], "`at`"),
        (["forecast", "{run}", "--at", "0.5,x"], "fractions separated by commas"),
        (["forecast", "{run}", "--at", "none", "--change", "none"], "at least one cut"),
        (["forecast", "{run}", "--change", "0"], "`change`"),
        (["compare", "{missing}"], "missing"),
        (["compare", "{run}", "{missing}"], "does not exist"),
        (["compare", "{run}", "--theory", "nope"], "`theories` must name"),
        (["compare", "{run}", "{run}", "--theory", "nope"], "`theories` must name"),
    ],
)
def test_bad_input_is_one_line_exit_2(demo_run, tmp_path, capsys, argv, match):
    argv = [a.format(run=demo_run, missing=tmp_path / "missing") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("ncdyn: error:") and match in err and err.count("\n") == 1


def test_force_fits_a_stream_outside_the_regime(tmp_path, monkeypatch, capsys):
    import numpy as np

    from ncdynamics import runs
    from ncdynamics.experiments import streams
    from ncdynamics.theories.confrontation import (
        Assumption,
        Confrontation,
        Curves,
        Need,
        Param,
        TheoryFit,
    )

    def fit(stream):
        steps, loss = stream.scalar("loss")
        slope, icept = np.polyfit(steps, np.log(loss), 1)
        curve = np.exp(icept + slope * steps)
        return TheoryFit("toy", {"rate": Param(-slope)}, Curves({"loss": (steps, curve)}, None))

    def mse_only(stream):
        return None if stream.setting("loss") == "mse" else "the loss is not mse"

    toy = Confrontation(
        "toy",
        "s",
        (Need("scalar", "loss", "run.log"),),
        lambda s: {"loss": s.scalar("loss")},
        fit,
        (Assumption("loss", "squared error", mse_only),),
    )
    monkeypatch.setattr(streams, "confrontations", lambda: [toy])
    run = runs.create(tmp_path / "r", config={"loss": "cross-entropy"})
    for t in range(10):
        run.log(t, {"loss": float(np.exp(-0.2 * t))})
    run.mark_completed()
    assert main(["compare", str(run.path), "--no-windows"]) == 0
    out = capsys.readouterr().out
    assert "out of regime" in out and "the loss is not mse" in out and "--force" in out
    assert main(["compare", str(run.path), "--force"]) == 0
    out = capsys.readouterr().out
    assert "fitted anyway (--force): holds" in out and "rate=0.2" in out
    other = dataclasses.replace(toy, theory="other")
    monkeypatch.setattr(streams, "confrontations", lambda: [toy, other])
    assert main(["compare", str(run.path), "--no-windows", "--theory", "other"]) == 0
    out = capsys.readouterr().out
    assert "other" in out and "toy" not in out


def test_compare_prints_its_verdicts_as_csv_or_latex_and_writes_them(demo_run, capsys):
    assert main(["compare", str(demo_run), "--format", "csv"]) == 0
    out = capsys.readouterr().out
    written = demo_run / "compare" / "verdicts.csv"
    frame = pd.read_csv(written)
    assert list(frame.columns) == ["theory", "stream", "verdict", "window", "parameters", "reason"]
    assert len(frame) == 8 and set(frame["theory"]) >= {"alignment", "hadamard", "lesde"}
    assert written.read_text() in out
    fitted = frame[frame["theory"] == "alignment"].dropna(subset=["parameters"])
    assert fitted["parameters"].str.contains(r"inv_tau_h = .* \[.*\] 1/epoch").all()
    assert main(["compare", str(demo_run), "--format", "latex"]) == 0
    tex = (demo_run / "compare" / "verdicts.tex").read_text()
    assert "\\begin{tabular}" in tex and "ntk\\_collapse" in tex


def test_compare_prints_what_the_windows_inside_the_regime_gave(capsys):
    # a stream out of regime as a whole (a learning-rate drop) used to print no more than
    # its reason, hiding the windows fitted between the drops
    from ncdynamics.cli import _print_compare
    from ncdynamics.experiments.compare import CompareEntry
    from ncdynamics.experiments.windows import WindowFit
    from ncdynamics.theories.verdict import Verdict

    drop = Verdict("out of regime", "recorded lr changes from 0.05 to 0.005 at step 100")
    windows = [
        WindowFit(0.0, 25.0, 26, Verdict("fails", "pair_distance: R² 0.55 < 0.9")),
        WindowFit(50.0, 100.0, 51, drop),
        WindowFit(100.0, 149.0, 50, Verdict("holds", "")),
    ]
    hadamard = [WindowFit(0.0, 25.0, 26, Verdict("out of regime", "K = 10"))]
    _print_compare(
        [
            CompareEntry("alignment", "mse/", drop, windows=windows),
            CompareEntry("hadamard", "mse/", Verdict("out of regime", "K = 10"), windows=hadamard),
            CompareEntry("lesde", "mse/", Verdict("out of regime", "loss 'mse'")),
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["theory", "stream", "verdict", "reason"]  # a header
    # each theory's rows open with its citation, so a reason's "[1]" resolves
    assert [line.split()[:2] for line in (lines[1], lines[4], lines[7])] == [
        ["[1]", "(alignment)"], ["[1]", "(hadamard)"], ["[1]", "(lesde)"]
    ]  # fmt: skip
    assert lines[3].split() == ["windows", "inside", "the", "regime:", "steps", "0-25",
                                "fails,", "steps", "100-149", "holds"]  # fmt: skip
    assert lines[6].split()[1:] == ["none", "of", "1", "inside", "the", "regime"]
    assert len(lines) == 9  # no windows: no line
