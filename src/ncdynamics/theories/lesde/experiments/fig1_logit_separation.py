"""Figure 1 of [1]: the logits of R GEOMNIST LeNets separate by class during training.

Left panel: the pre-update logits of the sampled images projected on
nu = (Xbar^k(T) - Xbar^l(T)) / |.| ((C.24), the normalised difference of two late class
means) against the iteration, with the class means and the L-model LE-ODE driven by the
estimated rates (started at the real initial means, rescaled to the real logits). Right
panel: the class-mean logits in 3-D. Claim (graded, :func:`separation_summary`): the
fraction of the last 10% of iterations' draws that each pair's best hyperplane, and the
threshold on nu, put on their class's side (>= 0.99), against the first 5% (< 0.9).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from matplotlib.colors import to_rgba
from matplotlib.ticker import MaxNLocator
from numpy.typing import NDArray

from ...claims import Part, claim
from ...experiment import RunWriter
from ..estimate import (
    class_means_from_records,
    estimate_ab_L,
    leode_imitation,
    rates_savgol,
    rescale_to_real,
)
from ..separation import projection_direction, separated_fraction, threshold_fraction
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

__all__ = ["Fig1Config", "plot_fig1", "run_fig1", "separation_summary"]

MARKERS = ("o", "s", "^")
NAMES = ("triangle", "rectangle", "ellipse")


@dataclass(frozen=True)
class Fig1Config(TrialsConfig):
    pair: tuple[int, ...] = (0, 1)
    n_snapshots: int = 50
    window: int = 21


def run_fig1(config: Fig1Config, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Separation of logits: 1-D projections on nu (C.24) and 3-D class-mean paths."""
    rec = train(trials_settings(config), 0.0, seed)
    log_validation(run, rec)
    record_class_means(run, rec)
    means = class_means_from_records(rec.logits, rec.labels, N_CLASSES, fill="ffill")
    k, l = config.pair
    nu = projection_direction(means, k, l)
    snaps = np.linspace(0, config.n_iter - 1, config.n_snapshots).astype(int)
    proj = rec.logits[snaps] @ nu  # (S, R)
    ab = estimate_ab_L(means)
    w = smooth_window(config.window, config.n_iter)
    sim = leode_imitation(
        rates_savgol(ab.A, w),
        rates_savgol(ab.B, w),
        means[0],
        rng=np.random.default_rng(seed),
        model="L",
        init="real",
    ).mean
    sim = rescale_to_real(sim, means, tail=min(1000, config.n_iter // 2))
    run.save_array("class_means", 0, means.astype(np.float32))
    run.save_array("nu", 0, nu)
    run.save_figure(
        plot_fig1(snaps, proj, rec.labels[snaps], means, sim, nu, (k, l)), "fig1_separation"
    )
    summary = separation_summary(
        rec.logits, rec.labels, nu, (k, l), seed=seed, dataset=config.dataset
    )
    run.save_summary(
        {
            "final_val_acc": float(rec.val_acc[-1].mean()),
            "train_acc_last_10pct": summary.pop("train_acc_last_10pct"),
            **summary,
        }
    )


#: Data set -> (its name in a claim, the panels of [1]'s Fig. 1 that show it).
DATA_NAMES = {
    "geomnist": ("GEOMNIST", "(a)-(b)"),
    "cifar10": ("CIFAR-10 (airplane, automobile, bird)", "(c)-(d)"),
}
#: Most draws per class handed to the soft-margin LP (a seeded subsample beyond it).
MAX_LP_POINTS = 10_000
#: Fraction of late draws that must lie on their class's side for a pair to count as separated.
SEPARATED = 0.99
#: Below this fraction the early draws count as not (yet) separated.
NOT_SEPARATED = 0.9


def separation_summary(
    logits: NDArray[np.float32],
    labels: NDArray[np.int64],
    nu: NDArray[np.float64],
    pair: tuple[int, int],
    *,
    seed: int,
    dataset: str = "geomnist",
) -> dict[str, Any]:
    """Graded separation of the drawn samples' logits, and the claim record of Fig. 1.

    The logits of the last 10% of iterations (all trials pooled) are tested pair by pair by
    :func:`separated_fraction` (the fraction of draws on their class's side of the
    least-violation hyperplane) and, for ``pair``, by :func:`threshold_fraction` of their
    projections on ``nu`` ((C.24)); the first 5% of iterations are tested the same way on
    ``nu`` as the contrast (not yet separated). A pair with fewer than one draw per class
    scores NaN and cannot hold.

    Parameters
    ----------
    logits : ndarray of shape (T, R, K)
    labels : ndarray of shape (T, R)
    nu : ndarray of shape (K,)
    pair : (int, int)
    seed : int
        Seeds the subsample of at most :data:`MAX_LP_POINTS` draws per class.
    dataset : {"geomnist", "cifar10"}
        Names the data set (and the panels of [1]) in the claim.

    Returns
    -------
    dict
        ``separated_fraction`` ({"k-l": fraction}), ``nu_threshold_fraction_late``,
        ``nu_threshold_fraction_early``, ``train_acc_last_10pct`` and ``claims``.
    """
    n_iter = logits.shape[0]
    n_classes = logits.shape[2]
    rng = np.random.default_rng(seed)
    last = slice(int(0.9 * n_iter), n_iter)
    first = slice(0, max(1, int(0.05 * n_iter)))
    pts, lab = logits[last].reshape(-1, n_classes), labels[last].ravel()
    groups = []
    for c in range(n_classes):
        g = pts[lab == c].astype(np.float64)
        if len(g) > MAX_LP_POINTS:
            g = g[rng.choice(len(g), MAX_LP_POINTS, replace=False)]
        groups.append(g)
    fractions: dict[str, float] = {}
    for i in range(n_classes):
        for j in range(i + 1, n_classes):
            ok = len(groups[i]) and len(groups[j])
            fractions[f"{i}-{j}"] = separated_fraction(groups[i], groups[j]) if ok else math.nan
    k, l = pair

    def on_nu(when: slice) -> float:
        p, y = logits[when].reshape(-1, n_classes) @ nu, labels[when].ravel()
        a, b = p[y == k], p[y == l]
        return threshold_fraction(a, b) if len(a) and len(b) else math.nan

    late, early = on_nu(last), on_nu(first)
    parts = [
        Part(
            f"classes {key} linearly separable late",
            f"fraction of last-10% draws on their class's side of the least-violation "
            f"hyperplane (L1 soft-margin LP) >= {SEPARATED}",
            frac,
            frac >= SEPARATED,
        )
        for key, frac in fractions.items()
    ]
    parts += [
        Part(
            f"projection on nu separates classes {k} and {l} late",
            f"fraction of last-10% draws of classes {k}, {l} on their side of the best "
            f"threshold on <nu, X> >= {SEPARATED}",
            late,
            late >= SEPARATED,
        ),
        Part(
            "not separated at the start (separation emerges in training)",
            f"the same fraction over the first 5% of iterations < {NOT_SEPARATED}",
            early,
            early < NOT_SEPARATED,
        ),
    ]
    data, panels = DATA_NAMES[dataset]
    record = claim(
        f"During SGD training of LeNets on {data} (K = 3, clean labels) the logits of the "
        "samples separate by class: late in training every pair of classes is linearly "
        "separable in logit space, and projecting the logits on nu, the normalised "
        "difference of two late class means, separates that pair on a line; the separation "
        "is produced by training (it is not there at initialisation).",
        f"Fig. 1{panels}, Sec. 4.2; Thm 3.1; nu by (C.24)",
        parts,
    )
    train_acc = float(np.mean(logits[last].argmax(-1) == labels[last]))
    return {
        "separated_fraction": fractions,
        "nu_threshold_fraction_late": late,
        "nu_threshold_fraction_early": early,
        "train_acc_last_10pct": train_acc,
        "claims": [record],
    }


def plot_fig1(
    snaps: NDArray[np.int64],
    proj: NDArray[np.float32],
    labels: NDArray[np.int64],
    means: NDArray[np.float64],
    sim: NDArray[np.float64],
    nu: NDArray[np.float64],
    pair: tuple[int, int],
) -> Figure:
    """(left) logits projected on nu against iteration; (right) 3-D class-mean paths.

    Parameters
    ----------
    snaps : ndarray of shape (S,)
        Iterations shown in the left panel.
    proj : ndarray of shape (S, R)
        Logits of the sampled images at ``snaps`` projected on ``nu``.
    labels : ndarray of shape (S, R)
    means : ndarray of shape (T, K, K)
        Class-mean logits.
    sim : ndarray of shape (T, K, K)
        LE-ODE imitation, rescaled to the real logits.
    nu : ndarray of shape (K,)
    pair : (int, int)
        The classes that define ``nu``.
    """
    fig = plt.figure(figsize=(12, 5))
    ax = fig.add_subplot(1, 2, 1)
    for c in range(3):
        sel = labels == c
        ax.scatter(
            proj[sel],
            np.broadcast_to(snaps[:, None], proj.shape)[sel],
            s=6,
            marker=MARKERS[c],
            alpha=0.5,
            color=f"C{c}",
            label=NAMES[c],
        )
        ax.plot(rolling_mean(means[:, c] @ nu, 50), np.arange(means.shape[0]), lw=1.5, color="k")
        ax.plot(sim[:, c] @ nu, np.arange(sim.shape[0]), ls="--", lw=1.2, color="red")
    ax.set_xlabel(rf"$\langle\nu, X\rangle$, $\nu$ from classes {pair}")
    ax.set_ylabel("iteration")
    ax.set_title("Projected logits; black: class means, red dashed: LE-ODE (L-model)", fontsize=9)
    ax.legend(fontsize=7)
    ax3 = fig.add_subplot(1, 2, 2, projection="3d")
    n_t = means.shape[0]
    t = np.arange(n_t)[::5]
    opacity = 0.1 + 0.9 * t / max(1, n_t - 1)  # faint early, opaque late
    for i in np.linspace(0, n_t - 1, 12).astype(int):  # class-mean triangles at 12 times
        tri = np.vstack([means[i], means[i, :1]])
        ax3.plot(*tri.T, color="0.4", lw=0.6, alpha=float(0.15 + 0.6 * i / max(1, n_t - 1)))
    for c in range(3):
        rgba = np.tile(to_rgba(f"C{c}"), (len(t), 1))
        rgba[:, 3] = opacity
        ax3.scatter(
            *means[t, c].T,
            color=rgba,
            s=4 + 10 * t / max(1, n_t - 1),
            marker=MARKERS[c],
            depthshade=False,
            label=NAMES[c],
        )
        ax3.scatter(
            *means[-1, c], color=f"C{c}", s=60, marker=MARKERS[c], edgecolors="k", depthshade=False
        )
    # look along (1, 1, 1): logits nearly sum to a constant, so the paths lie close to a plane
    # orthogonal to it, which this view shows face-on (the classes fan out)
    ax3.view_init(elev=float(np.degrees(np.arctan(1 / np.sqrt(2)))), azim=45)
    for axis in (ax3.xaxis, ax3.yaxis, ax3.zaxis):
        axis.set_major_locator(MaxNLocator(4))
    ax3.tick_params(labelsize=7)
    ax3.set_xlabel("logit 0")
    ax3.set_ylabel("logit 1")
    ax3.set_zlabel("logit 2")
    ax3.set_title(
        "Class-mean logits (colour: class; faint to opaque: early to late,\n"
        "outlined: final; grey: class-mean triangles over time)",
        fontsize=9,
    )
    legend = ax3.legend(fontsize=7, loc="upper left")
    for handle in legend.legend_handles:  # opaque markers in the legend, whatever the time
        if handle is not None:
            handle.set_alpha(1.0)
    fig.tight_layout()
    return fig
