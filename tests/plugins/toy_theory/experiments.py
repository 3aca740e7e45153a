"""The toy theory's one experiment: integrate the decay and record the loss."""

from dataclasses import dataclass

import numpy as np

from ncdynamics.theories import ExperimentSpec, RunWriter
from ncdynamics.theories.integrate import solve_ode

from .model import DecayParams, drift


@dataclass(frozen=True)
class DecayConfig:
    rate: float = 0.1
    n_steps: int = 50


def run_decay(config: DecayConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Record ``loss`` at every step of the exact decay from L0 = 1."""
    steps = np.arange(config.n_steps, dtype=np.float64)
    traj = solve_ode(drift, np.ones(1), steps, DecayParams(config.rate))
    for step, loss in zip(steps, traj.ys[:, 0], strict=True):
        run.log(int(step), loss=float(loss))
    run.flush()
    run.save_summary({"final_loss": float(traj.ys[-1, 0])})


EXPERIMENTS = (
    ExperimentSpec(
        name="toy.decay",
        theory="toy",
        summary="Exponential decay of the loss, integrated",
        config=DecayConfig,
        presets={"smoke": {"n_steps": 20}, "cpu": {}, "paper": {"n_steps": 500}},
        run=run_decay,
    ),
)
