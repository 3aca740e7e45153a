"""Fig. 15 of [1]: the two-point theory fitted to Adam training (against SGD).

The paper does not give Adam's learning rate; ``adam_lr`` is ours. The claim is that the
theory fits Adam training worse than SGD training.
"""

from __future__ import annotations

from dataclasses import dataclass

from ....training import run_trials
from ...experiment import RunWriter
from ..training import PairHistory
from .history_fit import fit_history
from .pair_records import record_pair
from .plotting import plot_trajectories
from .trials import two_point_trial
from .two_point import Y1, arch_summary, table1_configs

__all__ = ["AdamConfig", "run_adam"]


@dataclass(frozen=True)
class AdamConfig:
    """The default net trained with Adam (lr not given in [1]) and with SGD, both fitted."""

    arch: str = "default"
    adam_lr: float = 1e-5
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2


def run_adam(config: AdamConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """One SGD and one Adam trial of the same net, both fitted; figure ``fig15_adam``."""
    cfg = table1_configs((config.arch,), config)[config.arch]
    hs: list[PairHistory] = run_trials(
        two_point_trial,
        [(cfg, seed, 0.5, 1.0, "sgd"), (cfg, seed, 0.5, 1.0, "adam", config.adam_lr)],
        workers=config.workers,
        progress=progress,
        desc="sgd/adam",
    )
    fits = [fit_history(h, y1=Y1, y2=Y1 + 1.0) for h in hs]
    for name, h in zip(("sgd", "adam"), hs, strict=True):  # streams named by their optimiser
        record_pair(run, name, h)
    rows = {"SGD": (hs[0], fits[0]), f"Adam lr={config.adam_lr:g}": (hs[1], fits[1])}
    run.save_figure(plot_trajectories(rows), "fig15_adam")
    per = {"sgd": arch_summary(hs[0], fits[0]), "adam": arch_summary(hs[1], fits[1])}
    run.save_summary(
        {
            "runs": per,
            "claims": [
                {
                    "claim": "Fig. 15: the theory fits Adam training worse than SGD training (min R^2)",  # noqa: E501
                    "ours": {"sgd": min(fits[0].r2), "adam": min(fits[1].r2)},
                    "held": bool(min(fits[1].r2) < min(fits[0].r2)),
                }
            ],
        }
    )
