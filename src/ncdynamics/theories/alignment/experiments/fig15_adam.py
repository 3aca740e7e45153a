"""Fig. 15 of [1]: the two-point theory fitted to Adam training (against SGD).

The paper does not give Adam's learning rate; ``adam_lr`` is ours. The claim is that the
theory fits Adam training worse than SGD training.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ....training import run_trials
from ...claims import Part, claim
from ...experiment import RunWriter
from ..training import PairHistory
from .history_fit import HistoryFit, fit_history
from .pair_records import record_pair
from .plotting import plot_trajectories
from .trials import two_point_trial
from .two_point import Y1, arch_summary, setting_job, table1_configs, two_point_setting

__all__ = ["AdamConfig", "adam_claims", "early_late_error", "run_adam"]


@dataclass(frozen=True)
class AdamConfig:
    """The default net trained with Adam (lr not given in [1]) and with SGD, both fitted."""

    arch: str = "default"
    adam_lr: float = 1e-5
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2
    #: Two-point setting (``two_point.TWO_POINT_SETTINGS``): the authors' code, or
    #: ``"paper-text"`` (``--set setting=paper-text``).
    setting: str = "authors-code"


def run_adam(config: AdamConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """One SGD and one Adam trial of the same net, both fitted; figure ``fig15_adam``."""
    cfg = table1_configs((config.arch,), config)[config.arch]
    st = two_point_setting(config.setting)
    sgd = setting_job(cfg, seed, st)
    hs: list[PairHistory] = run_trials(
        two_point_trial,
        [sgd, (*sgd[:4], "adam", config.adam_lr, *sgd[6:])],
        workers=config.workers,
        progress=progress,
        desc="sgd/adam",
    )
    fits = [fit_history(h, y1=Y1, y2=Y1 + st.dy) for h in hs]
    for name, h in zip(("sgd", "adam"), hs, strict=True):  # streams named by their optimiser
        record_pair(run, name, h)
    rows = {"SGD": (hs[0], fits[0]), f"Adam lr={config.adam_lr:g}": (hs[1], fits[1])}
    run.save_figure(plot_trajectories(rows), "fig15_adam")
    per = {"sgd": arch_summary(hs[0], fits[0]), "adam": arch_summary(hs[1], fits[1])}
    early, late = early_late_error(hs[1], fits[1])
    per["adam"]["fit_error_early"], per["adam"]["fit_error_late"] = early, late
    run.save_summary(
        {
            "runs": per,
            "claims": adam_claims(
                min_r2_sgd=min(fits[0].r2),
                min_r2_adam=min(fits[1].r2),
                early_error=early,
                late_error=late,
            ),
        }
    )


def early_late_error(h: PairHistory, fit: HistoryFit) -> tuple[float, float]:
    """Mean squared misfit of ``a, b, w`` in the first and in the second half of the epochs.

    Each variable's squared error is divided by its variance over the whole run (so that
    ``a``, ``b`` and ``w``, orders of magnitude apart, weigh alike), then averaged over the
    records of each half and over the three variables.
    """
    obs = np.asarray(h.state, dtype=np.float64)[:, :3]  # (n_records, 3)
    err = (obs - fit.theory[:, :3]) ** 2 / np.maximum(obs.var(axis=0), 1e-300)
    k = len(obs) // 2
    return float(err[:k].mean()), float(err[k:].mean())


def adam_claims(
    *,
    min_r2_sgd: float,
    min_r2_adam: float,
    early_error: float,
    late_error: float,
    r2_threshold: float = 0.9,
) -> list[dict[str, Any]]:
    """The claim record of Fig. 15 of [1].

    Parameters
    ----------
    min_r2_sgd, min_r2_adam : float
        Min R^2 over ``a, b, w`` of the theory fitted to the SGD and to the Adam run.
    early_error, late_error : float
        :func:`early_late_error` of the Adam run.
    r2_threshold : float
        The theory fits a run when its min R^2 is at least this (the Fig. 2 criterion).
    """
    return [
        claim(
            "Fig. 15: for the default 20-layer net trained on two points with Adam instead of "
            "gradient descent, the fitted theory does not describe the dynamics well, "
            "especially in their early part.",
            "Fig. 15, App. C.5",
            [
                Part(
                    "Adam: the theory does not fit well",
                    f"min R^2 over a, b, w (Adam) < {r2_threshold}",
                    min_r2_adam,
                    bool(min_r2_adam < r2_threshold),
                ),
                Part(
                    "Adam is fitted worse than gradient descent",
                    "min R^2 (Adam) < min R^2 (SGD, same net and seed)",
                    {"adam": min_r2_adam, "sgd": min_r2_sgd},
                    bool(min_r2_adam < min_r2_sgd),
                ),
                Part(
                    "the misfit is largest early",
                    "normalised squared error of a, b, w: first half of the epochs > second",
                    {"early": early_error, "late": late_error},
                    bool(early_error > late_error),
                ),
            ],
        )
    ]
