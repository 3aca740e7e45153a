"""Figures drawn by several alignment experiments (matplotlib; saved by the caller).

Each figure specific to one experiment is drawn in that experiment's module.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ..training import PairHistory
from .history_fit import HistoryFit

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_distance_matrices", "plot_trajectories", "pyplot"]


def pyplot() -> Any:
    """``matplotlib.pyplot`` on the non-interactive Agg backend (unless one is set)."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def plot_trajectories(
    rows: Mapping[str, tuple[PairHistory, HistoryFit]], *, with_loss: bool = True
) -> Figure:
    """One row per network: measured (solid) and fitted theory (dashed) ``a, b, w`` [+ loss].

    Used by Figs. 2/12, 3, 4 and 15.
    """
    plt = pyplot()
    n_col = 4 if with_loss else 3
    fig, axes = plt.subplots(
        len(rows), n_col, figsize=(3.2 * n_col, 2.2 * len(rows)), squeeze=False
    )
    names = ("||dh||^2", "||dy||^2", "w", "loss (eq. 1)")
    for r, (label, (h, f)) in enumerate(rows.items()):
        obs = [h.a, h.b, h.w, h.pair_loss]
        th = [f.theory[:, 0], f.theory[:, 1], f.theory[:, 2], f.loss_theory]
        for c in range(n_col):
            ax = axes[r, c]
            ax.plot(h.epochs, obs[c], "k-", lw=1.2, label="network")
            ax.plot(h.epochs, th[c], "r--", lw=1.2, label="theory")
            if r == 0:
                ax.set_title(names[c], fontsize=9)
            if c == 0:
                ax.set_ylabel(label, fontsize=8)
            ax.tick_params(labelsize=7)
    axes[0, 0].legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_distance_matrices(mats: Mapping[str, NDArray[np.float64]], *, title: str) -> Figure:
    """Side-by-side heat maps of distance matrices (Figs. 6 and 9)."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(mats), figsize=(3.4 * len(mats), 3.2), squeeze=False)
    for ax, (name, m) in zip(axes[0], mats.items(), strict=True):
        im = ax.imshow(m, cmap="viridis")
        ax.set_title(name, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
