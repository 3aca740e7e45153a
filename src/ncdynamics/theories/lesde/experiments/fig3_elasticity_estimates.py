"""Figure 3 of [1]: the integrated elasticities A, B and the rates alpha, beta of training.

From the class-mean logits of R GEOMNIST LeNets: A-hat and B-hat by the l-model (eq. (11),
corrected), L-model (App. D.1) and exact projection estimators, and alpha-hat, beta-hat as
their Savitzky--Golay derivatives (App. D.1.2). Beside them, the drift matrix E measured
directly by single SGD steps (the elasticity probe, :func:`drift_from_impacts`) at every
validation. Claims (:func:`fig3_claims`): every condition of Fig. 3's statement, the shape
words judged over the whole trajectory and under both models (A-hat rises, monotone over
block means and sigmoid-shaped by a fitted logistic curve; B-hat decreases and ends
negative; alpha-hat above beta-hat at every record after a burn-in, rises then decays; the
two estimators agree late and differ early), and the direct measurement's sign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import NDArray

from ....probes.elasticity import measure_elasticity
from ...claims import Part, claim
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
from .geomnist_trials import (
    N_CLASSES,
    TrialsConfig,
    load_data,
    log_validation,
    record_class_means,
    smooth_window,
    train_on,
    trials_settings,
)
from .plotting import Figure, plt, rolling_mean

__all__ = [
    "Fig3Config",
    "dominance_fraction",
    "fig3_claims",
    "monotone_fraction",
    "plot_fig3",
    "run_fig3",
    "sigmoid_r2",
]

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
    ds = load_data(cfg, 0.0, seed)
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
    direct_late = (float(np.nanmean(d[late, 1])), float(np.nanmean(d[late, 2])))
    run.save_summary(
        {
            "A_l_final": float(est["l"].A[-1]),
            "B_l_final": float(est["l"].B[-1]),
            "A_L_final": float(est["L"].A[-1]),
            "B_L_final": float(est["L"].B[-1]),
            "direct_alpha_beta_l_late": list(direct_late),
            "savgol_alpha_beta_l_late": [float(np.mean(al[half])), float(np.mean(bl[half]))],
            "direct_vs_savgol_gap_at_probe_times": {
                "iterations": d[:, 0].tolist(),
                "direct_alpha_minus_beta": (d[:, 1] - d[:, 2]).tolist(),
                "savgol_alpha_minus_beta": sg_gap.tolist(),
            },
            "claims": fig3_claims(est, rates, direct_late, dataset=config.dataset),
        }
    )


#: Relative gap |A_l(T) - A_L(T)| / |A_l(T)| below which the two estimators "agree late".
AGREE = 0.25
#: alpha-hat has "decayed" when its mean over the last 10% is below this fraction of its peak.
DECAYED = 0.25


#: Blocks over which a shape word is judged: their means must move one way.
N_SHAPE_BLOCKS = 20
#: "Rises" / "decreases": at least this fraction of the block-to-block steps go that way.
MONOTONE = 0.9
#: "Sigmoid-like": a fitted logistic curve explains at least this fraction of A-hat's variance.
SIGMOID_R2 = 0.95
#: "Dominates": alpha-hat > beta-hat at every record after this fraction of the run (burn-in).
BURN_IN = 0.1


def monotone_fraction(x: NDArray[np.float64], *, sign: int = 1) -> float:
    """Fraction of the steps between the means of :data:`N_SHAPE_BLOCKS` equal blocks of
    ``x`` that go up (``sign=1``) or down (``sign=-1``); NaN entries are ignored."""
    blocks = [b[np.isfinite(b)] for b in np.array_split(np.asarray(x, float), N_SHAPE_BLOCKS)]
    means = np.array([b.mean() for b in blocks if b.size])
    steps = np.diff(means) * sign
    return float(np.mean(steps > 0)) if steps.size else math.nan


def sigmoid_r2(x: NDArray[np.float64]) -> float:
    """R^2 of the best logistic curve ``c + h / (1 + exp(-(t - t0) / s))`` through ``x``
    (t the record index scaled to [0, 1]; least squares from a grid of starts)."""
    import warnings

    from scipy.optimize import OptimizeWarning, curve_fit

    y = np.asarray(x, float)
    t = np.linspace(0.0, 1.0, y.size)
    ok = np.isfinite(y)
    t, y = t[ok], y[ok]
    sst = float(np.sum((y - y.mean()) ** 2))
    if y.size < 5 or sst == 0:
        return math.nan

    def logistic(tt: NDArray[np.float64], c: float, h: float, t0: float, s: float) -> Any:
        return c + h / (1.0 + np.exp(-np.clip((tt - t0) / s, -60, 60)))

    best = math.inf
    for t0 in (0.1, 0.3, 0.5, 0.7):
        for sc in (0.02, 0.1, 0.3):
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", OptimizeWarning)
                    p, _ = curve_fit(
                        logistic, t, y, p0=(y.min(), y.max() - y.min(), t0, sc), maxfev=4000
                    )
            except (RuntimeError, ValueError):
                continue
            best = min(best, float(np.sum((y - logistic(t, *p)) ** 2)))
    return 1.0 - best / sst if np.isfinite(best) else math.nan


def dominance_fraction(alpha: NDArray[np.float64], beta: NDArray[np.float64]) -> float:
    """Fraction of the records after the burn-in (:data:`BURN_IN`) where alpha > beta."""
    start = int(BURN_IN * alpha.size)
    return float(np.mean(alpha[start:] > beta[start:]))


def fig3_claims(
    est: dict[str, ABEstimate],
    rates: dict[str, Rates],
    direct_late: tuple[float, float],
    *,
    dataset: str = "geomnist",
) -> list[dict[str, Any]]:
    """The claim records of Fig. 3 (estimates) and of the direct probe (derived check).

    Parameters
    ----------
    est : dict of str to ABEstimate
        A-hat, B-hat of the ``"l"`` and ``"L"`` estimators, each of shape (T,).
    rates : dict of str to (ndarray of shape (T,), ndarray of shape (T,))
        alpha-hat, beta-hat (Savitzky--Golay) by estimator.
    direct_late : (float, float)
        Second-half means of alpha and beta measured directly (l-model).
    dataset : {"geomnist", "cifar10"}
        Names the data set in the claim.
    """
    a_l, a_big = est["l"].A, est["L"].A
    n = a_l.size
    quarter, half, tenth = n // 4, slice(n // 2, n), slice(n - max(1, n // 10), n)
    al, bl = rates["l"]
    al_big = rates["L"][0]
    peak = int(np.argmax(al))
    late_alpha = float(np.mean(al[tenth]))
    decay = late_alpha / al[peak] if al[peak] > 0 else math.nan
    interior = n // 20 <= peak < n - n // 4
    gap = float(np.mean(al[half]) - np.mean(bl[half]))
    agree = abs(a_l[-1] - a_big[-1]) / max(abs(a_l[-1]), 1e-300)
    early_diff = float(np.mean(np.abs(al - al_big)[: max(1, quarter)]))
    late_diff = float(np.mean(np.abs(al - al_big)[n - max(1, quarter) :]))
    shape_parts: list[Part] = []
    for m, e in (("l", est["l"]), ("L", est["L"])):
        rise, fall = monotone_fraction(e.A), monotone_fraction(e.B, sign=-1)
        r2 = sigmoid_r2(e.A)
        shape_parts += [
            Part(
                f"A-hat ({m}) large and positive at the end", f"A_{m}(T) > 1", e.A[-1], e.A[-1] > 1
            ),
            Part(
                f"A-hat ({m}) rises",
                f"fraction of rising steps between {N_SHAPE_BLOCKS} block means of A_{m} "
                f">= {MONOTONE}",
                rise,
                rise >= MONOTONE,
            ),
            Part(
                f"A-hat ({m}) sigmoid-like",
                f"R^2 of a fitted logistic curve through A_{m} >= {SIGMOID_R2}",
                r2,
                r2 >= SIGMOID_R2,
            ),
            Part(f"B-hat ({m}) negative at the end", f"B_{m}(T) < 0", e.B[-1], e.B[-1] < 0),
            Part(
                f"B-hat ({m}) decreases",
                f"fraction of falling steps between {N_SHAPE_BLOCKS} block means of B_{m} "
                f">= {MONOTONE}",
                fall,
                fall >= MONOTONE,
            ),
        ]
    for m in ("l", "L"):
        dom = dominance_fraction(*rates[m])
        shape_parts.append(
            Part(
                f"alpha-hat dominates beta-hat ({m})",
                f"fraction of records after the first {BURN_IN:.0%} with alpha_{m} > beta_{m} == 1",
                dom,
                dom == 1.0,
            )
        )
    data = "GEOMNIST" if dataset == "geomnist" else "CIFAR-10 (airplane, automobile, bird)"
    cols = "columns 1-2" if dataset == "geomnist" else "columns 3-4"
    estimates = claim(
        f"On {data} the estimated elasticities of SGD training behave as local elasticity "
        "requires: under both the l- and the L-model the integrated intra-class strength "
        "A-hat(t) rises (sigmoid-like) to a large positive value while the inter-class "
        "B-hat(t) decreases to negative values; the rate alpha-hat(t) dominates beta-hat(t), "
        "first increasing and then decaying towards zero; the l- and L-model estimates are "
        "similar late in training and differ mainly in the initial stage.",
        f"Fig. 3 ({cols}), Sec. 4.2; App. D.1, Fig. D.3",
        [
            *shape_parts,
            Part(
                "alpha-hat dominates beta-hat on average",
                "mean alpha_l - mean beta_l over the second half > 0",
                gap,
                gap > 0,
            ),
            Part(
                "alpha-hat rises, then decays towards zero",
                f"peak of alpha_l after the first 5% and before the last 25% of iterations, "
                f"and mean alpha_l over the last 10% < {DECAYED} x peak (ours: that ratio)",
                decay,
                bool(interior) and decay < DECAYED,
            ),
            Part(
                "l- and L-model estimates similar late",
                f"|A_l(T) - A_L(T)| / |A_l(T)| < {AGREE}",
                agree,
                agree < AGREE,
            ),
            Part(
                "l- and L-model estimates differ mainly early",
                "mean |alpha_l - alpha_L| over the first quarter > over the last quarter "
                "(ours: first / last)",
                early_diff / late_diff if late_diff > 0 else math.nan,
                early_diff > late_diff,
            ),
        ],
    )
    da, db = direct_late
    direct = claim(
        "Local elasticity measured directly: the change of the logits of a probe sample "
        "after one SGD step on a source sample is larger when the two share a class "
        "(alpha > beta, l-model) in the second half of training.",
        "derived check of Sec. 2.1 (E = (alpha - beta) I + beta 1 1^T), not a figure of [1]",
        [
            Part(
                "alpha > beta, measured directly",
                "second-half mean of direct alpha_l - direct beta_l > 0",
                da - db,
                da - db > 0,
            )
        ],
    )
    return [estimates, direct]


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
