"""Figure 3 of [1]: normalised logit matrices, uniform on a support vs the max-min margin."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...claims import Part, claim
from ...experiment import RunWriter
from ..linear_program import max_min_margin
from ..structure import check_power_of_two, psi_matrix, sylvester
from ._plotting import pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["MarginConfig", "heatmaps_figure", "margin_claims", "run_fig3"]


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
            "claims": margin_claims(lp.ahat, margins),
        }
    )


#: a_conv of Figure 3, [1, 1, 1, 2, 0, 0, 0], normalised to unit l1 norm.
A_CONV = np.array([1.0, 1.0, 1.0, 2.0, 0.0, 0.0, 0.0]) / 5.0


def margin_claims(
    lp_ahat: NDArray[np.float64], margins: Mapping[str, float]
) -> list[dict[str, Any]]:
    """The claim record of Figure 3 from the LP optimum ``lp_ahat`` on the support {1..4}
    (K = 8) and the smallest normalised margins of the two logit matrices."""
    lp_ahat = np.asarray(lp_ahat, dtype=np.float64)
    gap = float(np.abs(lp_ahat - A_CONV).max()) if lp_ahat.shape == A_CONV.shape else np.inf
    uni, best = margins["uniform on support"], margins["max-min margin (LP)"]
    return [
        claim(
            "For K = 8 on the support of the first four modes, the non-uniform "
            "a_conv = [1, 1, 1, 2, 0, 0, 0] has a visibly larger smallest normalised margin "
            "than a* = [1, 1, 1, 1, 0, 0, 0], which is uniform on that support, so a_conv "
            "beats it as the logit norm diverges (it is the max-min-margin point there).",
            "Fig. 3, App. C",
            [
                Part(
                    "a_conv is the max-min-margin point on the support",
                    "max |LP optimum - a_conv/5| < 1e-8",
                    gap,
                    gap < 1e-8,
                ),
                Part(
                    "a_conv's smallest margin is larger than a*'s",
                    "min margin(a_conv) > min margin(a*); ours {a*, a_conv}",
                    {"uniform": uni, "a_conv": best},
                    best > uni,
                ),
            ],
        )
    ]


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
