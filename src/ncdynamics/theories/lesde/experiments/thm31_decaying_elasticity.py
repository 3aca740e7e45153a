"""Theorem 3.1 of [1]: with decaying local elasticity, features separate iff gamma = omega(1/t).

Monte Carlo on the l-model LE-SDE (K = 3) with gamma(t) proportional to (1 + t)^-r: for
each decay exponent r, the fraction of repetitions whose classes are pairwise separable at
t_end (:func:`~ncdynamics.theories.lesde.separation.theorem31_probability`). The theorem
puts the transition at r = 1: r < 1 separates, r > 1 does not. No training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ...experiment import RunWriter
from ..separation import theorem31_probability
from .claims import claim
from .plotting import separation_probability_figure

__all__ = ["Thm31Config", "run_thm31"]


@dataclass(frozen=True)
class Thm31Config:
    rs: tuple[float, ...] = (0.25, 0.5, 0.75, 1.25, 1.5, 2.0)
    t_end: float = 400.0
    n: int = 100
    h: float = 0.05
    n_reps: int = 50
    method: Literal["lp", "meandiff"] = "lp"


def run_thm31(config: Thm31Config, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Theorem 3.1: P(pairwise separation) against the decay exponent r of gamma ~ t^-r."""
    rng = np.random.default_rng(seed)
    probs = []
    for r in config.rs:
        est = theorem31_probability(
            r,
            t_end=config.t_end,
            rng=rng,
            n=config.n,
            h=config.h,
            n_reps=config.n_reps,
            method=config.method,
        )
        probs.append(est.probability)
        run.log(len(probs) - 1, {"r": r, "p_sep": est.probability})
    run.flush()
    rs, probs_a = np.asarray(config.rs), np.asarray(probs)
    run.save_figure(
        separation_probability_figure(
            rs,
            probs_a,
            r"decay exponent $r$ of $\gamma$",
            "Theorem 3.1: l-model LE-SDE, K=3",
            threshold=1.0,
        ),
        "thm31",
    )
    fast, slow = rs <= 0.5, rs >= 1.5
    run.save_summary(
        {
            "r": rs.tolist(),
            "p_sep": probs,
            "claims": [
                claim(
                    "gamma = omega(1/t) (r <= 0.5): separable with probability >= 0.95",
                    probs_a[fast].tolist(),
                    np.all(probs_a[fast] >= 0.95),
                ),
                claim(
                    "gamma = o(1/t) (r >= 1.5): separable with probability <= 0.05",
                    probs_a[slow].tolist(),
                    np.all(probs_a[slow] <= 0.05),
                ),
            ],
        }
    )
