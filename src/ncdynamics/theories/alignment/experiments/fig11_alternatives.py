"""Fig. 11 of [1]: eq. (7) against the four one-term alternatives of eq. (51).

Every model is fitted by the same routine to the same recorded trajectories, so the fit
losses (49) compare directly; the claim is that eq. (7) fits best. The figure shows, as the
paper's does, the measured ``a = |dh|^2``, ``b = |dy|^2`` and ``w`` against the epoch with
each model's fitted trajectory, and the fit losses as bars beside the paper's values.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ....training import run_trials
from ...claims import Part, claim
from ...experiment import RunWriter
from ..model import VARIANTS
from ..training import PairHistory
from .history_fit import fit_history
from .pair_records import record_pair
from .plotting import pyplot
from .trials import two_point_trial
from .two_point import Y1, setting_job, table1_configs, two_point_setting

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "PAPER_ALT_LOSS",
    "AlternativesConfig",
    "alternatives_claims",
    "plot_fig11",
    "plot_fit_losses",
    "run_alternatives",
]

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
    #: Two-point setting (``two_point.TWO_POINT_SETTINGS``): the authors' code, or
    #: ``"paper-text"`` (``--set setting=paper-text``).
    setting: str = "authors-code"


def run_alternatives(
    config: AlternativesConfig, run: RunWriter, *, seed: int, progress: bool
) -> None:
    """One trial per architecture, every variant fitted; figures ``fig11_<arch>``."""
    cfgs = table1_configs(config.archs, config)
    st = two_point_setting(config.setting)
    hists: list[PairHistory] = run_trials(
        two_point_trial,
        [setting_job(cfgs[a], seed, st) for a in config.archs],
        workers=config.workers,
        progress=progress,
        desc="two-point nets",
    )
    per = {}
    for a, h in zip(config.archs, hists, strict=True):
        record_pair(run, a, h)
        fits = {v: fit_history(h, y1=Y1, y2=Y1 + st.dy, variant=v) for v in VARIANTS}
        losses = {v: f.fit_loss for v, f in fits.items()}
        per[a] = {
            "fit_loss_49": losses,
            "ratio_to_eq7": {v: losses[v] / losses["eq7"] for v in VARIANTS},
        }
        run.save_figure(
            plot_fig11(
                h.epochs,
                h.state,
                {v: f.theory for v, f in fits.items()},
                losses,
                title=f"Fig. 11 ({a})",
                paper=PAPER_ALT_LOSS if a == "default" else None,
            ),
            f"fig11_{a}",
        )
    claims = alternatives_claims({a: per[a]["fit_loss_49"] for a in config.archs})
    run.save_summary({"architectures": per, "claims": claims})


def _paper_ratio(variant: str) -> str:
    if variant not in PAPER_ALT_LOSS:
        return ""
    return f" (paper: {PAPER_ALT_LOSS[variant] / PAPER_ALT_LOSS['eq7']:.3g})"


def alternatives_claims(losses: Mapping[str, Mapping[str, float]]) -> list[dict[str, Any]]:
    """The claim record of Fig. 11 of [1]: one part per (architecture, alternative).

    Parameters
    ----------
    losses : mapping
        ``{architecture: {variant: fit loss (49)}}`` with ``"eq7"`` and the four
        alternatives of eq. (51) (``model.VARIANTS``).

    A part holds when eq. (7)'s fit loss is below the alternative's; ``ours`` is the ratio
    alternative / eq. (7) (> 1: eq. (7) is better), graded rather than only "best or not".
    """
    parts = []
    for a, lo in losses.items():
        for v, loss in lo.items():
            if v == "eq7":
                continue
            ratio = loss / lo["eq7"] if lo["eq7"] > 0 else float("nan")
            parts.append(
                Part(
                    f"{a}: eq. (7) fits better than {v}",
                    f"fit loss (49) of {v} / that of eq. (7) > 1" + _paper_ratio(v),
                    ratio,
                    bool(ratio > 1.0),
                )
            )
    return [
        claim(
            "Fig. 11: fitted by the same procedure to the default network's two-point "
            "trajectory, eq. (7) gives a lower fit loss (49) than each of the four "
            "alternative dynamics of eq. (51), each changing one term (paper: 0.92 for "
            "eq. (7) against 15.35, 16.61, 2.99 and 5.64).",
            "Fig. 11, App. C.1",
            parts,
        )
    ]


#: How Fig. 11 labels each model (the alternatives are A1-A4 of eq. (51)).
_LABELS = {
    "eq7": "eq7 (the theory)",
    "factor-two": "factor-two (A1)",
    "square": "square (A2)",
    "minus-sign": "minus-sign (A3)",
    "term-removed": "term-removed (A4)",
}


def plot_fig11(
    epochs: NDArray[np.float64],
    measured: NDArray[np.float64],
    theories: Mapping[str, NDArray[np.float64]],
    losses: Mapping[str, float],
    *,
    title: str,
    paper: Mapping[str, float] | None = None,
) -> Figure:
    """Measured ``(a, b, w)`` against each model's fitted trajectory, and the fit losses.

    Panels 1-3: ``a = |dh|^2``, ``b = |dy|^2`` and ``w`` against the epoch, the measured
    trajectory (thick black) and one line per model (eq. (7) solid, the alternatives
    dashed); the legend gives each model's fit loss (49). Panel 4: the fit losses (log
    scale) as bars, with the paper's values as markers when given.

    Parameters
    ----------
    epochs : ndarray of shape (n_records,)
    measured : ndarray of shape (n_records, 3)
        The recorded ``(a, b, w)``.
    theories : mapping of model name to ndarray of shape (n_records, 3)
        Each model's fitted trajectory on the recorded epochs.
    losses : mapping of model name to float
        Each model's fit loss (49).
    title : str
        Prefix of the panel titles (e.g. the architecture).
    paper : mapping of model name to float, optional
        The paper's fit losses (:data:`PAPER_ALT_LOSS`, reported for the default
        architecture only), drawn as black ticks.
    """
    plt = pyplot()
    fig, axes = plt.subplots(1, 4, figsize=(17, 4.2), constrained_layout=True)
    names = ("a = ||dh||^2", "b = ||dy||^2", "w")
    for c, ax in enumerate(axes[:3]):
        ax.plot(epochs, measured[:, c], color="k", lw=2.5, label="measured (network)")
        for i, (v, th) in enumerate(theories.items()):
            ax.plot(
                epochs,
                th[:, c],
                color=f"C{i}",
                lw=2.2 if v == "eq7" else 1.2,
                ls="-" if v == "eq7" else "--",
                zorder=2 if v == "eq7" else 3,  # alternatives drawn over the theory
                label=f"{_LABELS.get(v, v)}, fit loss {losses[v]:.3g}",
            )
        ax.set_title(f"{title}: {names[c]}", fontsize=9)
        ax.set_xlabel("epoch")
        ax.tick_params(labelsize=8)
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=8)
    ax = axes[3]
    order = list(losses)
    x = np.arange(len(order))
    ax.bar(x, [losses[v] for v in order], color=[f"C{i}" for i in range(len(order))])
    if paper is not None:
        ticks = [paper.get(v, np.nan) for v in order]
        ax.plot(x, ticks, ls="none", marker="_", ms=18, mew=2, color="k", label="paper")
        ax.legend(fontsize=8)
    ax.set_xticks(x, [_LABELS.get(v, v) for v in order], rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    shown = [v for v in [*losses.values(), *(paper or {}).values()] if np.isfinite(v) and v > 0]
    if shown:  # bars start a decade below the smallest value, so their lengths compare
        ax.set_ylim(min(shown) / 10, max(shown) * 3)
    ax.set_ylabel("fit loss (49)")
    ax.set_title(f"{title}: fit loss per model", fontsize=9)
    return fig


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
