"""Calibration streams of the ntk_collapse confrontation, for :func:`~ncdynamics.theories.
testing.check_theory`.

True streams: ``ntk_invariant`` records whose within-class scatter ``S_W = m S`` follows the
end-of-training flow (44), ``dS/du = -(E~ S + S E~) - 2 m S^2``, with flow time
``tau = 0.02`` per step from step 0, for a fixed invariant ``E~`` (6 features, m = 4 samples
in each of 3 classes); the recorded kernel ``W^T W = (E~ + S_W)/mu_s`` is the one that
carries that invariant. Records from step 20 to 130 at uneven steps, with noise on
``log S_W`` (0.5%, one factor per record, independent or AR(1)). The config is inside the
regime: squared error, full-batch gradient descent at a constant rate, train accuracy 1.

Generic streams: the same records whose scatter goes from the true first record's to the
true last record's along a generic curve (in log, its shape kept), with the recorded kernel
written as ``W^T W = (E~ + S_W)/mu_s`` from that scatter, so that the invariant ``E~`` stays
the true flow's at every record (Theorem 5.1 holds) while the scatter does not follow the flow
(44): a decay the kernel does not drive. Carried from the first record by the recorded kernel,
the flow misses them by 0.05-0.61 in log (RMS), against 0.003-0.006 on the true streams
(docs/theories/ntk_collapse.md, "Why a trajectory").
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
from scipy.integrate import solve_ivp

from ... import runs
from ..regime import PLAIN_GD_SETTINGS
from ..testing import Calibration, follow, generic_progress, noise_series

N_FEATURES, M, N_CLASSES, MU_S = 6, 4, 3, 0.8
KAPPAS = (1.0, 0.2, 0.1)  # kappa_d, kappa_c = kappa_d - mu_s, kappa_n: the block structure
TAU = 0.02
STEPS = np.array([20, 22, 27, 29, 35, 38, 44, 52, 55, 63, 70, 84, 99, 130])
NOISE = 0.005
CONFIG = {
    "loss": "mse",
    **PLAIN_GD_SETTINGS,
    "lr": 0.1,
    "batch_size": M * N_CLASSES,
}


def _start() -> tuple[np.ndarray, np.ndarray]:
    """The invariant ``E~`` and the within-class Gram ``S(0)`` (rank 3), fixed."""
    rng = np.random.default_rng(20261129)
    a = rng.standard_normal((N_FEATURES, N_FEATURES))
    h = rng.standard_normal((N_FEATURES, 3))
    return (a + a.T) / 2 + np.eye(N_FEATURES), h @ h.T


def _flow(e_tilde: np.ndarray, s0: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``S(u)`` of the flow (44), one matrix per flow time."""

    def rhs(_: float, y: np.ndarray) -> np.ndarray:
        s = y.reshape(N_FEATURES, N_FEATURES)
        return np.asarray((-(e_tilde @ s + s @ e_tilde) - 2 * M * s @ s).ravel())

    sol = solve_ivp(rhs, (0, u[-1]), s0.ravel(), t_eval=u, rtol=1e-10, atol=1e-12)
    return np.asarray(sol.y.T.reshape(-1, N_FEATURES, N_FEATURES))


def _write(path: Path, scatter: np.ndarray, e_tilde: np.ndarray, rng: np.random.Generator) -> None:
    run = runs.create(path, config=CONFIG)
    labels = np.repeat(np.arange(N_CLASSES), M)
    for t, s_w in zip(STEPS, scatter, strict=True):
        run.save_array("invariant_within_scatter", int(t), s_w)
        run.save_array("invariant_gram_w", int(t), (e_tilde + s_w) / MU_S)  # E~ = mu_s G - S_W
        run.save_array("invariant_kappas", int(t), np.array(KAPPAS))
        run.save_array(
            "invariant_class_means", int(t), rng.standard_normal((N_CLASSES, N_FEATURES))
        )
        run.save_array("ntk_labels", int(t), labels)
        run.log(int(t), {"train/accuracy": 1.0})
    run.flush()


def _true_scatter() -> tuple[np.ndarray, np.ndarray]:
    e_tilde, s0 = _start()
    return M * _flow(e_tilde, s0, TAU * STEPS.astype(float)), e_tilde


def true_stream(path: Path, rng: np.random.Generator, noise: str) -> None:
    """The flow (44) with noise of kind ``noise`` on ``log S_W``."""
    scatter, e_tilde = _true_scatter()
    factor = np.exp(NOISE * noise_series(rng, STEPS.size, noise))
    _write(path, scatter * factor[:, None, None], e_tilde, rng)


def generic_stream(path: Path, family: str, rng: np.random.Generator) -> None:
    """A scatter whose trace follows the generic curve ``family`` between the true ends."""
    scatter, e_tilde = _true_scatter()
    first, last = np.trace(scatter[0]), np.trace(scatter[-1])
    trace = follow(first, last, generic_progress(family, STEPS.astype(float), rng), log=True)
    trace = trace * np.exp(NOISE * rng.standard_normal(trace.shape))
    _write(path, scatter[0][None] * (trace / first)[:, None, None], e_tilde, rng)


CALIBRATION = Calibration(
    true_stream=true_stream,
    generic_stream=generic_stream,
    true_params={"flow_time_per_step": TAU},
    smoke=("ntk_collapse.fig1",),
)
