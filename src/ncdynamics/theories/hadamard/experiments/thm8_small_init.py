"""Theorem 8 of [1]: small Gaussian initialisation drives ``Z(t*)`` toward the simplex ETF.

Two checks: the ETF distance of ``Z(t*)`` after gradient descent falls with the width ``d``
(about ``√(K/d)``), and the relative error of the finite-width prediction at ``t*`` (exact
gradient flow) falls with ``ε``. The class-mean logits of the first realisation at the
smallest width are saved along the gradient-descent path (``gd.class_means_logits``, 30
log-spaced iterations up to ``t*``) for ``ncdyn compare``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ...._validation import check_int
from ...claims import Part, claim
from ...experiment import RunWriter
from ...ufm import solve_gradient_flow, state_matrices, unpack_state
from ..fast_batched_gd import run_gd
from ..init import theorem8_init
from ..theorem8 import etf_distance, thm8_prediction, thm8_time
from ._plotting import log_axes, mean_se, pyplot

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["Thm8Config", "run_thm8", "thm8_claims", "thm8_figure"]


@dataclass(frozen=True)
class Thm8Config:
    """Theorem 8: Z(t*) after small Gaussian init vs the predicted ETF-like matrix."""

    K: int = 8
    widths: tuple[int, ...] = (8, 80, 800)
    eps_values: tuple[float, ...] = (1e-2, 1e-4, 1e-6, 1e-8)
    eps_width: float = 1e-4
    n_realizations: int = 5
    learning_rate: float = 0.01


def run_thm8(config: Thm8Config, run: RunWriter, *, seed: int, progress: bool) -> None:
    """ETF distance of Z(t*) against width (GD), and the prediction error against ε (GF)."""
    K = check_int(config.K, "K", low=2)
    R = check_int(config.n_realizations, "n_realizations", low=1)
    rng = np.random.default_rng(seed)
    k_star = int(round(thm8_time(config.eps_width) / config.learning_rate))
    path = _path_steps(k_star)
    etf_rows = []
    for i, d in enumerate(config.widths):
        init = theorem8_init(K, d, eps=config.eps_width, n_realizations=R, rng=rng)
        traj = run_gd(init.W, init.H, steps=path, learning_rate=config.learning_rate)
        W, H = unpack_state(traj.ys[:, -1], K)  # (R, K, d), (R, d, K)
        etf_rows.append(etf_distance(W @ H))
        if i == 0:  # class-mean logits (n = 1: Z itself, rows = classes) along the path
            Z = state_matrices(traj.ys[0], K)[0]  # (n_path, K, K)
            for k, z in zip(path, Z, strict=True):
                run.save_array("gd.class_means_logits", int(k), z.T)
    error_rows = []
    for eps in config.eps_values:
        errs = []
        for _ in range(R):
            init = theorem8_init(K, K, eps=eps, rng=rng)
            flow = solve_gradient_flow(init.W[0], init.H[0], [0.0, thm8_time(eps)])
            W1, H1 = unpack_state(flow.ys[-1], K)
            Z = W1 @ H1
            pred = thm8_prediction(init.A1[0], init.A0[0], eps)
            errs.append(float(np.linalg.norm(Z - pred) / np.linalg.norm(pred)))
        error_rows.append(errs)
    etf, errors = np.array(etf_rows), np.array(error_rows)
    for i, d in enumerate(config.widths):
        run.log(int(d), {"etf_distance": float(etf[i].mean()), "sqrt_K_over_d": np.sqrt(K / d)})
    run.flush()
    run.save_array("etf_distance", 0, etf)
    run.save_array("prediction_error", 0, errors)
    run.save_figure(thm8_figure(config.widths, etf, config.eps_values, errors, n_classes=K), "thm8")
    em, pm = etf.mean(axis=1), errors.mean(axis=1)
    run.save_summary(
        {
            "etf_distance_mean": dict(zip(map(str, config.widths), em.tolist(), strict=True)),
            "prediction_error_mean": dict(
                zip(map(str, config.eps_values), pm.tolist(), strict=True)
            ),
            "claims": thm8_claims(config.widths, etf, config.eps_values, errors),
        }
    )


def thm8_claims(
    widths: Sequence[int],
    etf_dist: NDArray[np.float64],
    eps_values: Sequence[float],
    errors: NDArray[np.float64],
) -> list[dict[str, Any]]:
    """The claim record of Theorem 8 from the ETF distances ``etf_dist`` (n_widths, R) of
    Z(t*) after GD and the relative prediction errors ``errors`` (n_eps, R) of exact gradient
    flow, means over the R draws.

    The rate √(K/d) is our reading of [1]'s (1/d) X Xᵀ → I_K for the K x d Gaussian X of
    App. D.6: each entry of (1/d) X Xᵀ - I_K is off by about 1/√d, so the K x K matrix by
    about K/√d, and relative to ‖I_K‖_F = √K by about √(K/d). It is judged by the fitted
    log-log slope of the mean distance against d, -1/2 ± 0.1."""
    em = np.asarray(etf_dist, dtype=np.float64).mean(axis=1)
    pm = np.asarray(errors, dtype=np.float64).mean(axis=1)
    w = np.asarray(widths, dtype=np.float64)
    eps = np.asarray(eps_values, dtype=np.float64)
    order = np.argsort(-eps)  # decreasing eps
    slope = float(np.polyfit(np.log(w), np.log(em), 1)[0]) if w.size >= 2 else float("nan")
    return [
        claim(
            "With a small Gaussian initialisation W(0) = eps d^{-1/2} A1, H(0) = eps d^{-1/2} "
            "A0, the logits at t* = log(1/eps)/(2 sqrt(n)) approach the finite-width "
            "prediction (eps/(2 d sqrt(n))) S X X^T (S kron 1_n^T) as eps -> 0, and as the "
            "width d grows that prediction tends to the simplex ETF direction S kron 1_n^T, "
            "so overparameterisation drives Z(t*) toward the ETF (about like sqrt(K/d)).",
            "Thm 8, §5, App. D.6",
            [
                Part(
                    "prediction error falls as eps -> 0",
                    "mean relative error strictly decreasing over decreasing eps",
                    pm[order].tolist(),
                    bool(pm.size >= 2 and np.all(np.diff(pm[order]) < 0)),
                ),
                Part(
                    "ETF distance of Z(t*) falls with d",
                    "mean ETF distance strictly decreasing over increasing d",
                    em.tolist(),
                    bool(em.size >= 2 and np.all(np.diff(em[np.argsort(w)]) < 0)),
                ),
                Part(
                    "about like sqrt(K/d)",
                    "fitted slope of log distance vs log d within -1/2 ± 0.1",
                    slope,
                    bool(abs(slope + 0.5) < 0.1),
                ),
            ],
        )
    ]


def _path_steps(k_star: int, n_log: int = 30) -> list[int]:
    """0 and ``n_log`` log-spaced iterations up to ``k_star`` (which is last)."""
    k = np.unique(np.round(np.geomspace(1, max(k_star, 1), n_log)).astype(np.int64))
    return sorted({0, k_star, *(int(v) for v in k)})


def thm8_figure(
    widths: Sequence[int],
    etf_dist: NDArray[np.float64],
    eps_values: Sequence[float],
    errors: NDArray[np.float64],
    *,
    n_classes: int,
) -> Figure:
    """Theorem 8 check: ETF distance vs width, prediction error vs ε (mean ± SE).

    ``etf_dist`` has shape (n_widths, R) and ``errors`` (n_eps, R); ``n_classes`` is ``K``
    in [1], for the reference curve ``√(K/d)``.
    """
    K = n_classes
    plt = pyplot()
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    m, se = mean_se(np.asarray(etf_dist), axis=1)
    axes[0].errorbar(widths, m, yerr=se, marker="o", label="measured at t*")
    w = np.asarray(widths, dtype=float)
    axes[0].plot(w, np.sqrt(K / w), "k--", lw=0.8, label="√(K/d)")
    axes[0].legend(fontsize=8)
    log_axes(axes[0], y=True)
    axes[0].set_xlabel("width d")
    axes[0].set_title("ETF distance of Z(t*)")
    m, se = mean_se(np.asarray(errors), axis=1)
    axes[1].errorbar(eps_values, m, yerr=se, marker="o")
    log_axes(axes[1], y=True)
    axes[1].set_xlabel("ε")
    axes[1].set_title("‖Z(t*) − Z_pred‖ / ‖Z_pred‖")
    for ax in axes:
        ax.grid(alpha=0.3)
    fig.subplots_adjust(hspace=0.3, wspace=0.25)
    return fig
