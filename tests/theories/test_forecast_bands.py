"""Forecast bands of the built-in theories, calibrated under correlated noise (issue 28, item 3).

A 95% band for the records after a forecast origin must hold the record noise (its marginal
variance, which a fit on correlated records underestimates from its residuals) and the
parameter uncertainty carried to the horizon. Measured here on the calibration kit's true
streams (:meth:`Calibration.true_stream`) under independent and AR(1) (rho = 0.9) noise: the
share of post-origin records inside the theory's band, averaged over origins and observables,
must be at least 0.90 (how wide the bands are is measured by benchmarks/calibration_table.py).
The quick configuration checks the two theories whose bands were built anew, on two
streams per noise; the ``slow`` variant checks every confronting theory on six.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ncdynamics import theories
from ncdynamics.experiments.forecast import forecast
from ncdynamics.theories.testing import NOISE_KINDS, _resolve_calibration

#: Least mean coverage of the 95% forecast bands on true streams (issue 28, item 3).
COVERAGE_MIN = 0.90


def band_coverage(name: str, noise: str, n: int, root) -> list[float]:
    """Coverage of the theory's band at every origin and observable of ``n`` true streams."""
    cal = _resolve_calibration(theories.get(name))
    assert cal is not None
    out = []
    for i in range(n):
        path = root / f"{name}-{noise}-{i}"
        cal.true_stream(path, np.random.default_rng([i, 1]), noise)
        for entry in forecast(path):
            if entry.theory != name:
                continue
            for row in entry.scores:
                if str(row["method"]).startswith("theory") and not math.isnan(row["coverage"]):
                    out.append(float(row["coverage"]))
    return out


def _assert_calibrated(name: str, noise: str, n: int, root) -> None:
    cov = band_coverage(name, noise, n, root)
    assert cov, f"{name} {noise}: no band was scored"
    mean = float(np.mean(cov))
    assert mean >= COVERAGE_MIN, (
        f"{name} under {noise} noise: 95% bands hold {mean:.3f} of later records "
        f"(< {COVERAGE_MIN}) over {len(cov)} origin-observables"
    )


@pytest.mark.parametrize("noise", NOISE_KINDS)
@pytest.mark.parametrize("name", ["ntk_collapse", "hadamard"])
def test_forecast_bands_cover_later_records(name, noise, tmp_path):
    _assert_calibrated(name, noise, 2, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("noise", NOISE_KINDS)
@pytest.mark.parametrize("name", ["alignment", "hadamard", "lesde", "ntk_collapse"])
def test_forecast_bands_cover_later_records_six_streams(name, noise, tmp_path):
    _assert_calibrated(name, noise, 6, tmp_path)
