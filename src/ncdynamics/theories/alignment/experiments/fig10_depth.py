"""Fig. 10 of [1]: the two-point theory fitted at every hidden layer of one network.

The fit should be good only in the second half of the network, where ``1/tau_h`` rises and
``1/tau_y`` falls with depth (Sec. 5.2); ``log ||dh_n(0)||^2`` falls linearly with depth
(eq. (14)).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...claims import Part, claim
from ...experiment import RunWriter
from .history_fit import fit_history
from .pair_records import record_pair
from .plotting import pyplot
from .trials import two_point_trial
from .two_point import Y1, setting_job, table1_configs, two_point_setting

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["DepthConfig", "depth_claims", "plot_layer_lines", "run_depth"]


@dataclass(frozen=True)
class DepthConfig:
    """One run of the default net recording ``a`` at every hidden layer; a fit per layer."""

    arch: str = "default"
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    #: Two-point setting (``two_point.TWO_POINT_SETTINGS``): the authors' code, or
    #: ``"paper-text"`` (``--set setting=paper-text``).
    setting: str = "authors-code"


def _spearman(x: ArrayLike, y: ArrayLike) -> float:
    from scipy.stats import spearmanr

    return float(spearmanr(x, y).statistic) if np.size(x) > 2 else float("nan")


def run_depth(config: DepthConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """One training run, a fit per layer; figure ``fig10_depth``."""
    cfg = table1_configs((config.arch,), config)[config.arch]
    st = two_point_setting(config.setting)
    if config.setting == "authors-code":
        # experiments/2_points_depth.ipynb (cell 1-5) keeps the settings file's learning rate
        # (twice Table 1's) and epochs (3000): no halving cell as in 2_points.ipynb
        cfg = replace(cfg, lr=2 * cfg.lr, epochs=3000 if config.epochs is None else cfg.epochs)
    h = two_point_trial(*setting_job(cfg, seed, st, layer="all"))
    layers = np.arange(1, cfg.depth + 1)
    fits = [fit_history(h, y1=Y1, y2=Y1 + st.dy, a=h.a[:, n - 1]) for n in layers]
    loss = np.array([f.fit_loss for f in fits])
    rh = np.array([f.inv_tau_h for f in fits])
    ry = np.array([f.inv_tau_y for f in fits])
    for n, f in zip(layers, fits, strict=True):
        run.log(
            int(n),
            {
                "fit_loss_49": f.fit_loss,
                "inv_tau_h": f.inv_tau_h,
                "inv_tau_y": f.inv_tau_y,
                "a0": float(h.a[0, n - 1]),
            },
        )
    run.flush()
    mid = st.layer_of(cfg)  # the layer the other experiments record
    record_pair(run, f"layer{mid}", h, a=h.a[:, mid - 1])
    run.save_array("a_all_layers", 0, h.a)
    run.save_figure(
        plot_layer_lines(
            layers.astype(float),
            {"fit loss (49)": loss, "1/tau_h": rh, "1/tau_y": ry},
            log=True,
            title="Fig. 10: per-layer fit",
            xlabel="hidden layer n",
            ylabel="value",
        ),
        "fig10_depth",
    )
    half = layers > cfg.depth // 2
    slope, intercept = np.polyfit(layers, np.log(h.a[0]), 1)
    log_a0 = np.log(h.a[0])
    resid = log_a0 - (slope * layers + intercept)
    sst = float(np.sum((log_a0 - log_a0.mean()) ** 2))
    lin_r2 = 1.0 - float(np.sum(resid**2)) / sst if sst > 0 else float("nan")
    run.save_summary(
        {
            "fit_loss_49": loss.tolist(),
            "inv_tau_h": rh.tolist(),
            "inv_tau_y": ry.tolist(),
            "log_a0_slope": float(slope),
            "log_a0_linear_r2": lin_r2,
            "claims": depth_claims(
                median_first_half=float(np.median(loss[~half])),
                median_second_half=float(np.median(loss[half])),
                spearman_inv_tau_h=_spearman(layers[half], rh[half]),
                spearman_inv_tau_y=_spearman(layers[half], ry[half]),
                log_a0_slope=float(slope),
                log_a0_linear_r2=lin_r2,
            ),
        }
    )


#: A rate "increases" (falls) with depth when its Spearman correlation with the layer index
#: over the second half is above this (below minus this).
TREND_SPEARMAN = 0.5


def depth_claims(
    *,
    median_first_half: float,
    median_second_half: float,
    spearman_inv_tau_h: float,
    spearman_inv_tau_y: float,
    log_a0_slope: float,
    log_a0_linear_r2: float,
) -> list[dict[str, Any]]:
    """The claim records of Fig. 10 / Sec. 5.2 and of eq. (14) of [1].

    Parameters
    ----------
    median_first_half, median_second_half : float
        Median fit loss (49) over the hidden layers of each half.
    spearman_inv_tau_h, spearman_inv_tau_y : float
        Spearman correlation of the fitted rate with the layer index, second half.
    log_a0_slope, log_a0_linear_r2 : float
        Slope and R^2 of a straight line through ``log a_n(0)`` against ``n``.
    """
    t = TREND_SPEARMAN
    fig10 = claim(
        "Fig. 10 and Sec. 5.2: fitted at each hidden layer of the default 20-layer net on two "
        "points, the theory is accurate only in the second half of the network; there the "
        "encoder's effective rate 1/tau_h increases with depth and the decoder's 1/tau_y "
        "decreases.",
        "Fig. 10, Secs. 5.1-5.2",
        [
            Part(
                "accurate only in the second half",
                "median fit loss (49) of the second half < that of the first half",
                {"first_half": median_first_half, "second_half": median_second_half},
                bool(median_second_half < median_first_half),
            ),
            Part(
                "1/tau_h increases with depth (second half)",
                f"Spearman(layer, 1/tau_h) > {t}",
                spearman_inv_tau_h,
                bool(spearman_inv_tau_h > t),
            ),
            Part(
                "1/tau_y decreases with depth (second half)",
                f"Spearman(layer, 1/tau_y) < -{t}",
                spearman_inv_tau_y,
                bool(spearman_inv_tau_y < -t),
            ),
        ],
    )
    eq14 = claim(
        "Eq. (14): at small initial weights, with an average gain G < 1 per layer, the "
        "initial representational distance at hidden layer n scales roughly as G^n, so "
        "log ||dh_n(0)||^2 falls linearly with depth.",
        "Eq. (14), Sec. 5.1",
        [
            Part(
                "G < 1", "slope of log a_n(0) against n < 0", log_a0_slope, bool(log_a0_slope < 0)
            ),
            Part(
                "linear in depth",
                "R^2 of the straight-line fit of log a_n(0) >= 0.9",
                log_a0_linear_r2,
                bool(log_a0_linear_r2 >= 0.9),
            ),
        ],
    )
    return [fig10, eq14]


def plot_layer_lines(
    x: NDArray[np.float64],
    ys: Mapping[str, NDArray[np.float64]],
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    log: bool = False,
) -> Figure:
    """One line per quantity against the hidden layer."""
    plt = pyplot()
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
