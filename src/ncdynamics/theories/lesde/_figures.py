"""Matplotlib figures of the LE-SDE experiments (each returns a Figure; Agg backend)."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

MARKERS = ("o", "s", "^")
NAMES = ("triangle", "rectangle", "ellipse")


def _rolling(x: np.ndarray, w: int = 10) -> np.ndarray:
    """Centred rolling mean over ``w`` points, NaN-aware, without edge shrinkage."""
    ok = np.isfinite(x)
    kernel = np.ones(w)
    num = np.convolve(np.where(ok, x, 0.0), kernel, mode="same")
    den = np.convolve(ok.astype(float), kernel, mode="same")
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def fig1(snaps, proj, labels, means, sim, nu, pair) -> Any:
    """(left) logits projected on nu against iteration; (right) 3-D class-mean paths."""
    fig = plt.figure(figsize=(11, 4.5))
    ax = fig.add_subplot(1, 2, 1)
    for c in range(3):
        sel = labels == c
        ax.scatter(
            proj[sel],
            np.broadcast_to(snaps[:, None], proj.shape)[sel],
            s=6,
            marker=MARKERS[c],
            alpha=0.5,
            label=NAMES[c],
        )
        ax.plot(_rolling(means[:, c] @ nu, 50), np.arange(means.shape[0]), lw=1.5, color="k")
        ax.plot(sim[:, c] @ nu, np.arange(sim.shape[0]), ls="--", lw=1.2, color="red")
    ax.set_xlabel(rf"$\langle\nu, X\rangle$, $\nu$ from classes {pair}")
    ax.set_ylabel("iteration")
    ax.set_title("Projected logits; black: class means, red dashed: LE-ODE (L-model)", fontsize=9)
    ax.legend(fontsize=7)
    ax3 = fig.add_subplot(1, 2, 2, projection="3d")
    t = np.arange(means.shape[0])[::5]
    for c in range(3):
        ax3.scatter(*means[::5, c].T, c=t, cmap="viridis", s=2, marker=MARKERS[c])
    for i in np.linspace(0, means.shape[0] - 1, 20).astype(int):
        tri = np.vstack([means[i], means[i, :1]])
        ax3.plot(*tri.T, color=plt.cm.viridis(i / max(1, means.shape[0] - 1)), lw=0.6)
    ax3.set_title("Class-mean logits (colour: iteration)")
    fig.tight_layout()
    return fig


def fig3(est: dict, rates: dict, direct: np.ndarray) -> Any:
    """Rows: A/B and alpha/beta; columns: estimators; direct probe values overlaid."""
    names = list(est)
    fig, axes = plt.subplots(2, len(names), figsize=(4.2 * len(names), 7), squeeze=False)
    for j, name in enumerate(names):
        e, (al, be) = est[name], rates[name]
        t = np.arange(e.A.size)
        ax = axes[0, j]
        for series, lab in ((e.A, r"$\hat A$"), (e.B, r"$\hat B$")):
            ax.scatter(t[::5], series[::5], s=1, alpha=0.08)
            ax.plot(t, _rolling(series), lw=1.2, label=lab)
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


def fig4(val_iters, val_loss, val_acc, p, r_alpha, r_beta, p_star) -> Any:
    """(a) validation loss, (b) accuracy per p_err, (c) tail indices against p_err."""
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


def fig5(real, sims: dict, rds: dict) -> Any:
    """Real class-0 logits against LE-ODE means (± sd), and RD_k(t)."""
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


def thm_probability(x, probs, xlabel: str, title: str, *, threshold: float) -> Any:
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.plot(x, probs, "o-")
    ax.axvline(threshold, ls="--", color="k", lw=0.8)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("P(separable)")
    ax.set_title(title)
    fig.tight_layout()
    return fig
