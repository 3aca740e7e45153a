"""Theory demos of [1] (Monte Carlo, no training): Theorems 2.1 and 3.1, and the claim record
the experiments of this package share. Registered by ``experiments.py``."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _figures
from .separation import theorem21_probability, theorem31_probability


def _claim(claim: str, ours: Any, held: bool) -> dict[str, Any]:
    return {"claim": claim, "ours": ours, "held": bool(held)}


# ----------------------------------------------------------------------------- theory demos
@dataclass(frozen=True)
class Thm21Config:
    beta: float = -0.2
    alphas: tuple[float, ...] = (-0.4, -0.2, 0.0, 0.2, 0.4)
    t_end: float = 60.0
    n: int = 200
    sigma: float = 1.0
    h: float = 0.01
    n_reps: int = 200


def run_thm21(config: Thm21Config, run: Any, *, seed: int, progress: bool) -> None:
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
        _figures.thm_probability(
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
                _claim(
                    "alpha - beta >= 0.4: separable with probability >= 0.95",
                    probs_a[strong].tolist(),
                    np.all(probs_a[strong] >= 0.95),
                ),
                _claim(
                    "alpha <= beta: separable with probability <= 0.05",
                    probs_a[none].tolist(),
                    np.all(probs_a[none] <= 0.05),
                ),
            ],
        }
    )


@dataclass(frozen=True)
class Thm31Config:
    rs: tuple[float, ...] = (0.25, 0.5, 0.75, 1.25, 1.5, 2.0)
    t_end: float = 400.0
    n: int = 100
    h: float = 0.05
    n_reps: int = 50
    method: str = "lp"


def run_thm31(config: Thm31Config, run: Any, *, seed: int, progress: bool) -> None:
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
        _figures.thm_probability(
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
                _claim(
                    "gamma = omega(1/t) (r <= 0.5): separable with probability >= 0.95",
                    probs_a[fast].tolist(),
                    np.all(probs_a[fast] >= 0.95),
                ),
                _claim(
                    "gamma = o(1/t) (r >= 1.5): separable with probability <= 0.05",
                    probs_a[slow].tolist(),
                    np.all(probs_a[slow] <= 0.05),
                ),
            ],
        }
    )
