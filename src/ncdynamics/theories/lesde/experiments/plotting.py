"""Plotting helpers several LE-SDE figures share (matplotlib, Agg backend).

Each figure module draws its own panels; what is here is used by more than one of them:
the NaN-aware rolling mean that smooths noisy per-iteration estimates (Figs. 1 and 3) and
the separation-probability plot of the two theorem demos (Theorems 2.1 and 3.1).
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

__all__ = ["Figure", "plt", "rolling_mean", "separation_probability_figure"]


def rolling_mean(x: NDArray[Any], w: int = 10) -> NDArray[np.float64]:
    """Centred rolling mean over ``w`` points, NaN-aware, without edge shrinkage.

    Parameters
    ----------
    x : ndarray of shape (n,)
    w : int
        Window length.

    Returns
    -------
    ndarray of shape (n,)
        NaN where the window holds no finite value.
    """
    ok = np.isfinite(x)
    kernel = np.ones(w)
    num = np.convolve(np.where(ok, x, 0.0), kernel, mode="same")
    den = np.convolve(ok.astype(float), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        out: NDArray[np.float64] = num / den
    return out


def separation_probability_figure(
    x: NDArray[np.float64],
    probs: NDArray[np.float64],
    xlabel: str,
    title: str,
    *,
    threshold: float,
) -> Figure:
    """P(separable) against a parameter of the theory, with its critical value marked.

    Parameters
    ----------
    x : ndarray of shape (n_points,)
        The parameter (alpha - beta for Thm 2.1, the decay exponent r for Thm 3.1).
    probs : ndarray of shape (n_points,)
        Monte-Carlo probability of separation at each ``x``.
    xlabel, title : str
    threshold : float
        Where the theorem puts the transition (a dashed vertical line).
    """
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(x, probs, "o-")
    ax.axvline(threshold, ls="--", color="k", lw=0.8)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(separable)")
    ax.set_title(title)
    fig.tight_layout()
    return fig
