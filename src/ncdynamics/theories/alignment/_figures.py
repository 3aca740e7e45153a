"""Matplotlib figures of the alignment experiments (drawn here, saved by the caller)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def trajectories(rows: Mapping[str, tuple[Any, Any]], *, with_loss: bool = True) -> Any:
    """One row per network: measured (solid) and fitted theory (dashed) ``a, b, w`` [+ loss].

    ``rows`` maps a label to ``(PairHistory, HistoryFit)``.
    """
    plt = _plt()
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


def predicted_vs_actual(
    pred: NDArray[np.float64], actual: NDArray[np.float64], groups: Sequence[str], title: str
) -> Any:
    """Scatter of eq. (10) against the measured final ``||dh||^2``, one dot per trial."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.2, 4))
    for g in dict.fromkeys(groups):
        m = np.array([x == g for x in groups])
        ax.scatter(pred[m], actual[m], s=14, label=g)
    hi = float(max(np.max(pred), np.max(actual))) * 1.05 if len(pred) else 1.0
    ax.plot([0, hi], [0, hi], "k:", lw=1)
    ax.set_xlabel("theory (eq. 10)")
    ax.set_ylabel("network, final ||dh||^2")
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def bars(
    names: Sequence[str], values: Sequence[float], *, title: str, ylabel: str, log: bool = False
) -> Any:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(4, 0.7 * len(names)), 3.2))
    ax.bar(range(len(names)), values, color="tab:blue")
    ax.set_xticks(range(len(names)), names, rotation=45, ha="right", fontsize=8)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    if log:
        ax.set_yscale("log")
    fig.tight_layout()
    return fig


def matrices(mats: Mapping[str, NDArray[np.float64]], *, title: str) -> Any:
    """Side-by-side heat maps of distance matrices."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(mats), figsize=(3.4 * len(mats), 3.2), squeeze=False)
    for ax, (name, m) in zip(axes[0], mats.items(), strict=True):
        im = ax.imshow(m, cmap="viridis")
        ax.set_title(name, fontsize=9)
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def embeddings(
    points: Mapping[str, NDArray[np.float64]],
    colors: NDArray[np.float64],
    markers: NDArray[np.int64],
    *,
    title: str,
) -> Any:
    """2-D MDS projections, coloured by the task-relevant feature, marker per context."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(points), figsize=(3.6 * len(points), 3.4), squeeze=False)
    for ax, (name, z) in zip(axes[0], points.items(), strict=True):
        for ctx, mk in ((0, "o"), (1, "^")):
            m = markers == ctx
            ax.scatter(z[m, 0], z[m, 1], c=colors[m], s=5, marker=mk, cmap="coolwarm")
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig


def lines(
    x: NDArray[np.float64],
    ys: Mapping[str, NDArray[np.float64]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    log: bool = False,
) -> Any:
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    for name, y in ys.items():
        ax.plot(x, y, "o-", ms=3, label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    if log:
        ax.set_yscale("log")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
