"""Figures of recorded metrics against time.

Metrics are grouped by their name after the run prefix (``mse/nc/nc1`` and
``cross-entropy/nc/nc1`` share a panel, one line each). Quantities that span decades
(collapse metrics, losses) get a log y-axis; time gets a log axis when steps span more
than two decades.
"""

from __future__ import annotations

from collections import defaultdict

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

__all__ = ["metric_figures", "metric_groups"]

_LINEAR = ("accuracy", "lr", "alignment", "ratio")
_KNOWN_PREFIXES = ("mse", "cross-entropy")


def _split(name: str) -> tuple[str, str]:
    """``"mse/nc/nc1" -> ("mse", "nc/nc1")``; names without a series prefix get ``""``."""
    head, _, tail = name.partition("/")
    if tail and head in _KNOWN_PREFIXES:
        return head, tail
    return "", name


def _file_name(family: str) -> str:
    """A metric family as a figure file name: characters other than letters, digits, ``.``,
    ``_`` and ``-`` become ``-`` (metric names are free text; file names are not)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in family)


def metric_groups(metrics: pd.DataFrame) -> dict[str, list[str]]:
    """Map each metric (prefix removed) to the full names that carry it."""
    groups: dict[str, list[str]] = defaultdict(list)
    for name in metrics["name"].unique():
        groups[_split(str(name))[1]].append(str(name))
    return dict(sorted(groups.items()))


def _use_log(values: np.ndarray, metric: str) -> bool:
    v = values[np.isfinite(values)]
    if v.size < 2 or np.any(v <= 0) or any(t in metric for t in _LINEAR):
        return False
    return float(v.max() / max(v.min(), 1e-300)) > 30.0


def metric_figures(metrics: pd.DataFrame, *, max_panels: int = 12) -> list[tuple[str, Figure]]:
    """One figure per metric family (``nc``, ``train``, ``test``, ...), a panel per metric.

    Returns ``(name, figure)`` pairs; the caller saves and closes them.
    """
    if metrics.empty:
        return []
    families: dict[str, dict[str, list[str]]] = defaultdict(dict)
    for metric, names in metric_groups(metrics).items():
        family = metric.split("/")[0] if "/" in metric else "scalars"
        families[family][metric] = names
    figures = []
    for family, members in families.items():
        items = list(members.items())[:max_panels]
        n = len(items)
        cols = min(3, n)
        rows = int(np.ceil(n / cols))
        fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
        for ax, (metric, names) in zip(axes.flat, items, strict=False):
            all_vals = []
            all_steps = []
            for full in sorted(names):
                df = metrics[metrics["name"] == full].sort_values("step")
                label = _split(full)[0] or None
                ax.plot(
                    df["step"],
                    df["value"],
                    marker="." if len(df) < 30 else None,
                    lw=1.5,
                    label=label,
                )
                all_vals.append(df["value"].to_numpy())
                all_steps.append(df["step"].to_numpy())
            vals = np.concatenate(all_vals)
            steps = np.concatenate(all_steps)
            if _use_log(vals, metric):
                ax.set_yscale("log")
            pos = steps[steps > 0]
            if pos.size and pos.max() / pos.min() > 100:
                ax.set_xscale("symlog", linthresh=1)
                ax.set_xlim(left=0 if steps.min() >= 0 else None)
            ax.set_title(metric, fontsize=10)
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
            if any(_split(f)[0] for f in names):
                ax.legend(fontsize=8)
        for ax in list(axes.flat)[n:]:
            ax.set_visible(False)
        fig.tight_layout()
        figures.append((f"metrics-{_file_name(family)}", fig))
    return figures
