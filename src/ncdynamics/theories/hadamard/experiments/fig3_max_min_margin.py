"""Figure 3 of [1]: normalised logit matrices, uniform on a support vs the max-min margin."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ...experiment import RunWriter
from ..linear_program import max_min_margin
from ..structure import check_power_of_two, psi_matrix, sylvester
from ._plotting import pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MarginConfig", "heatmaps_figure", "run_fig3"]


@dataclass(frozen=True)
class MarginConfig:
    """Normalised logit matrices of App. C / Figure 3: uniform on a support vs LP optimum."""

    K: int = 8
    support: tuple[int, ...] = (0, 1, 2, 3)


def run_fig3(config: MarginConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Figure 3: the max-min-margin point on a support is not uniform there."""
    K = check_power_of_two(config.K, "K")
    supp = list(config.support)
    uniform = np.zeros(K - 1)
    uniform[supp] = 1.0 / len(supp)
    lp = max_min_margin(K, supp)
    phi, psi = sylvester(K), psi_matrix(K)
    mats: dict[str, NDArray[np.float64]] = {}
    margins: dict[str, float] = {}
    for name, ahat in (("uniform on support", uniform), ("max-min margin (LP)", lp.ahat)):
        mats[name] = phi @ np.diag(np.r_[0.0, ahat]) @ phi / K
        margins[name] = float((psi @ ahat).min() / K)
    run.save_figure(heatmaps_figure(mats, margins), "fig3")
    run.log(
        0,
        {
            "margin_uniform": margins["uniform on support"],
            "margin_lp": margins["max-min margin (LP)"],
            "lp_value": lp.value,
        },
    )
    run.flush()
    run.save_summary(
        {
            "lp_ahat": lp.ahat.tolist(),
            "lp_value": lp.value,
            "margins": margins,
            "claims": [
                {
                    "claim": "the non-uniform a_conv has the larger minimal margin",
                    "ours": margins,
                    "held": bool(margins["max-min margin (LP)"] > margins["uniform on support"]),
                }
            ],
        }
    )


def heatmaps_figure(
    mats: Mapping[str, NDArray[np.float64]], margins: Mapping[str, float]
) -> Figure:
    """Figure 3 of [1]: normalised logit matrices with their minimal margins."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(mats), figsize=(5.5 * len(mats), 4.8))
    vmax = max(np.abs(m).max() for m in mats.values())
    for ax, (name, m) in zip(np.atleast_1d(axes), mats.items(), strict=True):
        im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(f"{name}\nmin margin {margins[name]:.4f}")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig
