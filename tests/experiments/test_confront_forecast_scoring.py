"""Forecast origins, the baselines fitted in training time, their bands, and the scores."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ncdynamics.experiments.forecast_scoring import (
    last_value_baseline,
    place_origins,
    power_law_baseline,
    score_method,
    time_weights,
)


def _curve(t):
    """Not a power law: a power law times a slowly fading bump."""
    return 3.0 * (t + 1.0) ** -0.6 * (1.0 + 0.8 * np.exp(-t / 300.0))


def test_power_law_baseline_does_not_depend_on_record_spacing():
    linear = np.linspace(0, 1000, 60)
    logspaced = np.unique(np.round(np.geomspace(1, 1001, 60) - 1))
    at = np.array([5000.0])
    preds = [
        power_law_baseline(s, _curve(s), origin=0.0).predict(at)[0] for s in (linear, logspaced)
    ]
    assert abs(math.log10(preds[0] / preds[1])) < 0.006
    # by record index (the later half of the records) the two spacings disagree 3x more
    index_based = []
    for s in (linear, logspaced):
        half = s[s.size // 2 :]
        p, c = np.polyfit(np.log(half + 1), np.log(_curve(half)), 1)
        index_based.append(np.exp(c + p * np.log(5001.0)))
    assert abs(math.log10(index_based[0] / index_based[1])) > 0.012


def test_power_law_baseline_band_covers_noisy_power_law_data():
    rng = np.random.default_rng(0)
    steps = np.arange(1, 400.0)
    values = 2.0 * (steps + 1) ** -0.5 * np.exp(rng.normal(0, 0.05, steps.size))
    seen = steps <= 200
    base = power_law_baseline(steps[seen], values[seen], origin=1.0)
    lo, hi = base.band(steps[~seen])
    inside = np.mean((values[~seen] >= lo) & (values[~seen] <= hi))
    assert 0.85 < inside <= 1.0


def test_last_value_band_is_a_random_walk_band_in_time():
    rng = np.random.default_rng(1)
    steps = np.arange(0, 2000.0, 2.0)
    walk = np.cumsum(rng.normal(0, 0.1 * math.sqrt(2.0), steps.size))  # sigma^2 = 0.01 / step
    base = last_value_baseline(steps, walk, scale="linear")
    lo, hi = base.band(np.array([steps[-1] + 100.0]))
    assert (hi - lo)[0] / 2 == pytest.approx(1.96 * 0.1 * 10.0, rel=0.1)
    assert base.predict(np.array([1.0, 2.0])).tolist() == [walk[-1]] * 2


def test_time_weights_give_each_record_its_share_of_time():
    np.testing.assert_allclose(time_weights(np.arange(5.0)), np.array([0.5, 1, 1, 1, 0.5]) / 0.8)
    w = time_weights(np.array([0.0, 1.0, 2.0, 100.0]))
    assert w[-1] > 10 * w[1] and w.mean() == pytest.approx(1.0)


def test_origins_by_fraction_and_change_are_snapped_kept_once_and_sorted():
    steps = np.arange(0, 101.0)
    values = np.exp(-0.05 * steps)  # log-linear: a fraction of change is a fraction of steps
    got = place_origins(steps, values, scale="log", at=(0.5, 0.3), change=(0.5, 0.9))
    assert got == [
        (30.0, "step fraction 0.3"),
        (50.0, "step fraction 0.5"),
        (90.0, "0.9 of the total change"),
    ]
    # a transient over early: change-placed cuts sit inside it
    fast = 1.0 + np.exp(-steps / 5.0)
    cuts = place_origins(steps, fast, scale="linear", at=(), change=(0.25, 0.5, 0.75))
    assert [c for c, _ in cuts] == [2.0, 4.0, 7.0]
    # too close to either end: dropped
    assert place_origins(steps, values, scale="log", at=(0.01, 0.995), change=()) == []


def test_score_rows_measure_the_whole_post_cut_trajectory():
    actual = np.array([1.0, 10.0, 100.0])
    row = score_method("m", actual * 10, actual, (actual / 20, actual * 20), scale="log")
    assert row["rmse"] == pytest.approx(1.0) and row["error_unit"] == "decades"
    assert row["coverage"] == 1.0 and row["decades_off"] == pytest.approx(1.0)
    flipped = score_method("m", -actual, actual, None, scale="log")
    assert flipped["rmse"] == math.inf and math.isnan(flipped["coverage"])
    lin = score_method("m", actual + 1, actual, None, scale="linear")
    assert lin["rmse"] == pytest.approx(1.0) and lin["error_unit"] == "units"


def test_bands_have_the_toolkits_coverage():
    from ncdynamics.experiments import forecast_scoring
    from ncdynamics.theories import uncertainty

    assert forecast_scoring.LEVEL == uncertainty.LEVEL
