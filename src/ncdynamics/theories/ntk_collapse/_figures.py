"""Matplotlib figures of the ntk_collapse experiments, saved with ``run.save_figure``."""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402


def phases(run: Any, steps: np.ndarray, norms: dict[str, np.ndarray], lam: Any, eta: float) -> None:
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for (name, v), val in zip(norms.items(), (lam.global_, lam.class_, lam.single), strict=True):
        (line,) = ax.semilogy(steps, np.maximum(v, 1e-300), label=f"{name.strip('_')}")
        ax.semilogy(steps, v[0] * np.abs(1 - eta * val) ** steps, ls=":", color=line.get_color())
    ax.set_ylim(1e-16, None)
    ax.set_xlabel("GD step")
    ax.set_ylabel("norm of residual phase")
    ax.set_title("Residual phases (dotted: (1 - eta lambda)^t)")
    ax.legend()
    run.save_figure(fig, "residual_phases")


def invariant(
    run: Any,
    ts: np.ndarray,
    flow_drift: np.ndarray,
    losses: np.ndarray,
    gd: dict[float, tuple[np.ndarray, np.ndarray]],
) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    axes[0].semilogy(ts, np.maximum(flow_drift, 1e-17), label="gradient flow (19)")
    for eta, (t, d) in gd.items():
        axes[0].semilogy(t, np.maximum(d, 1e-17), label=f"GD eta={eta:g}")
    axes[0].set_xlabel("time")
    axes[0].set_ylabel("||E(t) - E(0)|| / ||E(0)||")
    axes[0].legend(fontsize=8)
    axes[1].semilogy(ts, losses)
    axes[1].set_xlabel("time")
    axes[1].set_ylabel("loss (4)")
    run.save_figure(fig, "invariant_conservation")


def collapse_panels(
    run: Any, ts: np.ndarray, series: dict[str, dict[str, np.ndarray]], name: str, *, m: int
) -> None:
    keys = ("loss", "nc1_std", "nc2_etf", "nc3", "h2_norm", "invariant_norm")
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    t = np.maximum(ts, ts[1] / 2)
    for ax, key in zip(axes.ravel(), keys, strict=True):
        for label, ser in series.items():
            ax.loglog(t, np.maximum(ser[key], 1e-30), label=label)
        if key == "h2_norm":
            ax.loglog(t[1:], 1.0 / (2 * m * t[1:]), ls=":", color="k", label="1/(2mt)")
        ax.set_title(key)
        ax.set_xlabel("flow time")
        ax.legend(fontsize=8)
    run.save_figure(fig, name)


def equal_bias(run: Any, ts: np.ndarray, nc2: np.ndarray, nc3: np.ndarray, b: np.ndarray) -> None:
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    t = np.maximum(ts, ts[1] / 2)
    axes[0].loglog(t, np.maximum(nc2, 1e-16), label="NC2 (ETF distance)")
    axes[0].loglog(t, nc3, label="NC3 (duality)")
    axes[0].legend()
    axes[0].set_xlabel("flow time")
    axes[1].semilogx(t, b)
    axes[1].set_xlabel("flow time")
    axes[1].set_ylabel("bias beta")
    run.save_figure(fig, "equal_bias")


def fig1(run: Any, frame: Any, kernels: dict[str, np.ndarray], labels: np.ndarray) -> None:
    """Figure 1 of [1]: traced kernels (a, b), block norms (c, d), alignment vs epoch (e)."""
    fig, axes = plt.subplots(1, 5, figsize=(22, 4.2))
    panes = (
        ("traced_logits", "a) traced logit NTK"),
        ("traced_features", "b) traced feature NTK"),
        ("block_norms_logits", "c) logit block norms"),
        ("block_norms_features", "d) feature block norms"),
    )
    for ax, (key, title) in zip(axes[:4], panes, strict=True):
        K = kernels[key]
        im = ax.imshow(K / np.abs(K).max(), cmap="viridis")
        ax.set_title(title)
        fig.colorbar(im, ax=ax, fraction=0.046)
    for col, label in (("ntk_alignment_logits", "Theta"), ("ntk_alignment_features", "Theta^h")):
        s = frame[col].dropna()
        axes[4].plot(s.index, s.to_numpy(), marker="o", label=label)
    axes[4].set_xlabel("epoch")
    axes[4].set_title("e) kernel-label alignment")
    axes[4].legend()
    run.save_figure(fig, "fig1")


_PANES = (
    ("invariant_norm", "a) m ||E||_F", True),
    ("invariant_alignment", "b) alignment (28)", False),
    ("nc/nc1_std", "c) NC1", True),
    ("nc/nc2_etf", "d) NC2", True),
    ("nc/nc3", "e) NC3", True),
)
_MARKERS = ("o", "s", "^", "D", "v")


def fig2(
    run: Any, frames: list[Any], df: Any, choices: dict[str, tuple[int, int]], config: Any
) -> None:
    """Figure 2 of [1]: panes a-e (chosen models), f-h (LR sweep), i-j (norms, alignments)."""
    fig, axes = plt.subplots(1, 5, figsize=(24, 4.2))
    for (init, (nc, non)), mk in zip(choices.items(), _MARKERS, strict=False):
        for idx, color, fill in ((nc, "tab:red", True), (non, "tab:blue", False)):
            fr = frames[idx]
            acc = df.loc[df["run"] == idx, "test/accuracy"].iloc[0]
            for ax, (key, title, logy) in zip(axes, _PANES, strict=True):
                if key not in fr.columns:
                    continue
                s = fr[key].dropna()
                ax.plot(
                    s.index,
                    s.to_numpy(),
                    color=color,
                    marker=mk,
                    ms=4,
                    mfc=color if fill else "none",
                    label=f"{init} lr={df.loc[df['run'] == idx, 'lr'].iloc[0]:.3g} test={acc:.3f}",
                )
                ax.set_title(title)
                ax.set_xlabel("epoch")
                if logy:
                    ax.set_yscale("log")
            e999 = df.loc[df["run"] == idx, "epoch_999"].iloc[0]
            if np.isfinite(e999):
                for ax in axes:
                    ax.axvline(e999, color=color, lw=0.6, ls="--")
    axes[0].legend(fontsize=6)
    run.save_figure(fig, "fig2_a-e")
    fig, axes = plt.subplots(1, 4, figsize=(19, 4.2))
    for init, mk in zip(config.inits, _MARKERS, strict=False):
        sub = df[df["init"] == init]
        for ax, key in zip(
            axes, ("nc/nc1_std", "nc/nc2_etf", "nc/nc3", "test/accuracy"), strict=True
        ):
            ax.plot(sub["lr"], sub[key], marker=mk, label=init)
            ax.set_xscale("log")
            ax.set_xlabel("learning rate")
            ax.set_title(f"final {key}")
            if key != "test/accuracy":
                ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    run.save_figure(fig, "fig2_f-h")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    chosen = [
        (init, idx, c)
        for init, (nc, non) in choices.items()
        for idx, c in ((nc, "tab:red"), (non, "tab:blue"))
    ]
    x = np.arange(len(chosen))
    for off, key in zip(
        (-0.25, 0.0, 0.25), ("h1_norm", "h2_norm", "global_mean_norm"), strict=True
    ):
        vals = [df.loc[df["run"] == idx, key].iloc[0] for _, idx, _ in chosen]
        axes[0].bar(x + off, vals, width=0.25, label=key, edgecolor=[c for _, _, c in chosen])
    axes[0].set_yscale("log")
    axes[0].set_title("i) ||H1H1^T||, ||S_W||, ||<h><h>^T||")
    axes[0].legend(fontsize=7)
    for off, key in zip(
        (-0.2, 0.2), ("ntk_alignment_logits", "ntk_alignment_features"), strict=True
    ):
        vals = [df.loc[df["run"] == idx, key].iloc[0] for _, idx, _ in chosen]
        axes[1].bar(x + off, vals, width=0.4, label=key, edgecolor=[c for _, _, c in chosen])
    axes[1].set_title("j) final kernel alignment")
    axes[1].legend(fontsize=7)
    for ax in axes:
        ax.set_xticks(
            x,
            [f"{i[:6]}-{'NC' if c == 'tab:red' else 'non'}" for i, _, c in chosen],
            rotation=30,
            fontsize=7,
        )
    run.save_figure(fig, "fig2_i-j")
