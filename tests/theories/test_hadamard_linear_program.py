"""The max-min normalised margin linear program of App. C (Figure 3)."""

import numpy as np
import pytest

from ncdynamics.theories.hadamard.linear_program import max_min_margin
from ncdynamics.theories.hadamard.structure import psi_matrix


def test_appendix_c_linear_program():
    lp = max_min_margin(8, support=[0, 1, 2, 3])
    assert lp.success
    np.testing.assert_allclose(lp.ahat, [0.2, 0.2, 0.2, 0.4, 0, 0, 0], atol=1e-8)
    assert lp.value == pytest.approx(0.8, abs=1e-8)
    uniform = np.array([1, 1, 1, 1, 0, 0, 0]) / 4
    assert (psi_matrix(8) @ uniform).min() == pytest.approx(0.5)
    for K in (4, 8, 16):
        full = max_min_margin(K)
        assert full.value == pytest.approx(K / (K - 1), abs=1e-8)
        np.testing.assert_allclose(full.ahat, 1 / (K - 1), atol=1e-8)
