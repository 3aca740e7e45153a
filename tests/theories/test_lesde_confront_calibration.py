"""The lesde intervals on its own calibration streams (issue 28, item 3).

The streams are those of ``check_theory`` (``ncdynamics.theories.lesde.calibration``): the
L-model's margins with decaying rates, 25 records from step 10 to 400, 2% noise on ``log S``
and ``log |b|`` that is independent from record to record or AR(1) with rho = 0.9. The
seeds are the calibration kit's (stream ``i`` uses ``default_rng([i, 1])``), 40 of them: with
10 or 20, the standard deviation over seeds is itself uncertain by 24% or 16% (seeds 0-9 give
a spread / standard error of 0.53-0.68 under independent noise where 40 seeds give 0.72-0.74).
"""

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.theories.confrontation import Stream
from ncdynamics.theories.lesde.calibration import CALIBRATION
from ncdynamics.theories.lesde.confront import CONFRONTATION

N_SEEDS = 40
Z95 = 1.959963984540054


@pytest.fixture(scope="module")
def fits(tmp_path_factory):
    root = tmp_path_factory.mktemp("lesde_calibration")
    out = {}
    for noise in ("independent", "ar1"):
        out[noise] = []
        for seed in range(N_SEEDS):
            path = root / f"{noise}-{seed}"
            CALIBRATION.true_stream(path, np.random.default_rng([seed, 1]), noise)
            out[noise].append(CONFRONTATION.fit(Stream(runs.open(path))))
    return out


def _coverage_and_spread(fits, name):
    true = CALIBRATION.true_params[name]
    values = np.array([f.params[name].value for f in fits])
    low, high = np.array([f.intervals[name] for f in fits]).T
    coverage = float(np.mean((low <= true) & (true <= high)))
    spread = float(np.std(values, ddof=1) / np.median((high - low) / (2 * Z95)))
    return coverage, spread


@pytest.mark.parametrize("noise", ["independent", "ar1"])
def test_intervals_cover_the_truth_and_are_not_over_wide(fits, noise):
    assert all(f.shown.predictions["rate_law"] == "power-law" for f in fits[noise])
    numbers = {n: _coverage_and_spread(fits[noise], n) for n in CALIBRATION.true_params}
    coverage = {name: c for name, (c, _) in numbers.items()}
    # 95% intervals: each holds the truth at least 36 times in 40 (issue 28's target). beta0,
    # the rate at step 0 extrapolated from records at 10-400 through the power law, has a
    # multiplicative error (r_beta's error times log(1 + t)); its interval, once symmetric
    # about the value, held the truth only 33 times under AR(1) noise, every miss an estimate
    # near zero with a narrow interval. Before the REML intervals the four held it 26-28 times.
    assert min(coverage.values()) >= 0.9, (noise, numbers)
    # the spread over seeds / reported standard error of each parameter: near 1 for honest
    # intervals, below 1 when they are too wide, above when they are too narrow
    for name, (_, spread) in numbers.items():
        assert 0.7 <= spread <= 1.4, (noise, name, numbers)


def test_intervals_widen_with_the_noise_correlation_as_the_spread_does(fits):
    """The residuals of a six-parameter fit hide much of a slow noise's correlation (their
    lag-one autocorrelation is about half of rho = 0.9): the intervals must still widen from
    independent to AR(1) noise about as much as the fitted values spread more. Before the
    REML intervals they narrowed (alpha0: widths x0.81 while the spread grew x1.56)."""
    followed = {}
    for name in CALIBRATION.true_params:
        width = {
            noise: np.median([np.diff(f.intervals[name])[0] for f in fits[noise]]) for noise in fits
        }
        spread = {
            noise: np.std([f.params[name].value for f in fits[noise]], ddof=1) for noise in fits
        }
        followed[name] = (width["ar1"] / width["independent"]) / (
            spread["ar1"] / spread["independent"]
        )
    # 1 when the widths follow the spread exactly; a ratio of two 40-seed standard deviations
    # is itself uncertain by ~16% (beta0, the least determined, follows least: 0.70)
    assert np.median(list(followed.values())) >= 0.8, followed
