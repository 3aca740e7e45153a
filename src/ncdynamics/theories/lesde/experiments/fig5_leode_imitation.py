"""Figure 5 of [1]: the LE-ODE driven by estimated rates imitates the real class-mean logits.

The rates alpha-hat, beta-hat estimated from R GEOMNIST LeNets (l- or L-model estimator,
Savitzky--Golay derivatives) drive the forward-Euler LE-ODE (App. D.2) of the l- or the
L-model from random starts; the mean path, rescaled to the real logits, is compared with
the real class means by the relative distance RD_k(t) (D.21). Claims: the L-model's RD is
of order 1e-2-1e-1 in the terminal phase and below the l-model's.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ...experiment import RunWriter
from ..estimate import (
    class_means_from_records,
    estimate_ab_L,
    estimate_ab_l,
    leode_imitation,
    rates_savgol,
    relative_distance,
    rescale_to_real,
)
from .claims import claim
from .geomnist_trials import (
    N_CLASSES,
    TrialsConfig,
    log_validation,
    smooth_window,
    train,
    trials_settings,
)
from .plotting import Figure, plt

__all__ = ["Fig5Config", "plot_fig5", "run_fig5"]

# (estimator, model) -> (mean path (T, K, K), sd over random starts (T, K, K))
Imitations = dict[tuple[str, str], tuple[NDArray[np.float64], NDArray[np.float64]]]


@dataclass(frozen=True)
class Fig5Config(TrialsConfig):
    window: int = 21
    n_runs: int = 500
    tail: int = 1000


def run_fig5(config: Fig5Config, run: RunWriter, *, seed: int, progress: bool) -> None:
    """LE-ODE imitation of the real class-mean logits, and the relative distance RD."""
    rec = train(trials_settings(config), 0.0, seed)
    log_validation(run, rec)
    means = class_means_from_records(rec.logits, rec.labels, N_CLASSES, fill="ffill")
    w = smooth_window(config.window, config.n_iter)
    rng = np.random.default_rng(seed)
    tail = min(config.tail, config.n_iter // 2)
    sims: Imitations = {}
    rds: dict[tuple[str, str], NDArray[np.float64]] = {}
    for est_name, est in (("l", estimate_ab_l(means)), ("L", estimate_ab_L(means))):
        al, be = rates_savgol(est.A, w), rates_savgol(est.B, w)
        for model in ("L", "l"):
            out = leode_imitation(al, be, means[0], rng=rng, n_runs=config.n_runs, model=model)
            scaled = rescale_to_real(out.mean, means, tail=tail)
            factor = float(np.sum(scaled * out.mean) / max(np.sum(out.mean**2), 1e-300))
            sims[(est_name, model)] = (scaled, out.sd * abs(factor))
            rds[(est_name, model)] = relative_distance(means, scaled, model=model)
    real_init = {}
    for est_name, est in (("l", estimate_ab_l(means)), ("L", estimate_ab_L(means))):
        al, be = rates_savgol(est.A, w), rates_savgol(est.B, w)
        det = leode_imitation(al, be, means[0], rng=rng, model="L", init="real").mean
        real_init[est_name] = relative_distance(
            means, rescale_to_real(det, means, tail=tail), model="L"
        )
    for key, (m, _) in sims.items():
        run.save_array(f"sim_{key[0]}est_{key[1]}model", 0, m.astype(np.float32))
    run.save_array("real_means", 0, means.astype(np.float32))
    run.save_figure(plot_fig5(means, sims, rds), "fig5_imitation")
    term = slice(config.n_iter - tail, config.n_iter)
    rd_term = {f"{a}-est/{b}-model": float(np.nanmean(v[term])) for (a, b), v in rds.items()}
    rd_L, rd_l = rd_term["L-est/L-model"], rd_term["L-est/l-model"]
    run.save_summary(
        {
            "terminal_rd": rd_term,
            "terminal_rd_L_model_started_at_real_means": {
                f"{a}-est": float(np.nanmean(v[term])) for a, v in real_init.items()
            },
            "claims": [
                claim(
                    "RD of the L-model LE-ODE is of order 1e-2-1e-1 in the terminal phase "
                    "(L-estimates)",
                    rd_L,
                    1e-3 <= rd_L <= 0.2,
                ),
                claim(
                    "RD of the L-model is lower than that of the l-model (terminal phase)",
                    [rd_L, rd_l],
                    rd_L < rd_l,
                ),
            ],
        }
    )


def plot_fig5(
    real: NDArray[np.float64],
    sims: Imitations,
    rds: dict[tuple[str, str], NDArray[np.float64]],
) -> Figure:
    """Real class-0 logits against LE-ODE means (± sd), and RD_k(t).

    Parameters
    ----------
    real : ndarray of shape (T, K, K)
        Real class-mean logits.
    sims : dict of (estimator, model) to (mean, sd), each of shape (T, K, K)
    rds : dict of (estimator, model) to ndarray of shape (T, K)
    """
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    t = np.arange(real.shape[0])
    bars = np.linspace(0, t[-1], 20).astype(int)
    for ax, est_name in zip(axes[:2], ("l", "L"), strict=True):
        mean, sd = sims[(est_name, "L")]
        for j in range(3):
            ax.plot(t, real[:, 0, j], lw=1.5, label=f"real logit {j}")
            ax.plot(t, mean[:, 0, j], ls="--", color="k", lw=0.8)
            ax.errorbar(
                bars, mean[bars, 0, j], yerr=sd[bars, 0, j], fmt="none", ecolor="grey", lw=0.6
            )
        lo, hi = np.nanmin(real[:, 0]), np.nanmax(real[:, 0])
        pad = 0.3 * (hi - lo)
        ax.set_ylim(lo - pad, hi + pad)  # error bars (sd over random starts) are clipped
        ax.set_title(f"class 0: L-model LE-ODE, rates from the {est_name}-estimator")
        ax.set_xlabel("iteration")
        ax.legend(fontsize=7)
    ax = axes[2]
    for (est_name, model), rd in rds.items():
        ax.plot(t, np.nanmean(rd, axis=1), label=f"{model}-model ({est_name}-est.)")
    ax.set_yscale("log")
    ax.set_xlabel("iteration")
    ax.set_ylabel("RD (mean over classes)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
