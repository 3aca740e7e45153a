"""The verdict rules and the interval helpers of the confrontation contract."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from scipy import stats

from ncdynamics.theories.confrontation import Curves, Param, TheoryFit
from ncdynamics.theories.uncertainty import (
    covariance_from_jacobian,
    delta_band,
    intervals_from_covariance,
    numeric_jacobian,
)
from ncdynamics.theories.verdict import (
    degeneracy,
    expected_notes,
    judge,
    power_law_in_time,
    skill,
)


def _fit(steps, curve, params=None, **curves):
    return TheoryFit(
        theory="toy",
        params={"rate": Param(0.1)} if params is None else params,
        curves=Curves(
            fitted={"v": (steps, curve)}, predict=lambda at: {"v": np.asarray(at)}, **curves
        ),
    )


def _with_ahead(fit, ahead):
    return dataclasses.replace(fit, curves=dataclasses.replace(fit.curves, ahead=ahead))


def test_linear_regression_intervals_match_scipy():
    rng = np.random.default_rng(0)
    x = np.linspace(0, 5, 30)
    y = 1.5 * x - 2 + rng.normal(0, 0.3, x.size)
    slope, icept = np.polyfit(x, y, 1)
    jac = np.stack([x, np.ones_like(x)], axis=1)
    cov, s2, dof = covariance_from_jacobian(jac, y - (slope * x + icept), correlated=False)
    got = intervals_from_covariance(["slope", "icept"], [slope, icept], cov, dof)
    ref = stats.linregress(x, y)
    half = stats.t.ppf(0.975, x.size - 2) * ref.stderr
    assert got["slope"] == pytest.approx((slope - half, slope + half), rel=1e-9)
    assert dof == 28 and s2 > 0


def test_no_degrees_of_freedom_gives_infinite_intervals():
    cov, _, dof = covariance_from_jacobian(np.eye(2), [0.1, 0.2])
    assert dof == 0
    got = intervals_from_covariance(["a", "b"], [1.0, 2.0], cov, dof, log_scale=[True, False])
    assert got["a"] == (0.0, math.inf) and got["b"] == (-math.inf, math.inf)


def test_numeric_jacobian_and_band_of_a_line():
    jac = numeric_jacobian(lambda t: np.array([t[0] * 2 + t[1], t[0] * t[1]]), [3.0, 4.0])
    np.testing.assert_allclose(jac, [[2, 1], [4, 3]], rtol=1e-8)
    cov = np.diag([0.01, 0.04])
    band = delta_band(
        lambda th, at: {"y": th[0] * at + th[1]}, [1.0, 0.0], cov, np.array([0.0, 2.0])
    )
    lo, hi = band["y"]
    np.testing.assert_allclose(hi - lo, 2 * 1.959964 * np.sqrt([0.04, 0.04 * 1 + 0.04]), rtol=1e-5)


def test_degenerate_rules():
    steps = np.arange(10.0)
    fit = _fit(steps, steps, params={"rate": Param(1e-8, bound=(1e-8, 1e3))})
    assert "lower bound" in degeneracy(fit)
    fit = _fit(steps, steps, params={"rate": Param(-0.2, sign=1)})
    assert "unphysical" in degeneracy(fit)
    fit = _fit(steps, steps, params={"rate": Param(0.2, interval=(-0.1, 0.5), sign=1)})
    assert "indistinguishable from zero" in degeneracy(fit)
    fit = _fit(steps, steps, params={"rate": Param(0.2, interval=(0.1, 0.3), sign=1)})
    assert degeneracy(fit) is None
    assert "records" in degeneracy(fit, n_records=2)
    assert degeneracy(fit, n_records=5) is None
    assert "not finite" in degeneracy(_fit(steps, steps, params={"rate": Param(math.nan)}))


def test_a_flat_curve_through_a_decay_fails():
    rng = np.random.default_rng(1)
    steps = np.sort(rng.choice(np.arange(5, 200), 25, replace=False)).astype(float)
    obs = 3.0 * np.exp(-0.02 * steps) * np.exp(rng.normal(0, 0.01, steps.size))
    flat = _fit(steps, np.full(steps.size, obs.mean()))
    assert judge(flat, {"v": (steps, obs)}).verdict == "fails"


def test_power_law_data_fails_a_theory_that_is_beaten_by_the_power_law():
    steps = np.geomspace(1, 1000, 30)
    obs = 5.0 * (steps + 1.0) ** -0.7
    # an exponential-ish curve with the right endpoints: R2 high-ish but worse than a power law
    curve = np.exp(np.interp(np.log(steps + 1), [np.log(2), np.log(1001)], np.log(obs[[0, -1]])))
    curve *= np.exp(0.05 * np.sin(np.linspace(0, 6, steps.size)))
    numbers = skill(_fit(steps, curve), {"v": (steps, obs)})
    assert numbers["v.skill_vs_power_law"] < 0
    law = power_law_in_time(steps, obs)
    np.testing.assert_allclose(law, obs, rtol=1e-10)


def test_ahead_predictions_given_by_the_theory_are_used():
    steps = np.arange(0.0, 20.0, 2.0)
    obs = np.exp(-0.1 * steps)
    fit = _fit(steps[1:], obs[1:] * 1.001)
    fit = _with_ahead(fit, {"v": (steps[1:], obs[1:] * 1.001)})
    numbers = skill(fit, {"v": (steps, obs)})
    assert numbers["v.ahead_skill_vs_persistence"] > 0.99


def test_ahead_predictions_are_also_scored_against_the_power_law():
    steps = np.arange(0.0, 40.0, 2.0)
    obs = np.exp(-0.1 * steps)
    base = _fit(steps[1:], obs[1:])
    fit = _with_ahead(base, {"v": (steps[1:], obs[1:] * 1.0001)})
    numbers = skill(fit, {"v": (steps, obs)})
    assert numbers["v.ahead_skill_vs_power_law"] > 0.99


def test_a_zero_holding_interval_is_reported_before_the_sign():
    steps = np.arange(10.0)
    fit = _fit(steps, steps, params={"rate": Param(-0.007, interval=(-0.02, 0.005), sign=1)})
    assert "indistinguishable from zero" in degeneracy(fit)


def test_a_log_fitted_rate_spanning_decades_is_not_determined():
    steps = np.arange(10.0)
    fit = _fit(steps, steps, params={"rate": Param(1e-3, interval=(1e-5, 0.1), sign=1)})
    assert "not determined" in degeneracy(fit)


def test_bands_of_overflowing_predictions_are_infinite_not_errors():
    def grows(th, at):
        with np.errstate(over="ignore"):
            return {"y": np.exp(th[0] * at)}

    lo, hi = delta_band(grows, [400.0], np.eye(1) * 1e-60, np.array([1.0, 2.0]))["y"]
    assert np.isfinite(hi[0]) and np.isinf(hi[1]) and not np.any(np.isnan(lo))


def test_too_few_records_for_the_free_parameters_is_degenerate():
    steps = np.arange(3.0)
    names = "abcd"
    fit = _fit(steps, steps + 1, params={k: Param(0.5, interval=(0, 1)) for k in names})
    assert fit.n_free == 4
    assert "5 records for 4 free parameters (need at least 6)" in degeneracy(fit, n_records=5)
    assert degeneracy(fit, n_records=6) is None
    # whatever the parameters, four records are too few to judge a fit by
    two = _fit(steps, steps + 1, params={k: Param(0.5, interval=(0, 1)) for k in "ab"})
    assert "need at least 5" in degeneracy(two, n_records=4)
    assert degeneracy(two, n_records=5) is None


def test_no_fitted_observable_among_the_recorded_is_an_error():
    steps = np.arange(5.0)
    v = judge(_fit(steps, steps + 1), {"other": (steps, steps + 1)})
    assert v.verdict == "error" and "no fitted observable" in v.reason


def test_a_value_expected_from_the_settings_is_reported_beside_the_verdict():
    steps = np.arange(5, 60.0)
    obs = 3.0 * np.exp(-0.02 * steps)
    flat = np.full(steps.size, obs.mean())  # a verdict (fails) that is not degenerate

    def rate(want):
        return {"rate": Param(0.02, interval=(0.019, 0.021), sign=1, expected=want)}

    inside = judge(_fit(steps, flat, params=rate(0.0205)), {"v": (steps, obs)})
    assert inside.verdict == "fails"
    assert "rate = 0.02 against 0.0205 from the settings (inside its 95% interval" in inside.reason
    outside = judge(_fit(steps, flat, params=rate(0.03)), {"v": (steps, obs)})
    assert "(outside its 95% interval" in outside.reason
    bare = _fit(steps, obs, params={"rate": Param(0.02, expected=0.025)})
    assert expected_notes(bare) == ["rate = 0.02 against 0.025 from the settings (20% off)"]


def test_judge_skips_one_record_ahead_for_non_consecutive_ahead_predictions():
    steps = np.arange(0.0, 20.0, 2.0)
    obs = np.exp(-0.1 * steps)
    ahead_steps = steps[[2, 4, 6]]  # not consecutive records: no one-record-ahead score
    fit = _fit(steps, obs)
    fit = _with_ahead(fit, {"v": (ahead_steps, obs[[2, 4, 6]])})
    numbers = skill(fit, {"v": (steps, obs)})
    assert "v.ahead_skill_vs_persistence" not in numbers and numbers["v.r2"] == 1.0
