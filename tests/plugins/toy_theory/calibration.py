"""The toy theory's calibration streams, for ``check_theory``: exact decays, and generic
curves from the same first to the same last loss."""

from pathlib import Path

import numpy as np

from ncdynamics import runs
from ncdynamics.theories.testing import Calibration, follow, generic_progress, noise_series

RATE = 0.1
STEPS = np.arange(0, 40, 2)
NOISE = 0.02  # on log L


def _write(path: Path, loss: np.ndarray) -> None:
    run = runs.create(path, config={"optimizer": "sgd", "lr": 0.1})
    for step, value in zip(STEPS, loss, strict=True):
        run.log(int(step), loss=float(value))
    run.flush()


def true_stream(path: Path, rng: np.random.Generator, noise: str) -> None:
    """``L = exp(-r t)`` with noise of kind ``noise`` on ``log L``."""
    _write(path, np.exp(-RATE * STEPS + NOISE * noise_series(rng, STEPS.size, noise)))


def generic_stream(path: Path, family: str, rng: np.random.Generator) -> None:
    """A loss from 1 to ``exp(-r T)`` along the generic curve ``family``, in log."""
    h = generic_progress(family, STEPS.astype(float), rng)
    loss = follow(1.0, np.exp(-RATE * STEPS[-1]), h)
    _write(path, loss * np.exp(NOISE * rng.standard_normal(STEPS.size)))


CALIBRATION = Calibration(
    true_stream=true_stream, generic_stream=generic_stream, true_params={"rate": RATE}
)
