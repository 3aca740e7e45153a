"""Theorem 3.1 of [1]: with decaying local elasticity, features separate iff gamma = omega(1/t).

Monte Carlo on the l-model LE-SDE (K = 3) with gamma(t) proportional to (1 + t)^-r: for
each decay exponent r, the fraction of repetitions whose classes are pairwise separable at
t_end (:func:`~ncdynamics.theories.lesde.separation.theorem31_probability`). The theorem
puts the transition at r = 1: r < 1 separates, r > 1 does not. No training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ...claims import Part, claim
from ...experiment import RunWriter
from ..separation import theorem31_probability
from .plotting import separation_probability_figure

__all__ = ["Thm31Config", "run_thm31", "thm31_claim"]


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
    run.save_summary(
        {
            "r": rs.tolist(),
            "p_sep": probs,
            "claims": [thm31_claim(rs, probs_a, t_end=config.t_end)],
        }
    )


#: P(separable) at t_end read as "tends to 1" (r < 1) and "tends to 0" (r > 1).
HIGH, LOW = 0.95, 0.05


def thm31_claim(
    rs: NDArray[np.float64], probs: NDArray[np.float64], *, t_end: float
) -> dict[str, Any]:
    """The claim record of Theorem 3.1: one part per decay exponent r of gamma ~ (1+t)^-r,
    P(sep) >= 0.95 for r < 1 (gamma = omega(1/t)) and <= 0.05 for r > 1 (gamma = o(1/t)), at
    ``t_end``; r = 1 (the boundary, which the theorem leaves open) is not a part.

    Parameters
    ----------
    rs : ndarray of shape (n,)
    probs : ndarray of shape (n,)
        Fraction of repetitions pairwise separated at ``t_end``.
    t_end : float
    """
    parts = []
    for r, prob in zip(rs, probs, strict=True):
        if r < 1:
            parts.append(
                Part(
                    f"r = {r:g} < 1 (gamma = omega(1/t)): separable",
                    f"fraction of repetitions pairwise separated at t = {t_end:g} >= {HIGH}",
                    prob,
                    prob >= HIGH,
                )
            )
        elif r > 1:
            parts.append(
                Part(
                    f"r = {r:g} > 1 (gamma = o(1/t)): not separable",
                    f"fraction of repetitions pairwise separated at t = {t_end:g} <= {LOW}",
                    prob,
                    prob <= LOW,
                )
            )
    if not parts:
        raise ValueError(f"`rs` must hold a decay exponent other than 1; got {rs.tolist()}.")
    return claim(
        "For the LE-SDE with local elasticity (gamma(t) = min(alpha - beta, alpha + (K-1) beta) "
        "> 0) and a PSD H with positive diagonal, as t tends to infinity: if gamma(t) = "
        "omega(1/t) the features are separable with probability tending to 1; if gamma(t) = "
        "o(1/t) they are pairwise separable with probability tending to 0 (n growing at any "
        "rate). Tested on the l-model, K = 3, gamma proportional to (1+t)^-r.",
        "Thm 3.1, Sec. 3.1; App. C.2",
        parts,
    )
