"""The regime the alignment confrontation assumes, checked on a run's settings and records."""

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.theories.alignment.confront import CONFRONTATION, rate_bounds
from ncdynamics.theories.confrontation import Stream


def _stream(tmp_path, config, prefix="", lr=None):
    run = runs.create(tmp_path / "r", config=config)
    for k, t in enumerate((0, 5, 10)):
        values = {f"{prefix}pair_a": 1.0, f"{prefix}pair_b": 0.1, f"{prefix}pair_w": 0.0}
        if lr is not None:
            values[f"{prefix}lr"] = lr[k]
        run.log(t, values)
    run.flush()
    return Stream(run, prefix)


@pytest.mark.parametrize(
    ("config", "prefix", "fragment"),
    [
        ({"loss": "cross-entropy"}, "", "loss 'cross-entropy'"),
        ({"loss": "nll"}, "", "loss 'nll'"),
        ({"streams": {"ce": {"loss": "cross-entropy"}}, "loss": "mse"}, "ce/", "cross-entropy"),
        ({"optimizer": "adam"}, "", "optimizer 'adam'"),
        ({"experiment": "alignment.adam"}, "adam.", "optimizer 'adam'"),
        ({"milestones": [10, 20], "gamma": 0.1}, "", "learning-rate drops at [10, 20]"),
    ],
)
def test_stream_outside_the_regime_is_named(tmp_path, config, prefix, fragment):
    reasons = CONFRONTATION.out_of_regime(_stream(tmp_path, config, prefix))
    assert len(reasons) == 1 and fragment in reasons[0]


@pytest.mark.parametrize(
    ("config", "prefix"),
    [
        ({}, ""),  # nothing recorded: nothing to check
        ({"loss": "mse", "optimizer": "sgd"}, ""),
        ({"loss": "half_mse"}, ""),
        ({"streams": {"mse": {"loss": "mse"}}, "loss": "cross-entropy"}, "mse/"),
        ({"experiment": "alignment.adam"}, "sgd."),
        ({"milestones": [10], "gamma": 1.0}, ""),
    ],
)
def test_stream_inside_the_regime_passes(tmp_path, config, prefix):
    assert CONFRONTATION.out_of_regime(_stream(tmp_path, config, prefix)) == []


def test_recorded_learning_rate_decides_over_the_config(tmp_path):
    changing = _stream(tmp_path, {}, "m/", lr=[0.1, 0.1, 0.01])
    (reason,) = CONFRONTATION.out_of_regime(changing)
    assert "from 0.1 to 0.01 at step 10" in reason
    constant = _stream(tmp_path / "c", {"milestones": [5]}, "m/", lr=[0.1, 0.1, 0.1])
    assert CONFRONTATION.out_of_regime(constant) == []


def test_rate_bounds_follow_the_time_span_gaps_and_scales():
    steps = np.array([10.0, 12.0, 20.0, 110.0])
    state = np.array([[0.5, 1e-6, 0.0], [0.5, 1e-5, 0.0], [0.6, 0.3, -0.1], [0.7, 4.0, 0.0]])
    low, high = rate_bounds(steps, state, X=0.25, Y=1.0)
    assert low == pytest.approx(1e-6 / (100.0 * 4.0))  # span 100, largest scale b = 4
    assert high == pytest.approx(1e4 / (2.0 * 0.25))  # smallest gap 2, smaller of X, Y
    # a rate at the bounds' edges of exp(+-35) stays there
    low, high = rate_bounds(np.array([0.0, 1e-20, 1e20]), state[:3], X=1.0, Y=0.0)
    assert low == pytest.approx(np.exp(-35.0)) and high == pytest.approx(np.exp(35.0))
