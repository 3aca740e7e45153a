"""Figure 1 of [1]: the reduced flow (9) for K = 8, where M rises while the KL falls."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...claims import Part, claim
from ...experiment import RunWriter
from ..counterexamples import COUNTEREXAMPLES
from ..metrics import kl_uniform, metric_m, normalize_l1
from ..model import solve_reduced
from ..structure import check_power_of_two
from ._plotting import log_axes, pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["ReducedConfig", "reduced_figure", "reduced_flow_claims", "run_fig1"]


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
            "claims": reduced_flow_claims(ts, M, kl),
        }
    )


def reduced_flow_claims(
    ts: NDArray[np.float64], M: NDArray[np.float64], kl: NDArray[np.float64]
) -> list[dict[str, Any]]:
    """The claim record of Figure 1 from the time grid ``ts`` (``ts[0] = 0``) and the
    metric ``M`` (12) and KL along it.

    "M increases over the rest of the trajectory" is graded: the share of the window after
    M's minimum, in log time, over which M rises monotonically (1 when it rises up to the
    last time shown; [1] does not give its window, so a longer one may include the turn)."""
    i_min, i_max = int(np.argmin(M)), int(np.argmax(M))
    rises = bool(i_max > i_min and np.all(np.diff(M[i_min : i_max + 1]) > 0))
    lt = np.log10(ts[max(i_min, 1) :])
    share = float((lt[i_max - max(i_min, 1)] - lt[0]) / (lt[-1] - lt[0])) if rises else 0.0
    kl_rise = float(np.diff(kl).max())
    return [
        claim(
            "Under the reduced flow (9) with K = 8 from a(0) = [1, 1, 1, 1, 1e-3, 1e-3, "
            "1e-3], the KL divergence from uniform decreases monotonically (Thm 3), while M "
            "(12) first decreases very briefly and then increases monotonically over the "
            "rest of the trajectory shown, although it must eventually return to 0.",
            "Fig. 1, §4.3; Thms 3-4",
            [
                Part(
                    "KL decreases monotonically",
                    "largest step rise of KL <= 1e-12",
                    kl_rise,
                    kl_rise <= 1e-12,
                ),
                Part(
                    "M first dips briefly",
                    "M(t_min) < M(0) with 0 < t_min <= 1",
                    {"t_min": float(ts[i_min]), "M_min - M0": float(M[i_min] - M[0])},
                    bool(i_min > 0 and M[i_min] < M[0] and ts[i_min] <= 1.0),
                ),
                Part(
                    "then M rises monotonically over the rest of the window",
                    "share of log-time after the minimum over which M rises monotonically "
                    ">= 0.9, and M_max > M(0)",
                    share,
                    bool(rises and share >= 0.9 and M[i_max] > M[0]),
                ),
                Part(
                    "M eventually turns back toward 0",
                    "M at the last time < M_max (needs a window past the maximum)",
                    float(M[-1] - M[i_max]),
                    bool(M[-1] < M[i_max]),
                ),
            ],
        )
    ]


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
