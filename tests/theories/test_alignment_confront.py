"""The alignment confrontation fitted to records that the theory itself generated.

The stream here is made the way real runs are: it starts late (the probe records from step
20, not 0), its records are unevenly spaced, and it is cut while the transient is still
running, so a prediction is only right if the theory is integrated from the first record's
time and state.
"""

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.theories.alignment.closed_form import final_distance
from ncdynamics.theories.alignment.confront import CONFRONTATION
from ncdynamics.theories.alignment.estimate import simulate
from ncdynamics.theories.alignment.model import AlignmentParams
from ncdynamics.theories.confrontation import Stream
from ncdynamics.theories.verdict import assess

TRUE = AlignmentParams(0.05, 0.02, X=2.0, Y=2.0)
START = np.array([1.0, 0.01, 0.0])  # (a, b, w) at step 0, before the first record
# Uneven gaps; the last record (a = 2.8) is mid-way up to the fixed point (a = 3.67).
STEPS = np.array([20.0, 21.0, 23.0, 26.0, 30.0, 35.0, 41.0, 48.0, 52.0])


def _truth(times):
    return simulate(START, np.concatenate([[0.0], times]), TRUE).ys[1:]


@pytest.fixture
def late_stream(tmp_path):
    run = runs.create(tmp_path / "r")
    for t, (a, b, w) in zip(STEPS, _truth(STEPS), strict=True):
        run.log(
            int(t), {"m/pair_a": a, "m/pair_b": b, "m/pair_w": w, "m/pair_X": 2.0, "m/pair_Y": 2.0}
        )
    run.flush()
    return Stream(run, "m/")


def test_fit_recovers_rates_from_a_late_uneven_cut_stream(late_stream):
    fit = CONFRONTATION.fit(late_stream)
    assert fit.params["inv_tau_h"].value == pytest.approx(TRUE.inv_tau_h, rel=1e-4)
    assert fit.params["inv_tau_y"].value == pytest.approx(TRUE.inv_tau_y, rel=1e-4)
    assert fit.fit_until == STEPS[-1]
    steps, a_fitted = fit.curves.fitted["pair_distance"]
    np.testing.assert_array_equal(steps, STEPS)
    np.testing.assert_allclose(a_fitted, _truth(STEPS)[:, 0], rtol=1e-5)


def test_prediction_starts_from_the_first_record_not_from_step_zero(late_stream):
    # Integrating from t = 0 with the first record's state shifts the whole prediction by
    # 20 steps: at t = 60 it gives a(80) = 3.48 instead of a(60) = 3.07.
    fit = CONFRONTATION.fit(late_stream)
    at = np.array([10.0, 40.0, 60.0, 75.0, 120.0])
    pred = fit.curves.predict(at)
    truth = _truth(at[1:])
    np.testing.assert_allclose(pred["pair_distance"][1:], truth[:, 0], rtol=1e-4)
    np.testing.assert_allclose(pred["pair_output_distance"][1:], truth[:, 1], rtol=1e-4)
    assert np.isnan(pred["pair_distance"][0])  # before the first record: no prediction


# Uneven gaps growing from 1 to 4 steps, from step 20 to step 83 (a = 3.4 of 3.67): late,
# unevenly spaced and cut before the transient is over, with 1% multiplicative noise.
NOISY_STEPS = 20.0 + np.cumsum(np.concatenate([[0.0], np.repeat([1.0, 2.0, 3.0, 4.0], 6)]))


@pytest.fixture
def noisy_stream(tmp_path):
    rng = np.random.default_rng(7)
    truth = _truth(NOISY_STEPS)
    noisy = truth * (1 + 0.01 * rng.standard_normal(truth.shape))
    run = runs.create(tmp_path / "noisy", config={"loss": "mse", "epochs": 100})
    for t, (a, b, w) in zip(NOISY_STEPS, noisy, strict=True):
        run.log(
            int(t), {"m/pair_a": a, "m/pair_b": b, "m/pair_w": w, "m/pair_X": 2.0, "m/pair_Y": 2.0}
        )
    run.flush()
    return Stream(run, "m/")


def test_noisy_late_uneven_stream_recovers_rates_inside_their_intervals(noisy_stream):
    fit = CONFRONTATION.fit(noisy_stream)
    for name, true in (("inv_tau_h", TRUE.inv_tau_h), ("inv_tau_y", TRUE.inv_tau_y)):
        low, high = fit.intervals[name]
        assert low < true < high
        assert fit.params[name].value == pytest.approx(true, rel=0.05)
        assert fit.params[name].unit == "1/epoch"
        assert fit.params[name].sign == 1
        bound_low, bound_high = fit.params[name].bound
        assert bound_low < low and high < bound_high
    p = fit.shown.predictions
    exact = final_distance(*_truth(NOISY_STEPS[:1])[0, :2], 2.0, 2.0, TRUE.rho)
    assert p["final_pair_distance_low"] < exact < p["final_pair_distance_high"]
    assert "AR(1)" in fit.uncertainty.method and "effective records" in fit.uncertainty.method
    observed = CONFRONTATION.observe(noisy_stream)
    assert (
        set(fit.curves.fitted)
        == set(observed)
        == {
            "pair_distance",
            "pair_output_distance",
            "pair_alignment",
        }
    )
    verdict, _ = assess(CONFRONTATION.fit, noisy_stream, observed, fit, n_records=NOISY_STEPS.size)
    assert verdict.verdict == "holds", verdict.reason


def test_band_is_centred_on_the_prediction_and_holds_the_truth(noisy_stream):
    fit = CONFRONTATION.fit(noisy_stream)
    at = np.array([10.0, 60.0, 90.0, 200.0])
    pred, band = fit.curves.predict(at), fit.curves.band(at)
    for name in ("pair_distance", "pair_output_distance", "pair_alignment"):
        low, high = band[name]
        assert np.isnan(pred[name][0]) and np.isnan(low[0])  # before the first record
        assert np.all(low[1:] < pred[name][1:]) and np.all(pred[name][1:] < high[1:])
    truth = _truth(at[1:])
    low, high = band["pair_distance"]
    assert np.all((low[1:] < truth[:, 0]) & (truth[:, 0] < high[1:]))


def test_prediction_accepts_unsorted_repeated_steps(noisy_stream):
    fit = CONFRONTATION.fit(noisy_stream)
    at = np.array([90.0, 60.0, 90.0, 5.0])
    pred = fit.curves.predict(at)["pair_distance"]
    assert pred[0] == pred[2] and np.isnan(pred[3])
    assert pred[1] == pytest.approx(fit.curves.predict(np.array([60.0]))["pair_distance"][0])


def test_alternatives_of_eq51_fit_eq7_data_worse(noisy_stream):
    fit = CONFRONTATION.fit(noisy_stream)
    alt = fit.shown.alternatives
    assert set(alt) == {"eq7", "factor-two", "square", "minus-sign", "term-removed"}
    assert alt["eq7"]["chosen"] == 1.0 and alt["eq7"]["delta_aic"] == 0.0
    assert alt["eq7"]["objective_49"] == pytest.approx(fit.shown.goodness["objective_49"])
    for variant in ("factor-two", "square", "minus-sign", "term-removed"):
        assert alt[variant]["chosen"] == 0.0
        assert alt[variant]["delta_aic"] > 0, variant


def test_band_carries_the_first_records_scatter_through_the_start_and_the_refit(noisy_stream):
    """The prediction is integrated from the first record, and the rates are fitted from it
    too: a first record off by ``d`` moves the prediction by ``(g_y + g_theta G) d`` (``G``
    the rates' response to it), and the two terms partly cancel, since the refitted rates
    steer the curve back to the later records. The band's share of the first record's scatter
    is that total, checked here against refits with the first record moved; counting only the
    rates' part (``g_theta G``, as the band did) makes it up to twice as wide as it is."""
    from ncdynamics.theories.alignment import confront
    from ncdynamics.theories.uncertainty import numeric_jacobian

    steps, state = confront._state(noisy_stream)
    steps, state = steps[:13], state[:13]  # a forecast origin's records
    search = (np.log(1e-6), np.log(10.0))
    at_rates = confront._params_at(2.0, 2.0)
    at = np.array([60.0, 90.0])

    def refit_prediction(y0):
        moved = state.copy()
        moved[0] = y0
        fit = confront._fit_log_rates(steps, moved, 2.0, 2.0, search)
        th = np.log([fit.params.inv_tau_h, fit.params.inv_tau_y])
        return simulate(y0, np.concatenate([steps[:1], at]), at_rates(th)).ys[1:, 0]

    theta = np.log(_fit_rates(steps, state, search, confront))
    parts = confront._rate_covariance_parts(steps, state, theta, at_rates)
    records_cov, gain, start_var = parts.records, parts.gain, parts.start
    joint = confront._joint_covariance(records_cov, gain, start_var)
    np.testing.assert_allclose(
        joint[:2, :2], confront._rate_covariance(steps, state, theta, at_rates)[0]
    )

    def predict(phi):
        return simulate(phi[2:], np.concatenate([steps[:1], at]), at_rates(phi[:2])).ys[1:, 0]

    phi = np.concatenate([theta, state[0]])
    g = numeric_jacobian(predict, phi)
    start_only = joint.copy()
    start_only[:2, :2] -= records_cov  # the first record's share of the joint covariance
    band_share = np.einsum("ij,jk,ik->i", g, start_only, g)
    total = numeric_jacobian(refit_prediction, state[0], rel_step=1e-4)
    refit_share = np.einsum("ij,jk,ik->i", total, start_var, total)
    np.testing.assert_allclose(band_share, refit_share, rtol=0.05)
    rates_only = np.einsum("ij,jk,ik->i", g[:, :2], gain @ start_var @ gain.T, g[:, :2])
    assert np.all(rates_only > 1.5 * refit_share)


def _fit_rates(steps, state, search, confront):
    fit = confront._fit_log_rates(steps, state, 2.0, 2.0, search)
    return [fit.params.inv_tau_h, fit.params.inv_tau_y]
