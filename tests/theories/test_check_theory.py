"""The conformance and calibration kit (issue 28, item 8): ``check_theory`` on every built-in
theory, seeded and quick, and on theories made to fail it.

What the built-in theories meet in the quick configuration is asserted; the calibration with
more streams is measured by ``benchmarks/calibration_table.py`` and tabled in
docs/confront.md; ``MISSED_TODAY`` lists what the quick configuration leaves unasserted.
"""

from __future__ import annotations

import math
import sys
import types

import numpy as np
import pytest

from ncdynamics import runs, theories
from ncdynamics.theories import (
    Confrontation,
    Curves,
    Need,
    Param,
    Theory,
    TheoryFit,
    Uncertainty,
)
from ncdynamics.theories.testing import (
    GENERIC_FAMILIES,
    NOISE_KINDS,
    Calibration,
    CalibrationReport,
    StreamResult,
    check_theory,
    fit_invariants,
    follow,
    generic_progress,
    noise_series,
)

CONFRONTING = ("alignment", "hadamard", "lesde", "ntk_collapse")

#: Targets of check() this quick configuration (one stream per noise and family) does not
#: assert: a single stream per family makes a family's false-positive rate 0 or 1, and
#: coverage and spread need seeds. The calibration itself, with 40 streams per noise and 10
#: per family, is the generated table of docs/confront.md (benchmarks/calibration_table.py),
#: which names the targets still missed after the engine of issue 28 and why.
MISSED_TODAY = {
    "alignment": {"coverage_ar1", "spread_se"},
    "hadamard": {"fp", "coverage_ar1", "spread_se"},
    "lesde": {"coverage_ar1", "spread_se"},
    "ntk_collapse": set(),
}


@pytest.fixture(scope="module")
def reports():
    return {}


def _report(name, reports):
    if name not in reports:
        reports[name] = check_theory(name, seed=0, quick=True, n_true=1)
    return reports[name]


@pytest.mark.parametrize("name", CONFRONTING)
def test_report_structure_and_fit_invariants(name, reports):
    report = _report(name, reports)
    assert report.theory == name and report.confronts and not report.notes
    kinds = [(r.kind, r.family) for r in report.results]
    assert sorted(k for k in kinds if k[0] == "true") == [("true", n) for n in sorted(NOISE_KINDS)]
    assert [f for k, f in kinds if k == "generic"] == list(GENERIC_FAMILIES)
    assert [k for k, _ in kinds].count("smoke") >= 1
    assert report.smoke_failures == []
    assert report.invariant_failures == []
    assert set(report.true_params) <= set().union(*(r.params for r in report.results))
    table = report.table()
    assert list(table.columns) == ["theory", "metric", "group", "value", "n"]
    fp = table[(table.metric == "fp") & (table.group != "all")]
    assert list(fp.group) == list(GENERIC_FAMILIES)
    assert table.loc[(table.metric == "tp") & (table.group == "all"), "n"].item() == 2


@pytest.mark.parametrize("name", CONFRONTING)
def test_the_targets_met_today_hold(name, reports):
    report = _report(name, reports)
    missed = MISSED_TODAY[name]
    report.check(
        fp_max=1.0 if "fp" in missed else 0.05,
        family_fp_max=1.0 if "fp" in missed else 0.2,
        coverage_min=0.9 if "coverage_ar1" not in missed else 0.0,
        spread_se=None,  # needs >= 3 seeds: the benchmark measures it
    )
    assert report.coverage("independent") == dict.fromkeys(report.true_params, 1.0)


def test_a_theory_without_confrontation_is_checked_on_its_smoke_run_only():
    report = check_theory("truncation", quick=True)
    assert not report.confronts
    assert "declares no confrontation" in report.notes[0]
    assert [(r.kind, r.verdict) for r in report.results] == [("smoke", "ran")]
    assert math.isnan(report.tp_rate) and math.isnan(report.fp_rate)
    report.check()


# ---------------------------------------------------------------------------- failing
STEPS = np.arange(0, 60, 3)


def _loss_stream(path, values):
    run = runs.create(path, config={"loss": "mse"})
    for t, v in zip(STEPS, values, strict=True):
        run.log(int(t), {"loss": float(v)})
    run.flush()


def _true(path, rng, noise):
    _loss_stream(path, np.exp(-0.05 * STEPS + 0.01 * noise_series(rng, STEPS.size, noise)))


def _generic(path, family, rng):
    h = generic_progress(family, STEPS.astype(float), rng)
    _loss_stream(path, follow(1.0, np.exp(-0.05 * STEPS[-1]), h))


CAL = Calibration(true_stream=_true, generic_stream=_generic, true_params={"rate": 0.05})


def _fit_as_recorded(stream, n_fitted):
    """A fit that copies the records: it explains any stream (a theory that cannot fail)."""
    steps, loss = stream.scalar("loss")
    last = float(loss[-1])

    def predict(at):
        return {"loss": np.full(np.shape(at), last)}

    return TheoryFit(
        theory="bad",
        params={"rate": Param(0.05, interval=(0.04, 0.06) if n_fitted else None)},
        curves=Curves(
            fitted={"loss": (steps, loss)},
            predict=predict,
            ahead={"loss": (steps[1:], loss[1:])},
        ),
        uncertainty=Uncertainty(n_fitted=n_fitted),
    )


def _bad_theory(monkeypatch, n_fitted):
    module = types.ModuleType("bad_theory_for_check")
    module.CONFRONTATION = Confrontation(
        theory="bad",
        summary="copies the records",
        needs=(Need("scalar", "loss", "run.log"),),
        observe=lambda stream: {"loss": stream.scalar("loss")},
        fit=lambda stream: _fit_as_recorded(stream, n_fitted),
    )
    module.CALIBRATION = CAL
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return Theory(
        name="bad",
        title="A theory that explains everything",
        citation="Nobody, 2026.",
        package=module.__name__,
        confrontation=f"{module.__name__}:CONFRONTATION",
        calibration=f"{module.__name__}:CALIBRATION",
    )


def test_a_theory_that_holds_on_everything_fails_the_check(monkeypatch):
    theory = _bad_theory(monkeypatch, n_fitted=1)
    report = check_theory(theory, quick=True, n_true=3, smoke=False)
    assert "bad" not in theories.available()  # checked without being registered
    with pytest.raises(AssertionError) as info:
        report.check()
    text = str(info.value)
    # it holds on every generic stream (false positives); or, under an engine that scores
    # out of sample, it no longer holds on its own streams (true positives)
    assert "false positives" in text or "true positives" in text


def test_a_fit_without_free_parameters_fails_the_check(monkeypatch):
    theory = _bad_theory(monkeypatch, n_fitted=0)
    report = check_theory(theory, n_true=1, n_generic=0, smoke=False)
    assert any("0 free parameters" in f for f in report.invariant_failures)
    with pytest.raises(AssertionError, match="0 free parameters"):
        report.check(tp_min=0.0)


def test_a_forecast_that_raises_is_noted_and_leaves_the_band_unmeasured(monkeypatch):
    from ncdynamics.theories import testing

    theory = _bad_theory(monkeypatch, n_fitted=1)

    def boom(path, name):
        raise RuntimeError("no forecast here")

    monkeypatch.setattr(testing, "_band_scores", boom)
    report = check_theory(theory, n_true=1, n_generic=0, smoke=False, forecast=True)
    assert len([r for r in report.results if r.kind == "true"]) == 2
    assert math.isnan(report.band_coverage("ar1"))
    assert sum("no forecast here" in note for note in report.notes) == 2


def test_check_lists_every_missed_target_with_its_numbers():
    report = CalibrationReport("x", true_params={"c": 1.0})
    for seed, (c, iv) in enumerate([(1.0, (0.9, 1.1)), (1.5, (1.4, 1.6)), (0.5, (0.4, 0.6))]):
        report.results.append(StreamResult("true", "ar1", seed, "holds", "", {"c": c}, {"c": iv}))
    report.results.append(
        StreamResult("true", "independent", 0, "fails", "", {"c": 1.0}, {"c": (0.5, 2.0)})
    )
    report.results.append(StreamResult("generic", "logistic", 0, "holds in a window"))
    report.results.append(StreamResult("generic", "power_law", 0, "degenerate"))
    assert report.tp_rate == 0.75 and report.fp_rate == 0.5
    assert report.fp_by_family == {"logistic": 1.0, "power_law": 0.0}
    assert report.coverage("ar1") == {"c": pytest.approx(1 / 3)}
    se = 0.1 / 1.959963984540054
    assert report.spread_over_se("ar1")["c"] == pytest.approx(0.5 / se)
    with pytest.raises(AssertionError) as info:
        report.check()
    lines = str(info.value).splitlines()[1:]
    assert len(lines) == 5, lines
    assert "true positives 0.75 < 0.9" in lines[0]
    assert "false positives 0.50 > 0.05" in lines[1]
    assert "family logistic 1.00 > 0.2" in lines[2]
    assert "coverage of c under ar1 noise 0.33 < 0.9" in lines[3]
    assert "under ar1 noise 9.80 outside [0.7, 1.4]" in lines[4]


def test_noise_series_has_unit_variance_and_the_ar1_correlation():
    rng = np.random.default_rng(0)
    e = noise_series(rng, 20000, "ar1")
    assert np.std(e) == pytest.approx(1.0, abs=0.1)
    assert np.corrcoef(e[:-1], e[1:])[0, 1] == pytest.approx(0.9, abs=0.02)
    e = noise_series(rng, 20000, "independent", size=(2,))
    assert e.shape == (20000, 2) and abs(np.corrcoef(e[:-1, 0], e[1:, 0])[0, 1]) < 0.03
    with pytest.raises(ValueError, match="`kind` must be one of"):
        noise_series(rng, 3, "pink")


@pytest.mark.parametrize("family", GENERIC_FAMILIES)
def test_generic_progress_starts_at_zero_and_trends_end_at_one(family):
    t = np.geomspace(10, 400, 20)
    h = generic_progress(family, t, np.random.default_rng(3))
    assert h.shape == t.shape and np.all(np.isfinite(h))
    if family != "ar1_noise":
        assert h[0] == pytest.approx(0.0, abs=1e-12)
    if family not in ("ar1_noise", "random_walk"):
        assert h[-1] == pytest.approx(1.0)
        assert np.all(np.diff(h) > -1e-12)  # the deterministic trends are monotone


def test_fit_invariants_name_what_is_wrong():
    steps = np.arange(5.0)
    fit = TheoryFit(
        theory="x",
        params={"a": Param(1.0, interval=(2.0, 1.0)), "b": Param(2.0)},
        curves=Curves(
            fitted={"y": (steps, steps), "z": (steps, steps)},
            predict=lambda at: {"y": np.zeros(np.shape(at))},
        ),
        uncertainty=Uncertainty(n_fitted=2),
    )
    assert fit.fit_until == 4.0
    problems = fit_invariants(fit)
    assert problems == [
        "1 intervals for 2 free parameters",
        "interval of a is [2.0, 1.0]",
        "fitted observable 'z' is not predicted",
    ]


def test_a_calibration_reference_is_checked_like_the_others():
    from ncdynamics.theories import TheoryDeclarationError

    with pytest.raises(TheoryDeclarationError, match="`calibration` must be a 'module:attribute'"):
        Theory(name="t", title="t", citation="c", package="p", calibration="p.calibration")
    for name in CONFRONTING:
        assert isinstance(theories.get(name).load_calibration(), Calibration)
    assert theories.get("truncation").load_calibration() is None


def test_the_toy_theory_of_the_docs_meets_the_invariants_and_its_true_positives(monkeypatch):
    from pathlib import Path

    monkeypatch.syspath_prepend(str(Path(__file__).parents[1] / "plugins"))
    try:
        from toy_theory import THEORY

        report = check_theory(THEORY, seed=0, quick=True)
    finally:  # the registry tests install their own copy of the package
        for name in [m for m in sys.modules if m.startswith("toy_theory")]:
            del sys.modules[name]
    assert report.invariant_failures == [] and report.smoke_failures == []
    assert [r.verdict for r in report.results if r.kind == "smoke"] == ["holds"]
    assert report.tp_rate == 1.0
    assert report.coverage("independent") == {"rate": 1.0}


def test_true_stream_band_is_the_band_check_theory_measures():
    """``testing.true_stream_band``, which re-measures one band alone, makes and scores the
    same stream as ``check_theory(..., forecast=True)`` for that seed and noise."""
    from ncdynamics import theories
    from ncdynamics.theories import testing

    hadamard = theories.get("hadamard")
    report = check_theory(hadamard, seed=5, n_true=1, n_generic=0, smoke=False, forecast=True)
    alone = testing.true_stream_band("hadamard", "ar1", 5)
    (row,) = [r for r in report.results if r.kind == "true" and r.family == "ar1"]
    assert alone[0]
    np.testing.assert_equal(alone, (row.band_coverage, row.band_z))  # NaN equal to NaN
    with pytest.raises(ValueError, match="`theory` must declare a calibration"):
        testing.true_stream_band("truncation", "ar1", 0)
