"""Theorem 2.1 of [1]: binary features separate with probability -> 1 iff alpha > beta.

Monte Carlo on the binary LE-SDE (2) (K = 2, p = 1, constant rates) through the exact
class-mean Euler--Maruyama scheme: for each alpha at fixed beta, the fraction of
repetitions whose two classes are separated at t_end
(:func:`~ncdynamics.theories.lesde.separation.theorem21_probability`). No training.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...experiment import RunWriter
from ..separation import theorem21_probability
from .claims import claim
from .plotting import separation_probability_figure

__all__ = ["Thm21Config", "run_thm21"]


@dataclass(frozen=True)
class Thm21Config:
    beta: float = -0.2
    alphas: tuple[float, ...] = (-0.4, -0.2, 0.0, 0.2, 0.4)
    t_end: float = 60.0
    n: int = 200
    sigma: float = 1.0
    h: float = 0.01
    n_reps: int = 200


def run_thm21(config: Thm21Config, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Theorem 2.1: P(binary separation) against alpha - beta (binary LE-SDE (2))."""
    rng = np.random.default_rng(seed)
    probs = []
    for a in config.alphas:
        est = theorem21_probability(
            a,
            config.beta,
            t_end=config.t_end,
            rng=rng,
            n=config.n,
            sigma=config.sigma,
            h=config.h,
            n_reps=config.n_reps,
        )
        probs.append(est.probability)
        run.log(len(probs) - 1, {"alpha_minus_beta": a - config.beta, "p_sep": est.probability})
    run.flush()
    gap = np.asarray(config.alphas) - config.beta
    probs_a = np.asarray(probs)
    run.save_figure(
        separation_probability_figure(
            gap, probs_a, r"$\alpha-\beta$", "Theorem 2.1: binary LE-SDE", threshold=0.0
        ),
        "thm21",
    )
    strong, none = gap >= 0.4 - 1e-12, gap <= 1e-12
    run.save_summary(
        {
            "alpha_minus_beta": gap.tolist(),
            "p_sep": probs,
            "claims": [
                claim(
                    "alpha - beta >= 0.4: separable with probability >= 0.95",
                    probs_a[strong].tolist(),
                    np.all(probs_a[strong] >= 0.95),
                ),
                claim(
                    "alpha <= beta: separable with probability <= 0.05",
                    probs_a[none].tolist(),
                    np.all(probs_a[none] <= 0.05),
                ),
            ],
        }
    )
