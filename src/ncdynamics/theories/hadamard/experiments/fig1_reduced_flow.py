"""Figure 1 of [1]: the reduced flow (9) for K = 8, where M rises while the KL falls."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from numpy.typing import NDArray

from ...experiment import RunWriter
from ..counterexamples import COUNTEREXAMPLES
from ..metrics import kl_uniform, metric_m, normalize_l1
from ..model import solve_reduced
from ..structure import check_power_of_two
from ._plotting import log_axes, pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ReducedConfig", "reduced_figure", "run_fig1"]


@dataclass(frozen=True)
class ReducedConfig:
    """Reduced ODE (9) of [1] from ``a0`` (reduced units) on a log-spaced time grid."""

    K: int = 8
    a0: tuple[float, ...] = tuple(COUNTEREXAMPLES["fig1"].tolist())
    t_min: float = 1e-3
    t_max: float = 1e7
    n_times: int = 400


def run_fig1(config: ReducedConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Figure 1: non-monotone M, monotone KL, under the reduced flow."""
    K = check_power_of_two(config.K, "K")
    a0 = np.asarray(config.a0, dtype=np.float64)
    ts = np.concatenate([[0.0], np.geomspace(config.t_min, config.t_max, config.n_times)])
    t0 = time.perf_counter()
    traj = solve_reduced(a0, ts, n_classes=K)
    seconds = time.perf_counter() - t0
    M, kl = metric_m(traj.ys), kl_uniform(traj.ys)
    for i in range(ts.size):
        run.log(i, {"t": ts[i], "M": M[i], "kl": kl[i], "l1": traj.ys[i].sum()})
    run.flush()
    run.save_array("t", 0, ts)
    run.save_array("a", 0, traj.ys)
    run.save_figure(
        reduced_figure(ts, traj.ys, title=f"Reduced flow (9), K={K}, a(0)={list(config.a0)}"),
        "fig1",
    )
    i_min, i_max = int(np.argmin(M)), int(np.argmax(M))
    rises_after_min = bool(np.all(np.diff(M[i_min : i_max + 1]) > 0)) if i_max > i_min else False
    run.save_summary(
        {
            "solve_seconds": seconds,
            "success": traj.success,
            "M0": float(M[0]),
            "kl0": float(kl[0]),
            "M_min": float(M[i_min]),
            "t_M_min": float(ts[i_min]),
            "M_max": float(M[i_max]),
            "t_M_max": float(ts[i_max]),
            "final_ahat": normalize_l1(traj.ys[-1]).tolist(),
            "final_kl": float(kl[-1]),
            "claims": [
                {
                    "claim": "KL decreases monotonically (Thm 3)",
                    "ours": float(np.diff(kl).max()),
                    "held": bool(np.diff(kl).max() <= 1e-12),
                },
                {
                    "claim": "M dips briefly, then increases over the rest of the window",
                    "ours": {"t_min": float(ts[i_min]), "t_max": float(ts[i_max])},
                    "held": bool(i_min > 0 and rises_after_min and M[i_max] > M[0]),
                },
            ],
        }
    )


def reduced_figure(
    ts: NDArray[np.float64], ys: NDArray[np.float64], *, title: str, xlabel: str = "t"
) -> Figure:
    """Figure 1 of [1]: â_i(t), D_KL(t), M(t) of a reduced trajectory ``ys`` (n_times, K-1)."""
    plt = pyplot()
    keep = ts > 0
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    ahat = normalize_l1(ys)
    for i in range(ys.shape[1]):
        axes[0].plot(ts[keep], ahat[keep, i], label=f"â_{i + 1}")
    axes[0].axhline(1 / ys.shape[1], color="k", lw=0.8, ls="--")
    axes[1].plot(ts[keep], kl_uniform(ys)[keep], color="tab:purple")
    axes[2].plot(ts[keep], metric_m(ys)[keep], color="tab:orange")
    for ax, name in zip(
        axes, ("normalised singular values â", "D_KL(uniform ‖ â)", "M (Eq. 12)"), strict=True
    ):
        log_axes(ax)
        ax.set_xlabel(xlabel)
        ax.set_title(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(title)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig
