"""The bounded rate search of :func:`fit_rates` (``log_bounds``), used by the confrontation."""

import numpy as np
import pytest

from ncdynamics.theories.alignment.estimate import fit_rates, simulate
from ncdynamics.theories.alignment.model import AlignmentParams

TRUE = AlignmentParams(0.05, 0.02, X=2.0, Y=2.0)
TS = np.linspace(0.0, 40.0, 41)
OBS = simulate(np.array([1.0, 0.01, 0.0]), TS, TRUE).ys


def test_bounded_search_recovers_rates_inside_the_bounds():
    box = (np.log(1e-4), np.log(1.0))
    fit = fit_rates(TS, OBS, X=2.0, Y=2.0, log_bounds=(box, box))
    assert fit.params.inv_tau_h == pytest.approx(TRUE.inv_tau_h, rel=1e-4)
    assert fit.params.inv_tau_y == pytest.approx(TRUE.inv_tau_y, rel=1e-4)


def test_bounded_search_stays_on_a_bound_the_data_push_against():
    # the decoder rate may not exceed 0.01, half its true value: the fit ends on the bound
    fit = fit_rates(
        TS,
        OBS,
        X=2.0,
        Y=2.0,
        log_bounds=((np.log(1e-4), np.log(1.0)), (np.log(1e-4), np.log(0.01))),
    )
    assert fit.params.inv_tau_y == pytest.approx(0.01, rel=1e-3)


@pytest.mark.parametrize(
    "bounds",
    [((0.0, -1.0), (-5.0, 0.0)), ((-5.0, 0.0), (-np.inf, 0.0)), ((-5.0, 0.0), (1.0, 1.0))],
)
def test_bad_bounds_are_rejected(bounds):
    with pytest.raises(ValueError, match=r"`log_bounds` must be \(\(low_h, high_h\)"):
        fit_rates(TS, OBS, X=2.0, Y=2.0, log_bounds=bounds)
