"""Figure 4 of [1]: a phase transition in the label-noise rate p_err at p* = 2/3.

For each p_err, R GEOMNIST LeNets are trained on labels of which a fraction p_err per class
is corrupted; the figure shows their validation loss and accuracy, and the tail indices
r-hat of A-hat and B-hat (l-model, (D.19)) against p_err. [1] predicts that learning fails
for p_err >= 2/3 and that min(r_alpha, r_beta) crosses 1 there (separable roughly iff
r_gamma < 1, Sec. 4). The p_err values train in separate processes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ....training.devices import current_device
from ....training.trials import run_trials
from ...claims import Part, claim
from ...experiment import RunWriter
from ..estimate import class_means_from_records, estimate_ab_l, tail_index
from .geomnist_trials import (
    N_CLASSES,
    TrialsConfig,
    log_validation,
    record_class_means,
    train_worker,
    trials_settings,
)
from .plotting import Figure, plt

__all__ = ["P_STAR", "Fig4Config", "fig4_claim", "plot_fig4", "run_fig4"]

P_STAR = 2.0 / 3.0
"""The critical label-noise rate p* = (K - 1)/K for K = 3: beyond it the
corrupted labels are anti-correlated with the class."""


@dataclass(frozen=True)
class Fig4Config(TrialsConfig):
    p_errs: tuple[float, ...] = (0.0, 0.3, 0.5, 0.6, 2.0 / 3.0, 0.8)
    workers: int = 2
    tail: int = 1000


def run_fig4(config: Fig4Config, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Phase transition in p_err: validation curves and tail indices (Fig. 4)."""
    if config.dataset != "geomnist":
        raise ValueError(
            f"`dataset` must be 'geomnist' for lesde.fig4 (the p_err sweep of [1] is on "
            f"GEOMNIST); got {config.dataset!r}."
        )
    cfg = trials_settings(config)
    device = str(current_device())
    args = [(cfg, float(p), seed + 1000 * i, device) for i, p in enumerate(config.p_errs)]
    recs = run_trials(train_worker, args, workers=config.workers, progress=progress, desc="p_err")
    r_alpha, r_beta, finals = [], [], []
    for i, (p_err, rec) in enumerate(zip(config.p_errs, recs, strict=True)):
        means = class_means_from_records(rec.logits, rec.labels, N_CLASSES, fill="ffill")
        ab = estimate_ab_l(means)
        r_alpha.append(tail_index(ab.A, tail=config.tail))
        r_beta.append(tail_index(ab.B, tail=config.tail))
        finals.append((float(rec.val_loss[-1].mean()), float(rec.val_acc[-1].mean())))
        log_validation(run, rec, prefix=f"p{i}_")
        record_class_means(run, rec, prefix=f"p{i}/")  # one stream per p_err
        run.log(i, {"p_err": p_err, "r_alpha": r_alpha[-1], "r_beta": r_beta[-1]})
        run.save_array("val_loss", i, rec.val_loss)
        run.save_array("val_acc", i, rec.val_acc)
        run.save_array("AB_l", i, np.stack([ab.A, ab.B]))
    run.flush()
    p = np.asarray(config.p_errs)
    ra, rb = np.asarray(r_alpha), np.asarray(r_beta)
    run.save_figure(
        plot_fig4(
            recs[0].val_iters,
            [r.val_loss for r in recs],
            [r.val_acc for r in recs],
            p,
            ra,
            rb,
            P_STAR,
        ),
        "fig4_phase_transition",
    )
    loss, acc = np.array(finals).T
    run.save_summary(
        {
            "p_err": p.tolist(),
            "r_alpha": ra.tolist(),
            "r_beta": rb.tolist(),
            "final_val_loss": loss.tolist(),
            "final_val_acc": acc.tolist(),
            "claims": [fig4_claim(p, ra, rb, loss, acc)],
        }
    )


#: Accepted location of the crossing of min(r_alpha, r_beta) through 1 ("around 0.6").
CROSSING = (0.5, 0.7)
#: Largest p_err counted as "small" (well below p*), where the nets must learn.
LOW_P = 0.5


def fig4_claim(
    p: NDArray[np.float64],
    r_alpha: NDArray[np.float64],
    r_beta: NDArray[np.float64],
    loss: NDArray[np.float64],
    acc: NDArray[np.float64],
) -> dict[str, Any]:
    """The claim record of Fig. 4: every condition of the phase transition, one part each.

    A condition whose p_err values are not in the sweep (e.g. no p_err >= 2/3) is reported
    as not held, with ``ours`` None.

    Parameters
    ----------
    p : ndarray of shape (n_p,)
        The label-noise rates.
    r_alpha, r_beta : ndarray of shape (n_p,)
        Tail indices of A-hat and B-hat (l-model).
    loss, acc : ndarray of shape (n_p,)
        Final trial-mean validation loss and accuracy.
    """
    rmin = np.minimum(r_alpha, r_beta)
    above, low, clean = p >= P_STAR - 1e-9, p <= LOW_P + 1e-9, p == 0
    cross = [float(x) for x, v in zip(p, rmin, strict=True) if v >= 1]

    def worst(values: NDArray[np.float64], where: NDArray[np.bool_], high: bool) -> Any:
        if not where.any():
            return None
        return float(values[where].max() if high else values[where].min())

    acc_above = worst(acc, above, True)
    loss_above = worst(loss, above, False)
    acc_clean = worst(acc, clean, False)
    r_low = worst(rmin, low, True)
    r_above = worst(rmin, above, False)
    first = cross[0] if cross else None
    lo, hi = CROSSING
    return claim(
        "Training GEOMNIST LeNets on labels of which a fraction p_err per class is corrupted "
        "shows a phase transition at p* = 2/3 (labels then carry no class information): for "
        "p_err >= 2/3 the validation loss does not decrease below its initial value (log 3) "
        "and the validation accuracy stays at or below chance (1/3), while with clean labels "
        "the nets learn; the minimum tail index min(r_alpha, r_beta) (l-model) is below 1 "
        "(separable regime of Thm 3.1) for small p_err and crosses 1 from below around "
        "p_err = 0.6, staying above 1 (non-separable regime) beyond p*.",
        "Fig. 4, Sec. 4.2; Thm 3.1; tail index (D.19)",
        [
            Part(
                "p_err >= 2/3: accuracy at or below chance",
                "largest final val accuracy over p_err >= 2/3 <= 1/3 + 0.02",
                acc_above,
                acc_above is not None and acc_above <= 1 / 3 + 0.02,
            ),
            Part(
                "p_err >= 2/3: loss does not decrease",
                "smallest final val loss over p_err >= 2/3 >= log 3 - 0.01",
                loss_above,
                loss_above is not None and loss_above >= np.log(3) - 0.01,
            ),
            Part(
                "p_err = 0: the nets learn",
                "final val accuracy at p_err = 0 >= 0.9",
                acc_clean,
                acc_clean is not None and acc_clean >= 0.9,
            ),
            Part(
                f"separable regime for small p_err (<= {LOW_P})",
                f"largest min(r_alpha, r_beta) over p_err <= {LOW_P} < 1",
                r_low,
                r_low is not None and r_low < 1,
            ),
            Part(
                "min tail index crosses 1 around p_err = 0.6",
                f"first p_err with min(r_alpha, r_beta) >= 1 in ({lo}, {hi}]",
                first,
                first is not None and lo < first <= hi,
            ),
            Part(
                "non-separable regime beyond p*",
                "smallest min(r_alpha, r_beta) over p_err >= 2/3 >= 1",
                r_above,
                r_above is not None and r_above >= 1,
            ),
        ],
    )


def plot_fig4(
    val_iters: NDArray[np.int64],
    val_loss: list[NDArray[np.float64]],
    val_acc: list[NDArray[np.float64]],
    p: NDArray[np.float64],
    r_alpha: NDArray[np.float64],
    r_beta: NDArray[np.float64],
    p_star: float,
) -> Figure:
    """(a) validation loss, (b) accuracy per p_err, (c) tail indices against p_err.

    Parameters
    ----------
    val_iters : ndarray of shape (E,)
    val_loss, val_acc : list of ndarray of shape (E, R)
        One per p_err.
    p : ndarray of shape (n_p,)
        The label-noise rates.
    r_alpha, r_beta : ndarray of shape (n_p,)
        Tail indices of A-hat and B-hat.
    p_star : float
        The predicted critical rate.
    """
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.2))
    cmap = plt.cm.coolwarm
    for i, pe in enumerate(p):
        col = cmap(i / max(1, len(p) - 1))
        for ax, v in ((axes[0], val_loss[i]), (axes[1], val_acc[i])):
            m = v.mean(axis=1)
            half = 1.96 * v.std(axis=1) / np.sqrt(v.shape[1])
            ax.plot(val_iters, m, color=col, label=f"p={pe:.2f}")
            ax.fill_between(val_iters, m - half, m + half, color=col, alpha=0.2)
    axes[0].axhline(np.mean(val_loss[0][0]), ls="--", color="k", lw=0.8)
    axes[0].set_ylabel("validation loss")
    axes[1].axhline(1 / 3, ls=":", color="k", lw=0.8)
    axes[1].set_ylabel("validation accuracy")
    for ax in axes[:2]:
        ax.set_xlabel("iteration")
    axes[1].legend(fontsize=7)
    ax = axes[2]
    ax.plot(p, r_alpha, "o-", label=r"$\hat r_\alpha$")
    ax.plot(p, r_beta, "s-", label=r"$\hat r_\beta$")
    ax.axhline(1, ls="--", color="k", lw=0.8)
    ax.axvline(p_star, color="purple", lw=1, label=r"$p^*=2/3$")
    lo, hi = 0.6, 1.25
    ax.axhspan(lo, 1, color="green", alpha=0.08)
    ax.axhspan(1, hi, color="red", alpha=0.08)
    ax.set_ylim(
        min(lo, np.nanmin([*r_alpha, *r_beta, lo])), max(hi, np.nanmax([*r_alpha, *r_beta, hi]))
    )
    ax.set_xlabel(r"$p_{err}$")
    ax.set_ylabel("tail index (l-model)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
