"""Figure 5 of [1]: the LE-ODE driven by estimated rates imitates the real class-mean logits.

The rates alpha-hat, beta-hat estimated from R GEOMNIST LeNets (l- or L-model estimator,
Savitzky--Golay derivatives) drive the forward-Euler LE-ODE (App. D.2) of the l- or the
L-model from random starts; the mean path, rescaled to the real logits, is compared with
the real class means by the relative distance RD_k(t) (D.21). Claims: the L-model's RD is
of order 1e-2-1e-1 in the terminal phase and below the l-model's.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
from matplotlib import patheffects
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
    record_class_means,
    smooth_window,
    train,
    trials_settings,
)
from .plotting import Figure, plt, rolling_mean

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
    record_class_means(run, rec)
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
    run.save_figure(plot_fig5(means, sims, rds, tail=tail), "fig5_imitation")
    term = slice(config.n_iter - tail, config.n_iter)
    rd_term = {f"{a}-est/{b}-model": float(np.nanmean(v[term])) for (a, b), v in rds.items()}
    rd_class = {
        f"{a}-est/{b}-model": [float(x) for x in _terminal_rd(v, tail)] for (a, b), v in rds.items()
    }
    rd_L, rd_l = rd_term["L-est/L-model"], rd_term["L-est/l-model"]
    run.save_summary(
        {
            "terminal_rd": rd_term,
            "terminal_rd_per_class": rd_class,
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


def _terminal_rd(rd: NDArray[np.float64], tail: int) -> NDArray[np.float64]:
    """Mean of RD_k(t) over the last ``tail`` iterations, per class: shape (K,)."""
    with warnings.catch_warnings():  # a class whose RD is NaN throughout gives NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.asarray(np.nanmean(rd[-tail:], axis=0), dtype=np.float64)


def plot_fig5(
    real: NDArray[np.float64],
    sims: Imitations,
    rds: dict[tuple[str, str], NDArray[np.float64]],
    *,
    tail: int,
) -> Figure:
    """Real class-mean logits against LE-ODE means (± sd), one row per class, and RD_k(t).

    Row k shows class k: its K real mean logits (solid, one colour per logit) against the
    L-model LE-ODE mean (dashed, same colour; grey bars: sd over random starts) driven by
    rates from the l-estimator (column 0) and the L-estimator (column 1), and RD_k(t) of
    every (estimator, model) pairing as a rolling mean over T/100 iterations (column 2).
    Titles and legends give the terminal RD_k (mean over the last ``tail`` iterations). The
    paper's Fig. 5 shows class 0 only.

    Parameters
    ----------
    real : ndarray of shape (T, K, K)
        Real class-mean logits.
    sims : dict of (estimator, model) to (mean, sd), each of shape (T, K, K)
    rds : dict of (estimator, model) to ndarray of shape (T, K)
    tail : int
        Length of the terminal phase over which RD_k is averaged.
    """
    n_classes = real.shape[1]
    fig, axes = plt.subplots(
        n_classes, 3, figsize=(16, 3.3 * n_classes), squeeze=False, constrained_layout=True
    )
    t = np.arange(real.shape[0])
    bars = np.linspace(0, t[-1], 20).astype(int)
    colours = [f"C{j}" for j in range(n_classes)]
    terminal = {key: _terminal_rd(rd, tail) for key, rd in rds.items()}
    outline = [patheffects.withStroke(linewidth=3.2, foreground="white")]
    smooth = max(1, real.shape[0] // 100)  # RD_k(t) is noisy: drawn as a rolling mean
    for k in range(n_classes):
        for ax, est_name in zip(axes[k, :2], ("l", "L"), strict=True):
            mean, sd = sims[(est_name, "L")]
            for j in range(n_classes):
                ax.plot(
                    t,
                    real[:, k, j],
                    ls="-",
                    lw=0.8,
                    alpha=0.45,
                    color=colours[j],
                    label=f"real logit {j}",
                )
            for j in range(n_classes):
                ax.plot(
                    t,
                    mean[:, k, j],
                    ls="--",
                    lw=1.8,
                    color=colours[j],
                    path_effects=outline,  # visible over the noisy real logits
                    zorder=3,
                    label="LE-ODE" if j == 0 else None,
                )
                ax.errorbar(
                    bars,
                    mean[bars, k, j],
                    yerr=sd[bars, k, j],
                    fmt="none",
                    ecolor="grey",
                    lw=0.6,
                    label="± sd over starts" if j == 0 else None,
                )
            shown = np.concatenate([real[:, k].ravel(), mean[:, k].ravel()])
            lo, hi = np.nanmin(shown), np.nanmax(shown)
            pad = 0.15 * (hi - lo) if hi > lo else 1.0
            ax.set_ylim(lo - pad, hi + pad)  # error bars (sd over random starts) are clipped
            rd_k = terminal[(est_name, "L")][k]
            ax.set_title(
                f"class {k}: L-model LE-ODE, {est_name}-est. rates (terminal RD {rd_k:.3g})",
                fontsize=9,
            )
            ax.set_xlabel("iteration")
            ax.set_ylabel(f"mean logit of class {k}")
            ax.legend(fontsize=7, ncol=2)
        ax = axes[k, 2]
        for (est_name, model), rd in rds.items():
            ax.plot(
                t,
                rolling_mean(rd[:, k], smooth),
                lw=1.0,
                label=f"{model}-model ({est_name}-est.): {terminal[(est_name, model)][k]:.3g}",
            )
        ax.set_yscale("log")
        ax.set_xlabel("iteration")
        ax.set_ylabel(f"RD of class {k}")
        ax.set_title(
            f"class {k}: RD (rolling mean over {smooth} its; terminal value in legend)",
            fontsize=9,
        )
        ax.legend(fontsize=7)
    return fig
