"""Calibration streams of the lesde confrontation, for :func:`~ncdynamics.theories.testing.
check_theory`.

True streams: class-mean logits (K = 3) whose margin projections follow the L-model's exact
reduction ([1] Sec. 3.2.2; erratum 3 of docs/theories/lesde.md) with decaying elasticities,
``alpha(t) = 0.3 (1+t)^-0.6`` and ``beta(t) = -0.1 (1+t)^-0.8`` per iteration ([1], (D.17)):
``log S = log S0 + (A - B)/K`` and ``log |b| = log b0 + (A + B/(K-1))/K`` with ``A``, ``B`` the
integrated rates. Records from iteration 10 to 400, geometrically spaced, with noise on ``log S``
and ``log |b|`` (2%, independent or AR(1)). Constant elasticities would make both lines in time,
which a random walk with drift extrapolates as well: the verdict is then ``not distinguished``,
rightly, so they are no test of the theory's own shape. The config is inside the regime: softmax
cross-entropy, plain full-batch gradient descent at a constant rate.

Generic streams: the same logits whose ``S`` and ``|b|`` go from the true first record's to
the true last record's along a generic curve (in log), with the same independent noise. A
logistic ``S``, say, is what a squared loss gives (margins that saturate at the targets).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import runs
from ..regime import PLAIN_GD_SETTINGS
from ..testing import Calibration, follow, generic_progress, noise_series
from .estimate import integrated_power_rate
from .model import d_vectors

K = 3
ALPHA0, BETA0, R_ALPHA, R_BETA = 0.3, -0.1, 0.6, 0.8
S0, B0 = 0.3, 0.05
STEPS = np.unique(np.round(np.geomspace(10, 400, 25)))
NOISE = 0.02
CONFIG = {
    "loss": "cross-entropy",
    **PLAIN_GD_SETTINGS,
    "lr": 0.1,
    "batch_size": 300,
    "n_iter": int(STEPS[-1]),
}


def _margins() -> np.ndarray:
    """``(S, |b|)`` of the L-model with power-law rates, one row per record."""
    t = STEPS.astype(float)
    a = ALPHA0 * integrated_power_rate(t, R_ALPHA)
    b = BETA0 * integrated_power_rate(t, R_BETA)
    total = S0 * np.exp((a - b) / K)
    spread = B0 * np.exp((a + b / (K - 1)) / K)
    return np.stack([total, spread], axis=1)


def _write(path: Path, margins: np.ndarray) -> None:
    """Class-mean logits ``X^k = s_k d_k`` with ``sum_k s_k = S`` and ``|s - mean s| = |b|``."""
    u = np.linspace(1.0, -1.0, K)
    u /= np.linalg.norm(u)  # a fixed unit direction that sums to zero
    s = margins[:, :1] / K + margins[:, 1:] * u[None]
    means = s[:, :, None] * d_vectors(K)[None]
    run = runs.create(path, config=CONFIG)
    for t, m in zip(STEPS, means, strict=True):
        run.save_array("class_means_logits", int(t), m)
    run.flush()


def true_stream(path: Path, rng: np.random.Generator, noise: str) -> None:
    """The L-model's margins with noise of kind ``noise`` on ``log S`` and ``log |b|``."""
    _write(path, _margins() * np.exp(NOISE * noise_series(rng, STEPS.size, noise, size=(2,))))


def generic_stream(path: Path, family: str, rng: np.random.Generator) -> None:
    """``S`` and ``|b|`` that follow the generic curve ``family`` between the true ends."""
    m = _margins()
    moved = follow(m[0], m[-1], generic_progress(family, STEPS.astype(float), rng), log=True)
    _write(path, moved * np.exp(NOISE * rng.standard_normal(moved.shape)))


CALIBRATION = Calibration(
    true_stream=true_stream,
    generic_stream=generic_stream,
    true_params={"alpha0": ALPHA0, "beta0": BETA0, "r_alpha": R_ALPHA, "r_beta": R_BETA},
    smoke=("lesde.fig1",),
)
