"""Figure 3 of [1]: the integrated elasticities A, B and the rates alpha, beta of training.

From the class-mean logits of R GEOMNIST LeNets: A-hat and B-hat by the l-model (eq. (11),
corrected), L-model (App. D.1) and exact projection estimators, and alpha-hat, beta-hat as
their Savitzky--Golay derivatives (App. D.1.2). Beside them, the drift matrix E measured
directly by single SGD steps (the elasticity probe, :func:`drift_from_impacts`) at every
validation. Claims: A-hat rises, B-hat ends negative, alpha-hat dominates beta-hat, and
the direct measurement agrees in sign.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from numpy.typing import NDArray

from ....probes.elasticity import measure_elasticity
from ...experiment import RunWriter
from ..estimate import (
    ABEstimate,
    class_means_from_records,
    drift_from_impacts,
    estimate_ab_L,
    estimate_ab_l,
    estimate_ab_projection,
    rates_savgol,
)
from ..trials import BatchedTrainer
from .claims import claim
from .geomnist_trials import (
    N_CLASSES,
    TrialsConfig,
    load_geomnist,
    log_validation,
    record_class_means,
    smooth_window,
    train_on,
    trials_settings,
)
from .plotting import Figure, plt, rolling_mean

__all__ = ["Fig3Config", "plot_fig3", "run_fig3"]

Rates = tuple[NDArray[np.float64], NDArray[np.float64]]


@dataclass(frozen=True)
class Fig3Config(TrialsConfig):
    window: int = 151
    probe_per_class: int = 20
    sources_per_class: int = 5
    elasticity_nets: int = 3


def run_fig3(config: Fig3Config, run: RunWriter, *, seed: int, progress: bool) -> None:
    """A-hat, B-hat (l, L, projection), rates by Savitzky-Golay, and direct E from probes."""
    cfg = trials_settings(config)
    ds = load_geomnist(cfg, 0.0, seed)
    rng = np.random.default_rng(seed + 1)
    probe_idx = np.concatenate(
        [
            rng.choice(np.flatnonzero(ds.y_train == c), config.probe_per_class, replace=False)
            for c in range(3)
        ]
    )
    xp = torch.from_numpy(ds.x_train[probe_idx])
    yp = torch.from_numpy(ds.y_train[probe_idx])
    direct: list[tuple[int, float, float, float, float]] = []

    def probe(trainer: BatchedTrainer, iteration: int) -> None:
        vals = []
        for r in range(min(config.elasticity_nets, trainer.n_trials)):
            res = measure_elasticity(
                trainer.module(r),
                xp.to(trainer.device),
                yp.to(trainer.device),
                lr=config.lr,
                n_sources_per_class=config.sources_per_class,
                num_classes=N_CLASSES,
                seed=seed,
            )
            xs = res.outputs[res.sources]
            ys, yprobe = yp.numpy()[res.sources], yp.numpy()
            el = drift_from_impacts(res.impacts, xs, ys, yprobe, N_CLASSES, lr=config.lr, model="l")
            eL = drift_from_impacts(res.impacts, xs, ys, yprobe, N_CLASSES, lr=config.lr, model="L")
            vals.append((el.alpha, el.beta, eL.alpha, eL.beta, res.ratio))
        v = np.nanmean(np.array(vals), axis=0)
        direct.append((iteration, *v[:4]))
        run.log(
            iteration,
            {
                "direct_alpha_l": v[0],
                "direct_beta_l": v[1],
                "direct_alpha_L": v[2],
                "direct_beta_L": v[3],
                "elasticity_ratio": v[4],
            },
        )

    rec = train_on(ds, cfg, seed, callback=probe)
    log_validation(run, rec)
    record_class_means(run, rec)
    means = class_means_from_records(rec.logits, rec.labels, N_CLASSES, fill="ffill")
    w = smooth_window(config.window, config.n_iter)
    est = {
        "l": estimate_ab_l(means),
        "L": estimate_ab_L(means),
        "projection": estimate_ab_projection(means),
    }
    rates = {name: (rates_savgol(e.A, w), rates_savgol(e.B, w)) for name, e in est.items()}
    d = np.array(direct)
    for name, e in est.items():
        run.save_array(f"AB_{name}", 0, np.stack([e.A, e.B]))
        run.save_array(f"rates_{name}", 0, np.stack(rates[name]))
    run.save_array("direct", 0, d)
    run.save_figure(plot_fig3(est, rates, d), "fig3_estimates")
    t_end = config.n_iter - 1
    half = slice(config.n_iter // 2, config.n_iter)
    al, bl = rates["l"]
    idx = d[:, 0].astype(int).clip(0, t_end)
    late = d[:, 0] >= config.n_iter // 2
    sg_gap = (al - bl)[idx]
    run.save_summary(
        {
            "A_l_final": float(est["l"].A[-1]),
            "B_l_final": float(est["l"].B[-1]),
            "A_L_final": float(est["L"].A[-1]),
            "B_L_final": float(est["L"].B[-1]),
            "direct_alpha_beta_l_late": [
                float(np.nanmean(d[late, 1])),
                float(np.nanmean(d[late, 2])),
            ],
            "savgol_alpha_beta_l_late": [float(np.mean(al[half])), float(np.mean(bl[half]))],
            "direct_vs_savgol_gap_at_probe_times": {
                "iterations": d[:, 0].tolist(),
                "direct_alpha_minus_beta": (d[:, 1] - d[:, 2]).tolist(),
                "savgol_alpha_minus_beta": sg_gap.tolist(),
            },
            "claims": [
                claim(
                    "A-hat (l-model) rises to a large positive value",
                    float(est["l"].A[-1]),
                    est["l"].A[-1] > 1 and est["l"].A[-1] > est["l"].A[config.n_iter // 4],
                ),
                claim(
                    "B-hat (l-model) is negative at the end",
                    float(est["l"].B[-1]),
                    est["l"].B[-1] < 0,
                ),
                claim(
                    "B-hat (L-model) is negative at the end",
                    float(est["L"].B[-1]),
                    est["L"].B[-1] < 0,
                ),
                claim(
                    "alpha-hat dominates beta-hat in the second half (l-model, mean)",
                    [float(np.mean(al[half])), float(np.mean(bl[half]))],
                    np.mean(al[half]) > np.mean(bl[half]),
                ),
                claim(
                    "direct measurement: alpha > beta in the second half (l-model)",
                    [float(np.nanmean(d[late, 1])), float(np.nanmean(d[late, 2]))],
                    np.nanmean(d[late, 1]) > np.nanmean(d[late, 2]),
                ),
            ],
        }
    )


def plot_fig3(
    est: dict[str, ABEstimate], rates: dict[str, Rates], direct: NDArray[np.float64]
) -> Figure:
    """Rows: A/B and alpha/beta; columns: estimators; direct probe values overlaid.

    Parameters
    ----------
    est : dict of str to ABEstimate
        A-hat, B-hat by estimator name (``"l"``, ``"L"``, ``"projection"``).
    rates : dict of str to (ndarray of shape (T,), ndarray of shape (T,))
        alpha-hat, beta-hat by estimator name.
    direct : ndarray of shape (n_probes, 5)
        Rows (iteration, alpha_l, beta_l, alpha_L, beta_L) of the direct measurement.
    """
    names = list(est)
    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 7), squeeze=False)
    for j, name in enumerate(names):
        e, (al, be) = est[name], rates[name]
        t = np.arange(e.A.size)
        ax = axes[0, j]
        for series, lab in ((e.A, r"$\hat A$"), (e.B, r"$\hat B$")):
            ax.scatter(t[::5], series[::5], s=1, alpha=0.08)
            ax.plot(t, rolling_mean(series), lw=1.2, label=lab)
        ax.set_title(f"{name} estimator")
        ax.legend(fontsize=8)
        ax = axes[1, j]
        ax.plot(t, al, label=r"$\hat\alpha$ (SG)")
        ax.plot(t, be, label=r"$\hat\beta$ (SG)")
        if direct.size and name in ("l", "L"):
            col = (1, 2) if name == "l" else (3, 4)
            ax.plot(direct[:, 0], direct[:, col[0]], "o--", ms=3, label=r"$\alpha$ direct")
            ax.plot(direct[:, 0], direct[:, col[1]], "s--", ms=3, label=r"$\beta$ direct")
        ax.axhline(0, color="grey", lw=0.5)
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_xlabel("iteration")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
