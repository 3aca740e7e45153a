"""compare / forecast: stream discovery, baselines, scoring, and the written reports."""

import math

import numpy as np
import pandas as pd
import pytest

from ncdynamics import runs
from ncdynamics.experiments import streams
from ncdynamics.experiments.compare import compare, compare_table
from ncdynamics.experiments.forecast import forecast, forecast_table, power_law_extrapolation
from ncdynamics.experiments.forecast_scoring import decades_off
from ncdynamics.experiments.streams import (
    confrontations,
    find_streams,
    theories_without_confrontation,
)
from ncdynamics.report import write_compare_report, write_forecast_report
from ncdynamics.theories.confrontation import Stream
from ncdynamics.theories.lesde.model import d_vectors


def _lesde_run(path, prefixes=("a/", "b/"), K=4):
    """Class-mean logits whose margins grow exactly exponentially (the L-model's form)."""
    run = runs.create(path)
    d = d_vectors(K)
    b0 = np.linspace(-1.0, 1.0, K)
    for t in range(0, 41, 2):
        s = 2.0 * np.exp(0.05 * t) + b0 * np.exp(0.02 * t)
        for p in prefixes:
            run.save_array(f"{p}class_means_logits".replace("/", "."), t, s[:, None] * d)
            run.log(t, {f"{p}probe/loss": 1.0 / (t + 1)})
    run.mark_completed()
    return run


def test_confrontations_are_discovered_for_four_theories():
    names = [c.theory for c in confrontations()]
    assert names == ["alignment", "hadamard", "lesde", "ntk_collapse"]
    assert theories_without_confrontation() == ["truncation"]


def test_find_streams_uses_metric_spelling_of_array_prefixes(tmp_path):
    run = _lesde_run(tmp_path / "r")
    lesde = next(c for c in confrontations() if c.theory == "lesde")
    assert find_streams(lesde, run) == ["a/", "b/"]


def test_find_streams_ignores_names_that_merely_end_alike(tmp_path):
    run = runs.create(tmp_path / "r")
    run.save_array("xclass_means_logits", 0, np.eye(4))
    lesde = next(c for c in confrontations() if c.theory == "lesde")
    assert find_streams(lesde, run) == []


def test_compare_fits_each_stream_and_names_what_is_missing(tmp_path):
    entries = compare(_lesde_run(tmp_path / "r"))
    by = {(e.theory, e.stream): e for e in entries}
    assert by[("lesde", "a/")].status == "fitted"
    assert by[("lesde", "a/")].fit.params["rate_margin"].value == pytest.approx(0.05, rel=1e-9)
    # K = 4 is a power of two, but these logits start off the Hadamard subspace: out of regime
    # as a whole, with the reason, and fitted as a whole only when forced; from step 6 they
    # are inside it, and that window was fitted and judged, so its verdict is the entry's
    hadamard = by[("hadamard", "a/")]
    assert hadamard.fit is None and hadamard.status == "fitted in a window"
    assert hadamard.verdict.verdict in ("fails", "not distinguished", "degenerate")
    assert hadamard.verdict.window == (6.0, 40.0)  # the window from the regime's start
    assert [w.span for w in hadamard.windows if w.from_regime_start] == [(6.0, 40.0)]
    assert "the whole stream is out of regime: off-diagonal" in hadamard.verdict.reason
    forced = {(e.theory, e.stream): e for e in compare(_lesde_run(tmp_path / "f"), force=True)}
    assert forced[("hadamard", "a/")].status == "fitted" and forced[("hadamard", "a/")].forced
    missing = by[("ntk_collapse", "")]
    assert missing.status == "missing" and "ntk_invariant" in missing.message
    assert missing.verdict.verdict == "missing"
    assert "pair_alignment" in by[("alignment", "")].message
    table = compare_table(entries)
    assert {"theory", "stream", "status", "verdict", "reason", "params.alpha"} <= set(table.columns)
    assert "goodness.r2_log_mean_margin" in table.columns


def test_forecast_scores_theory_beside_both_baselines(tmp_path):
    run = _lesde_run(tmp_path / "r", prefixes=("a/",))
    entries = forecast(run, 0.5, change=())
    e = next(e for e in entries if e.theory == "lesde")
    assert e.status == "fitted" and e.origins[0].cut == 20.0 and e.final_step == 40.0
    assert e.fit.fit_until == 20.0 and len(e.origins) == 1
    assert not hasattr(e, "cutoff")  # one way to say it: the origins' cuts
    scores = pd.DataFrame(e.scores).set_index(["observable", "method"])
    # exact exponential data: the theory forecast is exact, the last value is not
    assert scores.loc[("mean_margin", "theory (lesde)"), "decades_off"] < 1e-9
    assert scores.loc[("mean_margin", "theory (lesde)"), "rmse"] < 1e-9
    last = scores.loc[("mean_margin", "last value")]
    assert last["decades_off"] == pytest.approx(0.05 * 20 / math.log(10), rel=1e-9)
    # scored on every record after the cut (steps 22..40): RMS of 0.05 (t - 20) / ln 10
    gaps = np.arange(22, 41, 2) - 20.0
    want = np.sqrt(np.mean((0.05 * gaps / math.log(10)) ** 2))
    assert last["rmse"] == pytest.approx(want, rel=1e-9) and last["n_after"] == gaps.size
    assert set(scores.index.get_level_values("method")) == {
        "theory (lesde)",
        "last value",
        "power law",
    }
    assert e.verdict.verdict == "holds"  # beats both baselines at its one origin


def test_forecast_places_origins_by_step_fraction_and_by_change(tmp_path):
    run = _lesde_run(tmp_path / "r", prefixes=("a/",))
    e = next(e for e in forecast(run) if e.theory == "lesde")
    placed = [o.placed_by for o in e.origins]
    assert "step fraction 0.3" in placed and any("total change" in p for p in placed)
    cuts = [o.cut for o in e.origins]
    assert cuts == sorted(set(cuts))
    # log mean margin grows linearly: a quarter of its change is a quarter of the steps
    by = {o.placed_by: o.cut for o in e.origins}
    if "0.25 of the total change" in by:
        assert by["0.25 of the total change"] == 10.0
    table = forecast_table(entries := forecast(run, (0.5,), change=(0.75,)))
    assert {"cutoff", "placed_by", "rmse", "coverage", "skill_vs_power_law"} <= set(table.columns)
    assert len(next(x for x in entries if x.theory == "lesde").origins) == 2


def test_power_law_extrapolation_is_exact_on_a_power_law():
    steps = np.arange(0, 50.0)
    values = 3.0 * (steps + 1.0) ** -0.7
    pred = power_law_extrapolation(steps, values, 200.0, origin=0.0)
    assert pred == pytest.approx(3.0 * 201.0**-0.7, rel=1e-10)
    assert math.isnan(power_law_extrapolation([1.0, 2.0], [0.0, 0.0], 5.0, origin=0.0))


@pytest.mark.parametrize(
    ("pred", "actual", "want"),
    [(10.0, 1.0, 1.0), (0.1, 1.0, 1.0), (-1.0, 1.0, math.inf), (math.nan, 1.0, math.inf)],
)
def test_decades_off(pred, actual, want):
    assert decades_off(pred, actual) == pytest.approx(want)


@pytest.mark.parametrize("at", [0.0, 1.0, -0.5, 2.0, math.nan])
def test_forecast_rejects_fraction_outside_open_unit_interval(tmp_path, at):
    with pytest.raises(ValueError, match="`at`"):
        forecast(_lesde_run(tmp_path / "r"), at)


def test_stream_cut_hides_later_records(tmp_path):
    run = _lesde_run(tmp_path / "r", prefixes=("a/",))
    stream = Stream(run, "a/").cut(10)
    steps, values = stream.scalar("probe/loss")
    assert steps.max() == 10 and values.size == 6
    assert stream.array("class_means_logits")[0].max() == 10


def test_reports_are_written_and_replace_the_old_output(tmp_path):
    run = _lesde_run(tmp_path / "r", prefixes=("a/",))
    out = tmp_path / "r" / "compare"
    write_compare_report(compare(run, force=True), run.path, out)
    (out / "stale.txt").write_text("old")  # inside its own earlier output: replaced
    page = write_compare_report(compare(run, force=True), run.path, out)
    assert page == out / "report.html" and not (out / "stale.txt").exists()
    html = page.read_text()
    assert "lesde" in html and html.count("<img") == len(list((out / "figures").glob("*.png")))
    assert len(list((out / "figures").glob("*.png"))) == 2  # lesde and hadamard (forced)
    assert pd.read_csv(out / "table.csv")["status"].tolist().count("fitted") == 2
    assert html.count('<h2 class="theory">') == 4  # one section per theory
    assert (out / "windows.csv").is_file()
    page = write_forecast_report(forecast(run, 0.5), run.path, tmp_path / "f", 0.5)
    table = pd.read_csv(tmp_path / "f" / "table.csv")
    assert {"observable", "method", "predicted", "actual", "decades_off", "rmse"} <= set(
        table.columns
    )
    assert not list(tmp_path.glob(".f-*")) and not list((tmp_path / "r").glob(".compare-*"))


def test_failed_report_leaves_previous_output_untouched(tmp_path, monkeypatch):
    from ncdynamics.report import confront as rc

    run = _lesde_run(tmp_path / "r", prefixes=("a/",))
    out = tmp_path / "out"
    write_compare_report(compare(run), run.path, out)
    before = (out / "report.html").read_text()

    def boom(*a, **k):
        raise RuntimeError("disk full")

    monkeypatch.setattr(rc, "_page", boom)
    with pytest.raises(RuntimeError, match="disk full"):
        write_compare_report(compare(run), run.path, out)
    assert (out / "report.html").read_text() == before
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_a_theory_that_raises_is_reported_failed_and_others_still_fit(tmp_path, monkeypatch):
    import dataclasses

    confs = confrontations()
    lesde = next(c for c in confs if c.theory == "lesde")

    def broken(stream):
        raise IndexError("index 3 is out of bounds")

    patched = [dataclasses.replace(c, fit=broken) if c is lesde else c for c in confs]
    monkeypatch.setattr(streams, "confrontations", lambda: patched)
    entries = compare(_lesde_run(tmp_path / "r", prefixes=("a/",)), force=True)
    by = {e.theory: e for e in entries}
    assert by["lesde"].status == "failed" and "IndexError: index 3" in by["lesde"].verdict.reason
    assert by["lesde"].verdict.verdict == "error"
    assert by["hadamard"].status == "fitted"
