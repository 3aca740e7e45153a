"""Rows of line-plot panels: the figure shape shared by the truncation experiments.

Each experiment describes its panels as data (:class:`Panel`) and :func:`panels` draws them
with matplotlib and hands the figure to the run store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypedDict

import numpy as np
from numpy.typing import ArrayLike

from ...experiment import RunWriter

__all__ = ["Line", "Panel", "panels"]

Line = tuple[ArrayLike, ArrayLike, str] | tuple[ArrayLike, ArrayLike, str, str]
"""``(x, y, label)`` or ``(x, y, label, matplotlib style)``; an empty label gets no legend."""


class _PanelLines(TypedDict):
    lines: Sequence[Line]


class Panel(_PanelLines, total=False):
    """One panel: its lines and, optionally, axes labels, log scales and reference lines."""

    xlabel: str
    ylabel: str
    title: str
    logy: bool
    logx: bool
    vlines: ArrayLike
    hline: float


def panels(run: RunWriter, name: str, specs: Sequence[Panel], *, title: str = "") -> None:
    """Draw a row of line-plot panels and save the figure as ``name``.

    On a log-``y`` panel non-positive values are left out (drawn as gaps).
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(specs), figsize=(4.6 * len(specs), 3.6), squeeze=False)
    # shape: axes (1, n_panels)
    for ax, spec in zip(axes[0], specs, strict=True):
        for line in spec["lines"]:
            x, y, label = line[:3]
            style = line[3] if len(line) > 3 else "-"
            yv = np.asarray(y, dtype=float)
            if spec.get("logy"):
                yv = np.where(yv > 0, yv, np.nan)
            ax.plot(x, yv, style, label=label, lw=1.3, ms=4)
        for v in np.atleast_1d(np.asarray(spec.get("vlines", ()), dtype=float)):
            ax.axvline(v, color="0.6", lw=0.7, ls=":")
        if "hline" in spec:
            ax.axhline(spec["hline"], color="k", lw=0.8, ls="--")
        if spec.get("logy"):
            ax.set_yscale("log")
        if spec.get("logx"):
            ax.set_xscale("log")
        ax.set_xlabel(spec.get("xlabel", ""))
        ax.set_ylabel(spec.get("ylabel", ""))
        ax.set_title(spec.get("title", ""), fontsize=9)
        if any(len(line) > 2 and line[2] for line in spec["lines"]):
            ax.legend(fontsize=7)
        ax.grid(alpha=0.3)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.subplots_adjust(wspace=0.32, left=0.06, right=0.98, bottom=0.16, top=0.88)
    run.save_figure(fig, name)
