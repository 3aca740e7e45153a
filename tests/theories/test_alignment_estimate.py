"""Oracle O14 (rate-fit recovery) and the loss-curve fit of the alignment theory."""

import warnings

import numpy as np
import pytest

from ncdynamics.theories.alignment import closed_form as cf
from ncdynamics.theories.alignment.estimate import fit_loss, fit_output_rate, fit_rates, simulate
from ncdynamics.theories.alignment.model import AlignmentParams

TRUE = AlignmentParams(1e-3, 1e-2, 0.25, 1.0)
S0 = 9e-5
Y0 = np.array([6e-4, S0**2, S0**2 - S0 * 1.0])
TS = np.arange(6001.0)


@pytest.fixture(scope="module")
def synthetic():
    traj = simulate(Y0, TS, TRUE)
    assert traj.success
    return traj.ys


def test_fit_recovers_rates_without_noise(synthetic):
    fit = fit_rates(TS, synthetic, X=TRUE.X, Y=TRUE.Y)
    assert fit.success
    np.testing.assert_allclose(
        [fit.params.inv_tau_h, fit.params.inv_tau_y], [TRUE.inv_tau_h, TRUE.inv_tau_y], rtol=1e-2
    )
    assert fit.loss < 1e-6
    assert fit.loss == pytest.approx(fit_loss(TS, synthetic, fit.extra["trajectory"]), rel=1e-6)


def test_fit_recovers_rates_with_multiplicative_noise(synthetic, rng):
    noisy = synthetic * (1 + 0.01 * rng.standard_normal(synthetic.shape))
    noisy[0] = synthetic[0]
    fit = fit_rates(TS, noisy, X=TRUE.X, Y=TRUE.Y)
    np.testing.assert_allclose(
        [fit.params.inv_tau_h, fit.params.inv_tau_y], [TRUE.inv_tau_h, TRUE.inv_tau_y], rtol=5e-2
    )


def test_variant_fits_worse_on_eq7_data(synthetic):
    ours = fit_rates(TS, synthetic, X=TRUE.X, Y=TRUE.Y)
    other = fit_rates(TS, synthetic, X=TRUE.X, Y=TRUE.Y, variant="square")
    assert other.loss > 100 * max(ours.loss, 1e-9)


def test_output_rate_fit_recovers_rate(synthetic):
    ybar0 = np.array([0.1])
    L = cf.loss_curve(TS, synthetic[:, 1], synthetic[:, 2], ybar0, [0.6], [1.6], 3e-3)
    fit = fit_output_rate(TS, L, synthetic[:, 1], synthetic[:, 2], ybar0=ybar0, y1=[0.6], y2=[1.6])
    assert fit.params == pytest.approx(3e-3, rel=1e-4)


def test_trapezoid_and_sum_agree_on_uniform_grid_up_to_end_halves(synthetic):
    th = synthetic * 1.01
    s = fit_loss(TS, synthetic, th)
    t = fit_loss(TS, synthetic, th, quadrature="trapezoid")
    ends = 0.5 * np.sum((synthetic[[0, -1]] - th[[0, -1]]) ** 2)
    assert s - t == pytest.approx(ends, rel=1e-9)


@pytest.mark.parametrize(
    ("kwargs", "exc", "match"),
    [
        ({"observed": np.zeros((10, 2))}, ValueError, "observed"),
        ({"X": -1.0}, ValueError, "`X`"),
        ({"variant": "nope"}, ValueError, "variant"),
        ({"starts": ()}, ValueError, "starts"),
        ({"quadrature": "simpson"}, ValueError, "quadrature"),
    ],
)
def test_fit_rejects_bad_input(kwargs, exc, match):
    base = {"observed": np.tile(Y0, (10, 1)), "X": 0.25, "Y": 1.0}
    base.update(kwargs)
    obs = base.pop("observed")
    with pytest.raises(exc, match=match):
        fit_rates(np.arange(10.0), obs, **base)


def test_fit_flags_nan_trajectory():
    obs = np.tile(Y0, (10, 1))
    obs[3, 1] = np.nan
    with warnings.catch_warnings(), pytest.raises(ValueError, match="finite"):
        fit_rates(np.arange(10.0), obs, X=0.25, Y=1.0)
