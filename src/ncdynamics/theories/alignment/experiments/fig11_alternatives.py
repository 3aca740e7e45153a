"""Fig. 11 of [1]: eq. (7) against the four one-term alternatives of eq. (51).

Every model is fitted by the same routine to the same recorded trajectories, so the fit
losses (49) compare directly; the claim is that eq. (7) fits best.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ....training import run_trials
from ...experiment import RunWriter
from ..model import VARIANTS
from ..training import PairHistory
from .history_fit import fit_history
from .plotting import pyplot
from .trials import two_point_trial
from .two_point import Y1, table1_configs

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["PAPER_ALT_LOSS", "AlternativesConfig", "plot_fit_losses", "run_alternatives"]

#: The fit losses (49) that Fig. 11 of [1] reports for each model.
PAPER_ALT_LOSS = {
    "eq7": 0.92,
    "factor-two": 15.35,
    "square": 16.61,
    "minus-sign": 2.99,
    "term-removed": 5.64,
}


@dataclass(frozen=True)
class AlternativesConfig:
    """Eq. (7) and the four alternatives of eq. (51) fitted to the same trajectories."""

    archs: tuple[str, ...] = ("default",)
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2


def run_alternatives(
    config: AlternativesConfig, run: RunWriter, *, seed: int, progress: bool
) -> None:
    """One trial per architecture, every variant fitted; figures ``fig11_<arch>``."""
    cfgs = table1_configs(config.archs, config)
    hists: list[PairHistory] = run_trials(
        two_point_trial,
        [(cfgs[a], seed) for a in config.archs],
        workers=config.workers,
        progress=progress,
        desc="two-point nets",
    )
    per, claims = {}, []
    for a, h in zip(config.archs, hists, strict=True):
        losses = {v: fit_history(h, y1=Y1, y2=Y1 + 1.0, variant=v).fit_loss for v in VARIANTS}
        per[a] = {
            "fit_loss_49": losses,
            "ratio_to_eq7": {v: losses[v] / losses["eq7"] for v in VARIANTS},
        }
        run.save_figure(
            plot_fit_losses(
                list(losses),
                list(losses.values()),
                log=True,
                title=f"Fig. 11 ({a}): fit loss (49) per model",
                ylabel="fit loss",
            ),
            f"fig11_{a}",
        )
        best = min(losses, key=lambda v: losses[v])
        claims.append(
            {
                "claim": f"Fig. 11 ({a}): eq. (7) fits best; paper losses {PAPER_ALT_LOSS}",
                "ours": losses,
                "held": best == "eq7",
            }
        )
    run.save_summary({"architectures": per, "claims": claims})


def plot_fit_losses(
    names: Sequence[str], values: Sequence[float], *, title: str, ylabel: str, log: bool = False
) -> Figure:
    """Bar chart of one value per model."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(max(4, 0.7 * len(names)), 3.2))
    ax.bar(range(len(names)), values, color="tab:blue")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    if log:
        ax.set_yscale("log")
    fig.tight_layout()
    return fig
