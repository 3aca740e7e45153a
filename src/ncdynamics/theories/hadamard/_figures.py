"""Matplotlib drawings of the Hadamard experiments (one function per figure of [1])."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from numpy.typing import NDArray

COLORS = {"random": "tab:blue", "hadamard": "tab:red", "ode": "tab:green"}
LABELS = {"random": "Random init", "hadamard": "Hadamard init", "ode": "ODE (9)"}
STYLES = {"random": "-", "hadamard": "-", "ode": ":"}


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _log(ax, *, x: bool = True, y: bool = False) -> None:
    """Log axes with plain ``1e-3`` labels (mathtext tick labels are slow to lay out)."""
    from matplotlib import ticker

    for on, axis, setter in ((x, ax.xaxis, ax.set_xscale), (y, ax.yaxis, ax.set_yscale)):
        if on:
            setter("log")
            axis.set_major_formatter(ticker.LogFormatter(labelOnlyBase=True))
            minor = (
                ticker.LogFormatter(labelOnlyBase=False, minor_thresholds=(1, 0.4))
                if axis is ax.yaxis
                else ticker.NullFormatter()
            )
            axis.set_minor_formatter(minor)


def mean_se(x: NDArray[np.float64], axis: int = 1) -> tuple[NDArray, NDArray]:
    """Mean and standard error (ddof=1; zero for a single realisation) along ``axis``."""
    m = x.mean(axis=axis)
    r = x.shape[axis]
    se = x.std(axis=axis, ddof=1) / np.sqrt(r) if r > 1 else np.zeros_like(m)
    return m, se


def _band(ax, x, y, color, style="-", label=None, log=False, shade=True):
    m, se = mean_se(y)
    ax.plot(x, m, style, color=color, label=label, lw=1.4)
    if not shade:
        return
    lo, hi = m - se, m + se
    if log:
        lo = np.maximum(lo, m * 1e-3)
    ax.fill_between(x, lo, hi, color=color, alpha=0.2, lw=0)


def comparison_figure(
    steps: NDArray[np.int64],
    curves: Mapping[str, Mapping[str, NDArray[np.float64]]],
    *,
    title: str,
):
    """Six panels of Figs 2, 4--9 of [1]: loss, NC alignment, KL, σ, σ̂, residual.

    ``curves[which][metric]`` has shape (n_log, R) for scalars and (n_log, R, K-1) for
    ``sigma`` and ``sigma_hat``; ``which`` in random, hadamard, ode.
    """
    plt = _plt()
    keep = steps > 0
    x = steps[keep]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5))
    (a_loss, a_nc, a_kl), (a_sv, a_svh, a_res) = axes
    for which, c in curves.items():
        col, sty = COLORS[which], STYLES[which]
        _band(a_loss, x, c["loss"][keep], col, sty, LABELS[which], log=True)
        if which == "ode":
            _band(a_nc, x, np.sqrt(2 * c["m"][keep]), col, sty, "ODE √(2M)", log=True)
        else:
            for key, ls in (("nc_w", "-"), ("nc_h", "--"), ("nc_z", "-.")):
                name = {"nc_w": "WWᵀ", "nc_h": "HᵀH", "nc_z": "Z"}[key]
                _band(a_nc, x, c[key][keep], col, ls, f"{LABELS[which]}: {name}", log=True)
        _band(a_kl, x, c["kl"][keep], col, sty, LABELS[which], log=True)
        k1 = c["sigma"].shape[-1]
        shade = k1 <= 7  # 15 shaded modes (K = 16) are unreadable and slow to draw
        for i in range(k1):
            lab = LABELS[which] if i == 0 else None
            _band(a_sv, x, c["sigma"][keep][:, :, i], col, sty, lab, log=True, shade=shade)
            _band(a_svh, x, c["sigma_hat"][keep][:, :, i], col, sty, lab, shade=shade)
        if "residual" in c:
            _band(
                a_res, x, np.maximum(c["residual"][keep], 1e-17), col, sty, LABELS[which], log=True
            )
    a_svh.axhline(1.0 / curves["random"]["sigma"].shape[-1], color="k", lw=0.8, ls="--")
    panels = [
        (a_loss, "(a) CE loss (sum)", True),
        (a_nc, "(b) NC alignment", True),
        (a_kl, "(c) KL(uniform ‖ σ̂)", True),
        (a_sv, "(d) singular values of Z", True),
        (a_svh, "(e) normalised singular values", False),
        (a_res, "(f) residual energy", True),
    ]
    for ax, name, logy in panels:
        _log(ax, y=logy)
        ax.set_title(name)
        ax.set_xlabel("GD iteration")
        ax.grid(alpha=0.3)
    a_loss.legend(fontsize=8)
    a_nc.legend(fontsize=6, ncol=2)
    fig.suptitle(title)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig


def reduced_figure(ts: NDArray, ys: NDArray, *, title: str, xlabel: str = "t"):
    """Figure 1 of [1]: â_i(t), D_KL(t), M(t) of a reduced trajectory."""
    from .metrics import kl_uniform, metric_m, normalize_l1

    plt = _plt()
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
        _log(ax)
        ax.set_xlabel(xlabel)
        ax.set_title(name)
        ax.grid(alpha=0.3)
    axes[0].legend(fontsize=7, ncol=2)
    fig.suptitle(title)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig


def normalized_vs_regular_figure(tau, y_norm, t, y_reg):
    """Figure 10 of [1]: normalised flow (solid, path length τ) vs regular flow (dashed, t)."""
    from .metrics import kl_uniform, metric_m, normalize_l1

    plt = _plt()
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    kt, kr = tau > 0, t > 0
    colors = plt.cm.tab10(np.arange(y_norm.shape[1]))
    for i in range(y_norm.shape[1]):
        axes[0, 0].plot(tau[kt], y_norm[kt, i], color=colors[i])
        axes[0, 0].plot(t[kr], y_reg[kr, i], "--", color=colors[i])
        axes[0, 1].plot(tau[kt], normalize_l1(y_norm)[kt, i], color=colors[i])
        axes[0, 1].plot(t[kr], normalize_l1(y_reg)[kr, i], "--", color=colors[i])
    for ax, f in ((axes[1, 0], kl_uniform), (axes[1, 1], metric_m)):
        ax.plot(tau[kt], f(y_norm)[kt], color="tab:blue", label="normalised (x = τ)")
        ax.plot(t[kr], f(y_reg)[kr], "--", color="tab:blue", label="regular (x = t)")
        ax.set_ylim(bottom=1e-16)  # below this the values are rounding noise
        ax.legend(fontsize=8)
    names = ("a_i", "â_i", "D_KL(uniform ‖ â)", "M")
    for ax, name in zip(axes.ravel(), names, strict=True):
        _log(ax, y=name != "â_i")
        ax.set_title(name)
        ax.set_xlabel("τ (solid) / t (dashed)")
        ax.grid(alpha=0.3)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig


def heatmaps_figure(mats: Mapping[str, NDArray], margins: Mapping[str, float]):
    """Figure 3 of [1]: normalised logit matrices with their minimal margins."""
    plt = _plt()
    fig, axes = plt.subplots(1, len(mats), figsize=(5.5 * len(mats), 4.8))
    vmax = max(np.abs(m).max() for m in mats.values())
    for ax, (name, m) in zip(np.atleast_1d(axes), mats.items(), strict=True):
        im = ax.imshow(m, cmap="RdBu_r", vmin=-vmax, vmax=vmax)
        ax.set_title(f"{name}\nmin margin {margins[name]:.4f}")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig


def thm8_figure(widths, etf_dist, eps_values, errors, *, K: int):
    """Theorem 8 check: ETF distance vs width, prediction error vs ε (mean ± SE)."""
    plt = _plt()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    m, se = mean_se(np.asarray(etf_dist), axis=1)
    axes[0].errorbar(widths, m, yerr=se, marker="o", label="measured at t*")
    w = np.asarray(widths, dtype=float)
    axes[0].plot(w, np.sqrt(K / w), "k--", lw=0.8, label="√(K/d)")
    axes[0].legend(fontsize=8)
    _log(axes[0], y=True)
    axes[0].set_xlabel("width d")
    axes[0].set_title("ETF distance of Z(t*)")
    m, se = mean_se(np.asarray(errors), axis=1)
    axes[1].errorbar(eps_values, m, yerr=se, marker="o")
    _log(axes[1], y=True)
    axes[1].set_xlabel("ε")
    axes[1].set_title("‖Z(t*) − Z_pred‖ / ‖Z_pred‖")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig
