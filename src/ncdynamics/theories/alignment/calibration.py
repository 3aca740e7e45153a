"""Calibration streams of the alignment confrontation, for :func:`~ncdynamics.theories.testing.
check_theory`.

True streams: the scalars ``pair_a``, ``pair_b``, ``pair_w`` of system (7) of [1] with rates
``1/tau_h = 0.05``, ``1/tau_y = 0.02`` (``X = Y = 2``) from ``(a, b, w) = (1, 0.01, 0)`` at
step 0, recorded from step 20 to 83 at gaps growing from 1 to 4 (late, uneven and cut before
the fixed point), with additive noise of 1% of each variable's largest value (independent or
AR(1)). The config is inside the regime: squared error, plain gradient descent, a constant
rate.

Generic streams: ``a``, ``b`` and ``w`` that go from the true first record's values to the
true last record's along a generic curve (``a`` and ``b`` in log, ``w`` linearly), with the
same independent noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import runs
from ..regime import PLAIN_GD_SETTINGS
from ..testing import Calibration, follow, generic_progress, noise_series
from .estimate import simulate
from .model import AlignmentParams

TRUE = AlignmentParams(0.05, 0.02, X=2.0, Y=2.0)
START = np.array([1.0, 0.01, 0.0])
STEPS = 20.0 + np.cumsum(np.concatenate([[0.0], np.repeat([1.0, 2.0, 3.0, 4.0], 6)]))
NOISE = 0.01
CONFIG = {
    "loss": "mse",
    **PLAIN_GD_SETTINGS,
    "lr": 0.02,
    "batch_size": 2,
}


def _truth() -> np.ndarray:
    return np.asarray(simulate(START, np.concatenate([[0.0], STEPS]), TRUE).ys[1:])


def _write(path: Path, state: np.ndarray) -> None:
    run = runs.create(path, config=CONFIG)
    for t, (a, b, w) in zip(STEPS, state, strict=True):
        run.log(
            int(t),
            {"pair_a": a, "pair_b": b, "pair_w": w, "pair_X": TRUE.X, "pair_Y": TRUE.Y},
        )
    run.flush()


def _noise(state: np.ndarray, z: np.ndarray) -> np.ndarray:
    return np.asarray(state + NOISE * np.max(np.abs(state), axis=0) * z)


def true_stream(path: Path, rng: np.random.Generator, noise: str) -> None:
    """System (7) with noise of kind ``noise`` on each variable."""
    truth = _truth()
    _write(path, _noise(truth, noise_series(rng, STEPS.size, noise, size=(3,))))


def generic_stream(path: Path, family: str, rng: np.random.Generator) -> None:
    """``a``, ``b``, ``w`` that follow the generic curve ``family`` between the true ends."""
    truth = _truth()
    h = generic_progress(family, STEPS, rng)
    ab = follow(truth[0, :2], truth[-1, :2], h, log=True)
    w = follow(truth[0, 2:], truth[-1, 2:], h, log=False)
    state = np.concatenate([ab, w], axis=1)
    _write(path, _noise(state, rng.standard_normal(state.shape)))


CALIBRATION = Calibration(
    true_stream=true_stream,
    generic_stream=generic_stream,
    true_params={"inv_tau_h": TRUE.inv_tau_h, "inv_tau_y": TRUE.inv_tau_y},
    smoke=("alignment.universality",),
)
