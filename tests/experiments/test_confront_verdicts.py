"""The engine's verdicts on toy confrontations: regime, force, windows, errors, missing."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.experiments import streams
from ncdynamics.experiments.compare import compare
from ncdynamics.experiments.forecast import forecast
from ncdynamics.experiments.windows import MIN_WINDOW_RECORDS, window_plan
from ncdynamics.theories.confrontation import (
    Assumption,
    Confrontation,
    Curves,
    Need,
    NotApplicable,
    Param,
    Stream,
    TheoryFit,
    Uncertainty,
)
from ncdynamics.theories.uncertainty import covariance_from_jacobian, intervals_from_covariance


def _observe(stream):
    return {"loss": stream.scalar("loss")}


def _fit(stream):
    """``log L = a - r t`` by least squares, with Jacobian intervals; ``r`` must be > 0."""
    steps, loss = stream.scalar("loss")
    if steps.size < 3:
        raise ValueError("the toy theory needs at least 3 records.")
    design = np.stack([np.ones_like(steps), -steps], axis=1)
    coef, *_ = np.linalg.lstsq(design, np.log(loss), rcond=None)
    cov, _, dof = covariance_from_jacobian(design, np.log(loss) - design @ coef)
    intervals = intervals_from_covariance(["log_l0", "rate"], coef, cov, dof)

    def predict(at):
        return {"loss": np.exp(coef[0] - coef[1] * np.asarray(at, np.float64))}

    return TheoryFit(
        theory="toy",
        params={
            "log_l0": Param(float(coef[0]), interval=intervals["log_l0"]),
            "rate": Param(
                float(coef[1]),
                interval=intervals["rate"],
                unit="1/step",
                bound=(-np.inf, np.inf),
                sign=1,
            ),
        },
        curves=Curves(
            fitted={"loss": (steps, predict(steps)["loss"])},
            predict=predict,
            # judged where the decay is curved: in log it is a line, which a random walk with
            # drift extrapolates as well (tests/theories/test_verdict_rules.py)
            scales={"loss": "linear"},
        ),
        uncertainty=Uncertainty(method="least-squares Jacobian, t(n-p)"),
    )


def _loss_is_mse(stream):
    loss = stream.setting("loss")
    return None if loss is None or str(loss).lower() == "mse" else f"the run trains with {loss!r}"


TOY = Confrontation(
    theory="toy",
    summary="exponential decay of the loss",
    needs=(Need("scalar", "loss", "run.log"),),
    observe=_observe,
    fit=_fit,
    assumptions=(Assumption("loss", "squared-error loss", _loss_is_mse),),
)


@pytest.fixture
def only_toy(monkeypatch):
    def use(conf=TOY):
        monkeypatch.setattr(streams, "confrontations", lambda: [conf])

    use()
    return use


def _run(path, values, steps=None, config=None, prefix=""):
    run = runs.create(path, config=config or {})
    steps = np.arange(len(values)) if steps is None else steps
    for t, v in zip(steps, values, strict=True):
        run.log(int(t), {f"{prefix}loss": float(v)})
    run.mark_completed()
    return run


def _decay(steps, rate=0.05, noise=0.01, seed=0):
    rng = np.random.default_rng(seed)
    return 2.0 * np.exp(-rate * steps) * np.exp(rng.normal(0, noise, steps.size))


def test_an_exponential_decay_holds_with_intervals_and_windows(tmp_path, only_toy):
    steps = np.arange(0, 80.0)
    (e,) = compare(_run(tmp_path / "r", _decay(steps)))
    assert e.verdict.verdict == "holds", e.verdict.reason
    lo, hi = e.fit.intervals["rate"]
    assert lo < 0.05 < hi
    assert e.n_records == 80 and e.status == "fitted"
    assert len(e.windows) >= 3
    # the ten-record octaves cannot tell a two-parameter decay from a random walk with drift;
    # the longer ones can
    assert all(w.verdict.verdict in ("holds", "not distinguished") for w in e.windows)
    assert sum(w.verdict.verdict == "holds" for w in e.windows) >= 2
    row = e.row()
    assert row["params.rate.low"] == lo and row["params.rate.unit"] == "1/step"
    assert row["verdict"] == "holds" and math.isnan(row["window_start"])


def test_a_stream_outside_the_regime_is_not_fitted_unless_forced(tmp_path, only_toy):
    steps = np.arange(0, 40.0)
    run = _run(tmp_path / "r", _decay(steps), config={"loss": "cross-entropy"})
    (e,) = compare(run)
    assert e.verdict.verdict == "out of regime" and e.fit is None
    assert "'cross-entropy'" in e.verdict.reason and "--force" in e.verdict.reason
    assert e.status == "not applicable" and e.observed  # what was measured is still shown
    assert [(a.name, r) for a, r in e.regime] == [("loss", "the run trains with 'cross-entropy'")]
    (forced,) = compare(run, force=True)
    assert forced.fit is not None and forced.forced
    assert forced.verdict.verdict == "out of regime"
    assert "fitted anyway (--force): holds" in forced.verdict.reason
    assert forced.forced_verdict == "holds" and forced.row()["forced_verdict"] == "holds"
    assert "forced_verdict" not in e.row() and e.forced_verdict == ""


def test_a_forced_fit_that_fails_says_so_in_its_forced_verdict(tmp_path, only_toy):
    """The verdict beside a forced fit is the fit's own, not a copy of the regime's: a
    growing loss, outside the regime, fitted anyway, fails (its rate has the wrong sign)."""
    steps = np.arange(0, 40.0)
    run = _run(tmp_path / "r", np.exp(0.05 * steps), config={"loss": "cross-entropy"})
    (forced,) = compare(run, force=True, windows=False)
    assert forced.verdict.verdict == "out of regime"
    assert forced.forced_verdict not in ("", "holds", "out of regime"), forced.verdict.reason


def test_theories_chooses_which_are_confronted(tmp_path, monkeypatch):
    other = dataclasses.replace(TOY, theory="other")
    monkeypatch.setattr(streams, "confrontations", lambda: [TOY, other])
    run = _run(tmp_path / "r", _decay(np.arange(0, 40.0)))
    assert [e.theory for e in compare(run, windows=False)] == ["toy", "other"]
    assert [e.theory for e in compare(run, windows=False, theories=["other"])] == ["other"]
    with pytest.raises(ValueError, match=r"`theories` must name .*\['nope'\]"):
        compare(run, theories=["nope"])


def test_per_stream_settings_decide_the_regime(tmp_path, only_toy):
    run = runs.create(
        tmp_path / "r", config={"streams": {"a": {"loss": "mse"}, "b": {"loss": "hinge"}}}
    )
    for t in range(20):
        run.log(t, {"a/loss": math.exp(-0.1 * t), "b/loss": math.exp(-0.1 * t)})
    by = {e.stream: e.verdict.verdict for e in compare(run, windows=False)}
    assert by == {"a/": "holds", "b/": "out of regime"}


def test_a_window_that_holds_rescues_a_failing_stream_and_is_named(tmp_path, only_toy):
    # exponential decay until step 40, then a plateau: one exponential fails on the whole
    steps = np.arange(0, 160.0)
    values = _decay(np.minimum(steps, 40.0), rate=0.08, noise=0.005)
    (e,) = compare(_run(tmp_path / "r", values))
    assert e.verdict.verdict == "holds in a window", e.verdict.reason
    start, end = e.verdict.window
    assert start == 0 and end <= 40
    assert f"steps {start:g} to {end:g}" in e.verdict.reason and "whole stream" in e.verdict.reason
    (plain,) = compare(_run(tmp_path / "s", values), windows=False)
    assert plain.verdict.verdict in ("fails", "degenerate") and not plain.windows


def test_a_rate_indistinguishable_from_zero_is_degenerate(tmp_path, only_toy):
    rng = np.random.default_rng(3)
    (e,) = compare(_run(tmp_path / "r", np.exp(rng.normal(0, 0.1, 30))), windows=False)
    assert e.verdict.verdict == "degenerate"
    assert "rate" in e.verdict.reason


@pytest.mark.parametrize(
    ("error", "verdict", "fragment"),
    [
        (NotApplicable("needs K a power of two; K = 10"), "out of regime", "K = 10"),
        (IndexError("index 3 is out of bounds"), "error", "IndexError: index 3"),
    ],
)
def test_a_fit_that_raises_gets_its_verdict(tmp_path, only_toy, error, verdict, fragment):
    def broken(stream):
        raise error

    only_toy(Confrontation("toy", "s", TOY.needs, _observe, broken))
    (e,) = compare(_run(tmp_path / "r", np.exp(-np.arange(10.0))))
    assert e.verdict.verdict == verdict and fragment in e.verdict.reason
    assert e.fit is None


def test_a_broken_assumption_check_does_not_put_the_stream_out_of_regime(tmp_path, only_toy):
    def broken(stream):
        raise KeyError("lr")

    conf = Confrontation(
        "toy", "s", TOY.needs, _observe, _fit, assumptions=(Assumption("lr", "constant", broken),)
    )
    only_toy(conf)
    (e,) = compare(_run(tmp_path / "r", np.exp(-0.1 * np.arange(20.0))), windows=False)
    assert e.verdict.verdict == "holds"
    assert e.regime[0][1].startswith("could not check: KeyError")


def test_missing_names_the_needs_and_the_runs_own_reason(tmp_path, only_toy):
    run = runs.create(tmp_path / "r", config={"not_recorded": {"toy": "no loss is logged"}})
    run.log(0, {"other": 1.0})
    (e,) = compare(run)
    assert e.verdict.verdict == "missing" and e.status == "missing"
    assert "scalar 'loss'" in e.verdict.reason and "no loss is logged" in e.verdict.reason


def test_window_plan_tiles_training_time_and_respects_the_record_floor():
    steps = np.arange(0, 81.0)
    plan = window_plan(steps, MIN_WINDOW_RECORDS)
    assert plan == [(0, 10), (10, 20), (20, 40), (40, 80)]
    # too few records in the early octaves: they are left out, and the first half stands in
    assert window_plan(np.arange(0, 17.0), 5) == [(0, 8), (4, 8), (8, 16)]
    assert window_plan(np.arange(0, 41.0), 5) == [(0, 5), (5, 10), (10, 20), (20, 40)]
    assert window_plan(np.arange(4.0), 5) == []
    logspaced = np.unique(np.round(np.geomspace(1, 1000, 40)))
    for since, until in window_plan(logspaced, 5):
        assert np.sum((logspaced >= since) & (logspaced <= until)) >= 5


def test_windows_are_fitted_on_the_window_only(tmp_path, only_toy):
    seen = []

    def spy(stream):
        seen.append((stream.since, stream.until))
        return _fit(stream)

    only_toy(Confrontation("toy", "s", TOY.needs, _observe, spy))
    (e,) = compare(_run(tmp_path / "r", _decay(np.arange(0, 41.0))))
    assert seen[0] == (-math.inf, math.inf)
    windows = {(w.since, w.until) for w in e.windows}
    # every window is fitted on its records, and refitted on its earlier records only at the
    # origins of its out-of-sample test (the whole stream's too, from -inf)
    assert windows <= set(seen)
    for since, until in seen[1:]:
        whole = (since, until) in windows or since == -math.inf
        inside = any(since == a and until < b for a, b in windows | {(-math.inf, 40.0)})
        assert whole or inside, (since, until)
    for w in e.windows:
        assert w.n_records == int(w.until - w.since + 1)


def test_stream_window_hides_records_outside(tmp_path):
    run = _run(tmp_path / "r", np.exp(-np.arange(10.0)))
    steps, _ = Stream(run).window(2, 5).scalar("loss")
    assert steps.tolist() == [2, 3, 4, 5]


def test_an_assumption_whose_settings_were_never_recorded_is_not_called_inside(tmp_path, only_toy):
    checked = Assumption("loss", "squared-error loss", _loss_is_mse, settings=("loss",))
    only_toy(Confrontation("toy", "s", TOY.needs, _observe, _fit, assumptions=(checked,)))
    values = _decay(np.arange(0, 60.0))
    (bare,) = compare(_run(tmp_path / "bare", values), windows=False)
    assert bare.unrecorded == ["loss"]
    assert "regime not checked for loss: the run records none of loss" in bare.verdict.reason
    assert bare.row()["regime.loss"] == "not recorded"
    (said,) = compare(_run(tmp_path / "said", values, config={"loss": "MSE"}), windows=False)
    assert said.unrecorded == [] and "regime not checked" not in said.verdict.reason
    (other,) = compare(_run(tmp_path / "other", values, config={"loss": "hinge"}))
    assert other.verdict.verdict == "out of regime" and other.unrecorded == []


def test_forecast_of_a_stream_out_of_regime_uses_its_longest_window_inside(tmp_path, only_toy):
    from ncdynamics.theories.regime import constant_learning_rate_assumption

    lr_rule = constant_learning_rate_assumption("constant rate", "the toy's rate is per step")
    only_toy(Confrontation("toy", "s", TOY.needs, _observe, _fit, assumptions=(lr_rule,)))
    steps = np.arange(0, 80.0)
    run = _run(tmp_path / "r", _decay(steps, noise=0.003))
    for t in steps:
        run.log(int(t), {"lr": 0.1 if t < 40 else 0.01})  # a drop: out of regime as a whole
    run.flush()
    (e,) = forecast(run)
    # the two stretches are equally long: the later one is taken (as compare's windows do)
    assert e.origins and all(40 < o.cut < 79 for o in e.origins)
    assert e.verdict.verdict in ("holds in a window", "out of regime")
    assert "on steps 40 to 79, inside the regime" in e.verdict.reason
    assert "recorded lr changes from 0.1 to 0.01 at step 40" in e.verdict.reason


def test_a_probe_fits_past_the_declared_regime_and_caches_per_engine(
    tmp_path, only_toy, monkeypatch
):
    """``atlas.probe_run``: the forced fit of one theory on an out-of-regime run, kept in the
    run's ``atlas/probes.json`` under the engine key: a second call reads it, another key
    fits again."""
    import importlib

    atlas = importlib.import_module("ncdynamics.experiments.atlas")
    compare_module = importlib.import_module("ncdynamics.experiments.compare")
    run = _run(tmp_path / "r", _decay(np.arange(0, 40.0)), config={"loss": "cross-entropy"})
    (row,) = atlas.probe_run(run, "toy", key="k1")
    assert row["verdict"] == "out of regime" and row["forced_verdict"] == "holds"
    assert (tmp_path / "r" / "atlas" / "probes.json").is_file()

    def refuse(*args, **kwargs):
        raise AssertionError("fitted again")

    monkeypatch.setattr(compare_module, "compare", refuse)
    assert atlas.probe_run(run, "toy", key="k1") == [row]
    (redone,) = atlas.probe_run(run, "toy", key="k2")  # another engine: fitted again, failed
    assert redone["verdict"] == "error" and "fitted again" in redone["reason"]


def _lr_drop_run(path, values):
    """A run whose recorded learning rate drops at step 40 (of 80): out of a constant-rate
    regime as a whole, inside it on either side of the drop."""
    run = _run(path, values)
    for t in range(len(values)):
        run.log(t, {"lr": 0.1 if t < 40 else 0.01})
    run.flush()
    return run


@pytest.fixture
def constant_rate_toy(only_toy):
    from ncdynamics.theories.regime import constant_learning_rate_assumption

    lr_rule = constant_learning_rate_assumption("constant rate", "the toy's rate is per step")
    only_toy(Confrontation("toy", "s", TOY.needs, _observe, _fit, assumptions=(lr_rule,)))


def test_an_out_of_regime_stream_whose_windows_inside_fail_says_fails(tmp_path, constant_rate_toy):
    """Windows inside the regime were fitted and none held: the stream's verdict is that of
    the window tested (not a bare ``out of regime``, which would hide a tested failure)."""
    steps = np.arange(0, 80.0)
    wavy = 2.0 + np.sin(steps / 4.0)  # no exponential decay on either side of the drop
    (e,) = compare(_lr_drop_run(tmp_path / "r", wavy))
    assert e.verdict.verdict in ("fails", "not distinguished", "degenerate"), e.verdict.reason
    assert e.fit is None and e.status == "fitted in a window"
    since, until = e.verdict.window
    assert (since, until) == (40, 79)  # the longest window inside, the later on a tie
    assert "on steps 40 to 79, inside its regime" in e.verdict.reason
    assert "0 of" in e.verdict.reason  # how many windows were tried, none holding
    assert "the whole stream is out of regime" in e.verdict.reason
    assert "recorded lr changes from 0.1 to 0.01 at step 40" in e.verdict.reason
    assert e.row()["window_start"] == 40


def test_an_out_of_regime_stream_whose_window_holds_says_holds_in_a_window(
    tmp_path, constant_rate_toy
):
    (e,) = compare(_lr_drop_run(tmp_path / "r", _decay(np.arange(0, 80.0), noise=0.003)))
    assert e.verdict.verdict == "holds in a window", e.verdict.reason
    assert e.status == "fitted in a window" and e.verdict.window is not None


def test_an_out_of_regime_stream_with_no_window_inside_stays_out_of_regime(
    tmp_path, constant_rate_toy
):
    # the rate changes at every record: no stretch inside the regime is long enough to fit
    run = _run(tmp_path / "r", _decay(np.arange(0, 40.0)))
    for t in range(40):
        run.log(t, {"lr": 0.1 / (1 + t)})
    run.flush()
    (e,) = compare(run)
    assert e.verdict.verdict == "out of regime" and e.verdict.window is None
    assert e.status == "not applicable"


def test_forecast_of_an_out_of_regime_stream_gives_its_windows_verdict(tmp_path, constant_rate_toy):
    """As compare: the forecast made inside the regime is the entry's verdict, window named."""
    steps = np.arange(0, 80.0)
    (bad,) = forecast(_lr_drop_run(tmp_path / "bad", 2.0 + np.sin(steps / 4.0)))
    assert bad.verdict.verdict in ("fails", "degenerate"), bad.verdict.reason
    assert bad.verdict.window == (40, 79)
    assert "on steps 40 to 79, inside the regime" in bad.verdict.reason
    assert "the whole stream is out of regime" in bad.verdict.reason
    assert bad.status == "fitted"  # its origins were fitted
    (good,) = forecast(_lr_drop_run(tmp_path / "good", _decay(steps, noise=0.003)))
    assert good.verdict.verdict == "holds in a window", good.verdict.reason
    assert good.verdict.window == (40, 79)


def test_the_window_from_the_regimes_start_is_tested_before_a_longer_one():
    from ncdynamics.experiments.windows import tested_first

    spans = [(0.0, 30.0), (50.0, 70.0), (20.0, 45.0)]
    assert tested_first(spans, start=(50.0, 70.0))[0] == (50.0, 70.0)
    assert tested_first(spans, start=None) == [(0.0, 30.0), (20.0, 45.0), (50.0, 70.0)]
    # equally long: the later one
    assert tested_first([(0.0, 10.0), (10.0, 20.0)], start=None)[0] == (10.0, 20.0)
