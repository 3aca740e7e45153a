"""Drawing helpers shared by the Hadamard figures: headless pyplot, log axes, mean ± SE."""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from matplotlib.axes import Axes

__all__ = ["log_axes", "mean_se", "pyplot"]


def pyplot() -> ModuleType:
    """``matplotlib.pyplot`` on the Agg backend unless a backend is already chosen."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def log_axes(ax: Axes, *, x: bool = True, y: bool = False) -> None:
    """Log axes with plain ``1e-3`` labels (mathtext tick labels are slow to lay out)."""
    from matplotlib import ticker

    for on, axis, setter in ((x, ax.xaxis, ax.set_xscale), (y, ax.yaxis, ax.set_yscale)):
        if on:
            setter("log")
            axis.set_major_formatter(ticker.LogFormatter(labelOnlyBase=True))
            minor = (
                ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4))
                if axis is ax.yaxis
                else ticker.NullFormatter()
            )
            axis.set_minor_formatter(minor)


def mean_se(
    x: NDArray[np.float64], axis: int = 1
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean and standard error (ddof=1; zero for a single realisation) along ``axis``."""
    m: NDArray[np.float64] = x.mean(axis=axis)
    r = x.shape[axis]
    se: NDArray[np.float64] = x.std(axis=axis, ddof=1) / np.sqrt(r) if r > 1 else np.zeros_like(m)
    return m, se
