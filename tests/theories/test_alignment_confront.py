"""The alignment confrontation fitted to records that the theory itself generated.

The stream here is made the way real runs are: it starts late (the probe records from step
20, not 0), its records are unevenly spaced, and it is cut while the transient is still
running, so a prediction is only right if the theory is integrated from the first record's
time and state.
"""

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.theories.alignment.confront import CONFRONTATION
from ncdynamics.theories.alignment.estimate import simulate
from ncdynamics.theories.alignment.model import AlignmentParams
from ncdynamics.theories.confrontation import Stream

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
    assert fit.params["inv_tau_h"] == pytest.approx(TRUE.inv_tau_h, rel=1e-4)
    assert fit.params["inv_tau_y"] == pytest.approx(TRUE.inv_tau_y, rel=1e-4)
    assert fit.fit_until == STEPS[-1]
    steps, a_fitted = fit.fitted["pair_distance"]
    np.testing.assert_array_equal(steps, STEPS)
    np.testing.assert_allclose(a_fitted, _truth(STEPS)[:, 0], rtol=1e-5)


def test_prediction_starts_from_the_first_record_not_from_step_zero(late_stream):
    # Integrating from t = 0 with the first record's state shifts the whole prediction by
    # 20 steps: at t = 60 it gives a(80) = 3.48 instead of a(60) = 3.07.
    fit = CONFRONTATION.fit(late_stream)
    at = np.array([10.0, 40.0, 60.0, 75.0, 120.0])
    pred = fit.predict(at)
    truth = _truth(at[1:])
    np.testing.assert_allclose(pred["pair_distance"][1:], truth[:, 0], rtol=1e-4)
    np.testing.assert_allclose(pred["pair_output_distance"][1:], truth[:, 1], rtol=1e-4)
    assert np.isnan(pred["pair_distance"][0])  # before the first record: no prediction
