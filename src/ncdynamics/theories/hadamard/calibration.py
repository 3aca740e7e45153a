"""Calibration streams of the Hadamard confrontation, for :func:`~ncdynamics.theories.testing.
check_theory`.

True streams: class-mean logits (K = 4 outputs x classes) whose centred singular values follow
the reduced ODE (9) with time scale ``c = 0.05`` per step from ``a(0) = (0.05, 0.03, 0.02)``,
recorded from step 30 to 400 at uneven steps, with noise on the log of each singular value
(1%, independent or AR(1)). The config is inside the regime: cross-entropy, plain full-batch
gradient descent at the constant rate ``eta`` for which the theory predicts ``c``
(``c = 2 sqrt(n) eta / B`` per epoch with ``n = 1`` sample per class and ``B = K``).

Generic streams: the same logits, on the Hadamard subspace, whose singular values go from the
true first record's to the true last record's along a generic curve (each in log), with the
same independent noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ... import runs
from ..regime import PLAIN_GD_SETTINGS
from ..testing import Calibration, follow, generic_progress, noise_series
from .metrics import reduced_basis
from .model import solve_reduced

K = 4
TIME_SCALE = 0.05
A0 = np.array([0.05, 0.03, 0.02])
STEPS = np.array([30, 33, 41, 47, 60, 66, 83, 101, 118, 150, 171, 230, 260, 330, 400])
NOISE = 0.01
CONFIG = {
    "loss": "cross-entropy",
    **PLAIN_GD_SETTINGS,
    "lr": 2 * TIME_SCALE,  # c = 2 sqrt(n) eta / B with n = 1, B = K: eta = K c / 2
    "batch_size": K,
    "samples_per_class": 1,
    "epochs": int(STEPS[-1]),
}


def _singular_values() -> np.ndarray:
    a = solve_reduced(A0, TIME_SCALE * STEPS.astype(float), n_classes=K, rtol=1e-11, atol=1e-13)
    return np.asarray(K * a.ys)  # the singular values of K a (n = 1), one row per record


def _write(path: Path, sv: np.ndarray) -> None:
    u, v = reduced_basis(K)
    run = runs.create(path, config=CONFIG)
    for t, s in zip(STEPS, sv, strict=True):
        run.save_array("class_means_logits", int(t), (u @ np.diag(s) @ v.T).T)
    run.flush()


def true_stream(path: Path, rng: np.random.Generator, noise: str) -> None:
    """The reduced ODE's logits with noise of kind ``noise`` on each log singular value."""
    sv = _singular_values()
    _write(path, sv * np.exp(NOISE * noise_series(rng, STEPS.size, noise, size=(K - 1,))))


def generic_stream(path: Path, family: str, rng: np.random.Generator) -> None:
    """Singular values that follow the generic curve ``family`` between the true ends."""
    sv = _singular_values()
    h = generic_progress(family, STEPS.astype(float), rng)
    moved = follow(sv[0], sv[-1], h, log=True)
    _write(path, moved * np.exp(NOISE * rng.standard_normal(moved.shape)))


CALIBRATION = Calibration(
    true_stream=true_stream,
    generic_stream=generic_stream,
    true_params={"time_scale": TIME_SCALE},
    smoke=("hadamard.fig2",),
    quick_overrides={"hadamard.fig2": {"n_realizations": 1, "fit_ode": False}},
)
