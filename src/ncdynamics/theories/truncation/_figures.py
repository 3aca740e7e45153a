"""Matplotlib figures for the truncation experiments (drawn here, saved by the run store)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def panels(
    run: Any,
    name: str,
    specs: Sequence[dict[str, Any]],
    *,
    title: str = "",
) -> None:
    """Save a row of line-plot panels.

    Each spec holds ``lines`` (list of ``(x, y, label)`` or ``(x, y, label, style)``), and
    optionally ``xlabel``, ``ylabel``, ``logy``, ``logx``, ``vlines``, ``title``, ``hline``.
    """
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(specs), figsize=(4.6 * len(specs), 3.6), squeeze=False)
    # shape: axes (1, n_panels)
    for ax, spec in zip(axes[0], specs, strict=True):
        for line in spec["lines"]:
            x, y, label = line[:3]
            style = line[3] if len(line) > 3 else "-"
            y = np.asarray(y, dtype=float)
            if spec.get("logy"):
                y = np.where(y > 0, y, np.nan)
            ax.plot(x, y, style, label=label, lw=1.3, ms=4)
        for v in spec.get("vlines", ()):
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


def scatter_errors(
    run: Any,
    name: str,
    groups: dict[str, tuple[Any, Any]],
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
) -> None:
    """Log-scale strip plot of error values per group: ``label -> (x positions, values)``."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    for i, (label, (x, v)) in enumerate(groups.items()):
        x = np.asarray(x, dtype=float) + 0.08 * (i - len(groups) / 2)
        v = np.maximum(np.asarray(v, dtype=float), 1e-18)
        ax.plot(x, v, "o", ms=3.5, alpha=0.7, label=label)
    ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    run.save_figure(fig, name)
