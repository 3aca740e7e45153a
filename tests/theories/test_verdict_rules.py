"""Every verdict rule pinned: a case just inside and just outside each threshold and bound.

Table-driven, so that moving a threshold across its boundary, swapping a bound, or turning an
``and`` of two tests into an ``or`` fails a named case (issue: verdicts that can fail).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ncdynamics.experiments.forecast_scoring import score_method
from ncdynamics.theories.alternatives import PANEL
from ncdynamics.theories.confrontation import Curves, Param, TheoryFit, Uncertainty
from ncdynamics.theories.verdict import (
    AICC_MARGIN,
    BOUND_TOL,
    MIN_HELDOUT,
    MIN_RECORDS,
    R2_MIN,
    SPAN_MAX,
    Holdout,
    _against_alternatives,
    degeneracy,
    holdout_splits,
    judge,
)


def _fit(steps, curve, n_free=2, params=None, predict=None, **curves):
    return TheoryFit(
        theory="toy",
        params={"rate": Param(0.1)} if params is None else params,
        curves=Curves(
            fitted={"v": (steps, curve)},
            predict=predict or (lambda at: {"v": np.asarray(at)}),
            **curves,
        ),
        uncertainty=Uncertainty(n_fitted=n_free),
    )


def _exp_fit(steps, values):
    """``log v = a - r t`` by least squares: a two-parameter theory of an exponential decay."""
    slope, icept = np.polyfit(steps, np.log(values), 1)

    def predict(at):
        return {"v": np.exp(icept + slope * np.asarray(at, np.float64))}

    return _fit(steps, predict(steps)["v"], predict=predict, params={"rate": Param(-slope)})


def _holdout(steps, values):
    folds = []
    for split in holdout_splits(steps, 2):
        seen = steps <= split
        folds.append((split, _exp_fit(steps[seen], values[seen])))
    return Holdout(tuple(folds))


# ---------------------------------------------------------------- rule 1: degenerate
STEPS = np.arange(10.0)
BOUND = 1e-2


@pytest.mark.parametrize(
    ("value", "side", "degenerate"),
    [
        (BOUND * math.exp(0.5 * BOUND_TOL), "lower", True),
        (BOUND * math.exp(2 * BOUND_TOL), "lower", False),
        (1e2 * math.exp(-0.5 * BOUND_TOL), "upper", True),
        (1e2 * math.exp(-2 * BOUND_TOL), "upper", False),
    ],
)
def test_a_parameter_at_either_bound_of_its_search_is_degenerate(value, side, degenerate):
    fit = _fit(STEPS, STEPS, params={"rate": Param(value, bound=(BOUND, 1e2))})
    why = degeneracy(fit)
    assert (why is not None) == degenerate
    if degenerate:
        assert f"{side} bound" in why


@pytest.mark.parametrize(
    ("span", "degenerate"), [(SPAN_MAX * 0.99, False), (SPAN_MAX * 1.01, True)]
)
def test_an_interval_spanning_more_than_span_max_is_not_determined(span, degenerate):
    fit = _fit(STEPS, STEPS, params={"rate": Param(1.0, interval=(0.1, 0.1 * span), sign=1)})
    assert (degeneracy(fit) is not None) == degenerate


@pytest.mark.parametrize(("low", "degenerate"), [(-1e-9, True), (0.0, True), (1e-9, False)])
def test_an_interval_holding_zero_is_degenerate(low, degenerate):
    fit = _fit(STEPS, STEPS, params={"rate": Param(1e-7, interval=(low, 2e-7), sign=1)})
    why = degeneracy(fit)
    assert (why is not None and "zero" in why) == degenerate


@pytest.mark.parametrize(("n_free", "n"), [(2, MIN_RECORDS), (4, 6), (6, 8)])
def test_too_few_records_is_degenerate_exactly_below_the_need(n_free, n):
    fit = _fit(STEPS, STEPS, n_free=n_free)
    assert degeneracy(fit, n_records=n) is None
    assert "records for" in degeneracy(fit, n_records=n - 1)


# ------------------------------------------------------------- rule 2: fails in-sample
@pytest.mark.parametrize(("r2", "fails"), [(R2_MIN - 0.01, True), (R2_MIN + 0.01, False)])
def test_r2_below_the_threshold_fails(r2, fails):
    steps = np.arange(40.0)
    obs = np.sin(steps / 6.0) + 3.0
    noise = np.cos(steps * 1.7)  # a fixed wiggle scaled to give the wanted R^2 exactly
    noise -= noise.mean()
    tot = float(np.sum((obs - obs.mean()) ** 2))
    curve = obs + noise * math.sqrt((1 - r2) * tot / float(noise @ noise))
    v = judge(_fit(steps, curve, scales={"v": "linear"}), {"v": (steps, obs)}, holdout=None)
    assert (v.verdict == "fails" and "R²" in v.reason) == fails


def test_no_better_than_persistence_one_record_ahead_fails():
    steps = np.arange(30.0)
    obs = np.exp(-0.1 * steps)
    # a staircase through the records: R^2 high, but its increments come in pairs, so carried
    # from each record it predicts the next no better than the record itself
    stairs = np.repeat(obs[::2], 2)
    v = judge(_fit(steps, stairs), {"v": (steps, obs)})
    assert v.verdict == "fails" and "carried forward" in v.reason


# ----------------------------------------------- rules 2-5: against the generic curves
def _numbers(theory_aicc, **alts):
    out = {"aicc.theory": theory_aicc}
    for name, (aicc, ratio) in alts.items():
        out[f"aicc.{name}"] = aicc
        out[f"heldout_ratio.{name}"] = ratio
    return out


FOLDS = Holdout(((10.0, _fit(STEPS, STEPS)),))
K = {a.name: a.n_params for a in PANEL}


@pytest.mark.parametrize(
    ("aicc", "ratio", "verdict"),
    [
        # a curve with more parameters than the theory: it must win both tests to fail it
        (-100 - AICC_MARGIN - 0.1, 1.01, "fails"),
        (-100 - AICC_MARGIN + 0.1, 1.01, "holds"),  # AICc not better by the margin
        (-100 - AICC_MARGIN - 0.1, 0.99, "holds"),  # not better out of sample
        (-500.0, 0.5, "holds"),
    ],
)
def test_a_richer_curve_fails_the_theory_only_when_better_in_sample_and_held_out(
    aicc, ratio, verdict
):
    fit = _fit(STEPS, STEPS, n_free=2)
    numbers = _numbers(-100.0, drift=(-50.0, 0.5), **{"power law": (-50.0, 0.5)})
    numbers.update(_numbers(-100.0, logistic=(aicc, ratio)))
    assert _against_alternatives(fit, numbers, FOLDS, 0.99).verdict == verdict


@pytest.mark.parametrize(
    ("aicc", "ratio", "verdict"),
    [
        (-100 + AICC_MARGIN + 0.1, 0.5, "holds"),  # the theory better on both
        (-100 + AICC_MARGIN - 0.1, 0.5, "not distinguished"),  # not better enough in-sample
        (-100 + AICC_MARGIN + 0.1, 1.0, "not distinguished"),  # as good held out
        (-50.0, 1.5, "not distinguished"),
    ],
)
def test_a_curve_with_no_more_parameters_must_be_beaten_on_both_tests(aicc, ratio, verdict):
    fit = _fit(STEPS, STEPS, n_free=K["power law"])
    numbers = _numbers(-100.0, drift=(-50.0, 0.5), **{"power law": (aicc, ratio)})
    v = _against_alternatives(fit, numbers, FOLDS, 0.99)
    assert v.verdict == verdict, v.reason
    if verdict == "not distinguished":
        assert "power law" in v.reason and "2 parameters" in v.reason


def _two_observable_fit(theory, n_free, shared):
    return TheoryFit(
        theory=theory,
        params={"rate": Param(0.1)},
        curves=Curves(
            fitted={"u": (STEPS, STEPS), "v": (STEPS, STEPS)},
            predict=lambda at: {"u": np.asarray(at), "v": np.asarray(at)},
            shared_parameters=shared,
        ),
        uncertainty=Uncertainty(n_fitted=n_free),
    )


@pytest.mark.parametrize(
    ("joint", "aicc", "verdict"),
    [
        # shared parameters: two exponentials on two observables are 10 > 6 parameters
        (True, -100 + AICC_MARGIN - 0.1, "holds"),  # need not be beaten by the margin
        (True, -100 - AICC_MARGIN + 0.1, "holds"),  # better in-sample, but not by the margin
        (True, -100 - AICC_MARGIN - 0.1, "not distinguished"),  # better even paid for
        # per-observable count (every theory not opted in): 5 <= 6, beaten by the margin
        (False, -100 + AICC_MARGIN - 0.1, "not distinguished"),
        (False, -100 + AICC_MARGIN + 0.1, "holds"),
    ],
)
def test_shared_parameters_count_a_curve_on_every_observable(joint, aicc, verdict):
    from ncdynamics.theories import verdict as rules

    fit = _two_observable_fit("joint", n_free=6, shared=joint)
    assert rules.panel_size(fit, K["two exponentials"]) == (10 if joint else 5)
    beaten = {a.name: (-50.0, 0.5) for a in PANEL if a.name != "two exponentials"}
    numbers = _numbers(-100.0, **beaten, **{"two exponentials": (aicc, 0.5)})
    v = _against_alternatives(fit, numbers, FOLDS, 0.99)
    assert v.verdict == verdict, v.reason
    if verdict == "not distinguished":
        assert "two exponentials" in v.reason


def test_without_an_out_of_sample_test_the_verdict_is_never_holds():
    fit = _fit(STEPS, STEPS, n_free=2)
    numbers = _numbers(-100.0, drift=(-50.0, math.nan))
    for holdout in (None, Holdout((), "3 records; need at least 7")):
        v = _against_alternatives(fit, numbers, holdout, 0.99)
        assert v.verdict == "degenerate" and "out of sample" in v.reason


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (MIN_RECORDS + MIN_HELDOUT - 1, 0),
        (MIN_RECORDS + MIN_HELDOUT, 1),
        (40, 3),
    ],
)
def test_origins_keep_enough_records_on_both_sides(n, expected):
    splits = holdout_splits(np.arange(float(n)), 2)
    assert len(splits) == expected
    for split in splits:
        assert np.sum(np.arange(n) <= split) >= MIN_RECORDS
        assert np.sum(np.arange(n) > split) >= MIN_HELDOUT


# ------------------------------------------------------ end to end through judge
def test_a_true_exponential_holds_and_a_logistic_is_told_apart():
    steps = np.arange(0.0, 60.0)
    rng = np.random.default_rng(3)
    obs = 2.0 * np.exp(-0.05 * steps) * np.exp(rng.normal(0, 0.01, steps.size))
    v = judge(_exp_fit(steps, obs), {"v": (steps, obs)}, holdout=_holdout(steps, obs))
    assert v.verdict == "holds", v.reason
    assert "better than 2 generic curves" in v.reason
    sat = np.exp(-3.0 / (1 + np.exp(-(steps - 30) / 5))) * np.exp(rng.normal(0, 0.01, steps.size))
    v = judge(_exp_fit(steps, sat), {"v": (steps, sat)}, holdout=_holdout(steps, sat))
    assert v.verdict in ("fails", "not distinguished"), v.reason


# ------------------------------------------------------ forecast coverage
def test_forecast_band_coverage_counts_records_inside_both_edges():
    actual = np.arange(1.0, 9.0)
    lo = actual - 0.5
    hi = actual + np.where(np.arange(8) % 2 == 0, 0.5, -0.25)  # misses every other record
    row = score_method("theory", actual, actual, (lo, hi), scale="linear")
    assert row["coverage"] == 0.5


# ------------------------------------------------------ the value from the settings
@pytest.mark.parametrize(
    ("want", "rtol", "verdict"),
    [
        (0.0205, 0.0, "holds"),  # inside the interval
        (0.0212, 0.0, "fails"),  # just outside
        (0.0212, 0.02, "holds"),  # outside, within the theory's own approximation error
        (0.0230, 0.02, "fails"),
    ],
)
def test_a_value_predicted_from_the_settings_outside_its_interval_fails(want, rtol, verdict):
    fit = _fit(
        STEPS,
        STEPS,
        n_free=2,
        params={"rate": Param(0.02, interval=(0.019, 0.021), expected=want, expected_rtol=rtol)},
    )
    numbers = _numbers(-100.0, drift=(-50.0, 0.5), **{"power law": (-50.0, 0.5)})
    v = _against_alternatives(fit, numbers, FOLDS, 0.99)
    assert v.verdict == verdict, v.reason


def test_a_drifting_random_walk_rarely_holds_where_the_true_decay_mostly_does():
    """The separation the AICc margin was chosen for (verdict.AICC_MARGIN): a two-parameter
    theory that is a straight line in log, on 40 records, against its own streams and against
    random walks with the same drift, 20 seeds each."""
    steps = np.arange(40.0)
    held = {"true": 0, "walk": 0}
    for seed in range(20):
        rng = np.random.default_rng(500 + seed)
        streams = {
            "true": np.exp(-0.05 * steps + rng.normal(0, 0.01, steps.size)),
            "walk": np.exp(np.cumsum(-0.05 + 0.05 * rng.standard_normal(steps.size))),
        }
        for kind, obs in streams.items():
            v = judge(_exp_fit(steps, obs), {"v": (steps, obs)}, holdout=_holdout(steps, obs))
            held[kind] += v.verdict == "holds"
    assert held["true"] >= 15, held
    assert held["walk"] <= 3, held


def test_a_residual_too_large_to_square_scores_infinite_without_a_warning():
    """A prediction off by 1e200 (a diverging extrapolation) is the worst score, inf, and says
    nothing on stderr: the overflow is the answer, not an accident."""
    import warnings

    from ncdynamics.theories.verdict import _sse

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _sse(np.array([1.0, 2.0]), np.array([1.0, 1e200])) == math.inf
        assert _sse(np.array([1.0, 2.0]), np.array([1.0, 2.5])) == 0.25
