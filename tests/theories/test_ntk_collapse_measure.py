"""measure.py: LR grid (O13), the 99.9 % epoch, smoothing and the NC / non-NC selection rule."""

import numpy as np
import pytest

from ncdynamics.theories.ntk_collapse.measure import (
    first_epoch_reaching,
    lr_grid,
    select_nc_models,
    smooth,
)
from ncdynamics.theories.ntk_collapse.model import BlockParams

P = BlockParams(n_classes=3, n_per_class=3, n_features=6, kappa_d=3.0, kappa_c=1.0, kappa_n=0.2)


def test_lr_grid_matches_captions_o13():
    np.testing.assert_allclose(lr_grid(np.arange(30)), np.logspace(-4, 0.25, 30, endpoint=False))
    assert [round(float(v), 3) for v in lr_grid([19, 20, 21, 22])] == [0.049, 0.068, 0.094, 0.131]
    assert lr_grid(29) == pytest.approx(1.283, abs=1e-3)


def test_selection_rule_and_first_epoch():
    choice = select_nc_models([0.5, 0.1, 0.9, 0.05], [1.0, 1.0, 1.0, 0.5])
    assert (choice.nc, choice.non_nc) == (1, 2)
    assert choice.candidates == (0, 1, 2)
    fallback = select_nc_models([0.3, 0.2], [0.1, 0.2])
    assert (fallback.nc, fallback.non_nc) == (1, 0)
    assert first_epoch_reaching([0.5, 0.9995, 1.0]) == 2.0
    assert np.isnan(first_epoch_reaching([0.5, 0.9]))


def test_smooth_preserves_lines_and_short_series():
    x = np.linspace(0, 1, 30)
    np.testing.assert_allclose(smooth(2 * x + 1, window=9), 2 * x + 1, atol=1e-12)
    np.testing.assert_allclose(smooth(np.full(30, 3.0)), 3.0, atol=1e-12)  # even window 10
    np.testing.assert_array_equal(smooth([1.0, 2.0]), [1.0, 2.0])


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="finite"):
        select_nc_models([np.nan], [1.0])
