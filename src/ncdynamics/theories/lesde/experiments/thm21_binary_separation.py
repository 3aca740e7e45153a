"""Theorem 2.1 of [1]: binary features separate with probability -> 1 iff alpha > beta.

Monte Carlo on the binary LE-SDE (2) (K = 2, p = 1, constant rates) through the exact
class-mean Euler--Maruyama scheme: for each alpha at fixed beta, the fraction of
repetitions whose two classes are separated at t_end
(:func:`~ncdynamics.theories.lesde.separation.theorem21_probability`). No training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...claims import Part, claim
from ...experiment import RunWriter
from ..separation import theorem21_probability
from .plotting import separation_probability_figure

__all__ = ["Thm21Config", "run_thm21", "thm21_claim"]


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
    run.save_summary(
        {
            "alpha_minus_beta": gap.tolist(),
            "p_sep": probs,
            "claims": [thm21_claim(gap, probs_a, t_end=config.t_end)],
        }
    )


#: P(separable) at t_end read as "tends to 1" (alpha > beta) and "tends to 0" (alpha <= beta).
HIGH, LOW = 0.95, 0.05


def thm21_claim(
    gap: NDArray[np.float64], probs: NDArray[np.float64], *, t_end: float
) -> dict[str, Any]:
    """The claim record of Theorem 2.1: one part per alpha, P(sep) >= 0.95 when alpha > beta,
    <= 0.05 when alpha <= beta, at ``t_end``.

    Parameters
    ----------
    gap : ndarray of shape (n,)
        alpha - beta of each Monte-Carlo point.
    probs : ndarray of shape (n,)
        Fraction of repetitions separated at ``t_end``.
    t_end : float
    """
    parts = []
    for g, prob in zip(gap, probs, strict=True):
        if g > 1e-12:
            parts.append(
                Part(
                    f"alpha - beta = {g:+.3g} > 0: separable",
                    f"fraction of repetitions separated at t = {t_end:g} >= {HIGH}",
                    prob,
                    prob >= HIGH,
                )
            )
        else:
            parts.append(
                Part(
                    f"alpha - beta = {g:+.3g} <= 0: not separable",
                    f"fraction of repetitions separated at t = {t_end:g} <= {LOW}",
                    prob,
                    prob <= LOW,
                )
            )
    return claim(
        "For the binary LE-SDE with constant intra- and inter-class strengths alpha, beta, "
        "as t tends to infinity and with many samples per class, the features of the two "
        "classes become separable with probability tending to 1 if alpha > beta, and with "
        "probability tending to 0 if alpha <= beta.",
        "Thm 2.1, Sec. 2.2; LE-SDE (2)",
        parts,
    )
