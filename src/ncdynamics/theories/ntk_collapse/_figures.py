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
        line, = ax.semilogy(steps, np.maximum(v, 1e-300), label=f"{name.strip('_')}")
        ax.semilogy(steps, v[0] * np.abs(1 - eta * val) ** steps, ls=":", color=line.get_color())
    ax.set_ylim(1e-16, None)
    ax.set_xlabel("GD step")
    ax.set_ylabel("norm of residual phase")
    ax.set_title("Residual phases (dotted: (1 - eta lambda)^t)")
    ax.legend()
    run.save_figure(fig, "residual_phases")


def invariant(run: Any, ts: np.ndarray, flow_drift: np.ndarray, losses: np.ndarray,
              gd: dict[float, tuple[np.ndarray, np.ndarray]]) -> None:
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


def collapse_panels(run: Any, ts: np.ndarray, series: dict[str, dict[str, np.ndarray]],
                    name: str, *, m: int) -> None:
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
