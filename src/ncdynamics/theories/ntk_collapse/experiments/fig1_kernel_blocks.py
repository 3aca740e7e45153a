"""Figure 1 of [1]: the class-block structure of the NTK and its alignment with the labels:
``ntk_collapse.fig1``.

One network trained with the recipe of :mod:`~ncdynamics.theories.ntk_collapse.training_recipe`;
panes: the traced logit and feature kernels (a, b) and their block-norm heatmaps (c, d) from
the full kernels at the last epoch, and the kernel-label alignment against epoch (e).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ....probes.kernels import kernel_block_stats
from ...claims import Part, claim
from ...experiment import RunWriter
from ..measure import first_epoch_reaching
from ..training_recipe import TrainConfig, final_values, train_one, write_records

__all__ = ["BLOCK_RESIDUAL_MAX", "RISING_STEPS", "fig1_claims", "run_fig1"]

#: "Class-block structured": the final traced kernel's relative distance to its three-value
#: block fit (``block_residual`` of :func:`ncdynamics.probes.kernels.kernel_block_stats`) is
#: at most this.
BLOCK_RESIDUAL_MAX = 0.5
#: "Alignment increases during training": above its first value at every later record, and
#: at least this fraction of the record-to-record steps rise.
RISING_STEPS = 0.75


def run_fig1(config: TrainConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Figure 1: traced kernels, block-norm heatmaps and alignment against epoch."""
    init = config.init
    res = train_one(dataclasses.asdict(config), init, config.lr, seed, True)
    if res["diverged"]:
        raise FloatingPointError(f"the Figure 1 run diverged: {res['diverged']}")
    frame = write_records(run, res, "")
    fk = res["full_kernels"]
    for name, arr in fk.items():
        run.save_array(f"final_{name}", config.epochs, arr)
    _plot(run, frame, fk)
    bn = {o: fk[f"block_norms_{o}"] for o in ("logits", "features")}
    ratio = {
        o: float(np.mean(np.diag(b)) / np.mean(b[~np.eye(len(b), dtype=bool)]))
        for o, b in bn.items()
    }
    fin = final_values(frame)
    a = frame[["ntk_alignment_features", "ntk_alignment_logits"]].dropna()
    kap = (fin["ntk_kappa_d"], fin["ntk_kappa_c"], fin["ntk_kappa_n"])
    gam = (_last(frame, "ntk_gamma_d"), _last(frame, "ntk_gamma_c"), _last(frame, "ntk_gamma_n"))
    rise = {k: (float(a[k].iloc[0]), float(a[k].iloc[-1])) for k in a.columns}
    series = {k: a[k].to_numpy(dtype=float).tolist() for k in a.columns}
    # relative distance of each final traced kernel to its three-value block fit
    residual = {
        o: kernel_block_stats(fk[f"traced_{o}"], res["kernel_labels"]).block_residual
        for o in ("logits", "features")
    }
    diag_h = np.diag(bn["features"])
    spread = float(np.std(diag_h) / np.mean(diag_h))
    run.save_summary(
        {
            "init": init,
            "lr": config.lr,
            "final": fin,
            "logit_block_values": gam,
            "diag_over_offdiag_block_norm": ratio,
            "feature_diag_block_norm_cv": spread,
            "epoch_999": first_epoch_reaching(res["train_accuracy"]),
            "alignment_first_last": rise,
            "block_residual": residual,
            "kernel_seconds": res["seconds_kernel"],
            "nonfinite_metrics_not_written": res["nonfinite"],
            "total_seconds": res["seconds_total"],
            "claims": fig1_claims(kap, gam, ratio, spread, series, residual),
        }
    )


def _last(frame: pd.DataFrame, key: str) -> float:
    col = frame[key].dropna() if key in frame.columns else pd.Series(dtype=float)
    return float(col.iloc[-1]) if len(col) else float("nan")


def fig1_claims(
    kappa: tuple[float, float, float],
    gamma: tuple[float, float, float],
    block_ratio: dict[str, float],
    diag_spread: float,
    alignment: Mapping[str, Sequence[float]],
    residual: dict[str, float],
) -> list[dict[str, Any]]:
    """The claims of Fig. 1 of [1] (Sec. 3, App. C.1) from one trained network's measurements.

    ``kappa`` and ``gamma`` are the final block values (diagonal, same class, other class) of
    the feature and logit kernels (Assumption 3.2, Def. 3.1); ``block_ratio`` the mean
    diagonal over the mean off-diagonal block norm per kernel (panes c-d);
    ``diag_spread`` the coefficient of variation of the diagonal feature block norms;
    ``alignment`` the kernel-label alignment at every record per kernel (pane e);
    ``residual`` the final relative block residual per kernel (``"logits"``, ``"features"``).
    """
    kd, kc, kn = kappa
    gd, gc, gn = gamma
    structure = claim(
        "After training, both the traced NTK and the traced last-layer feature kernel are "
        "class-block structured as Assumption 3.2 describes: a sample's value with itself "
        "exceeds the value between two samples of one class, which exceeds the value between "
        "samples of different classes.",
        "Fig. 1a-b, Assumption 3.2, Sec. 3",
        [
            Part("feature kernel: kappa_d > kappa_c", "kappa_d > kappa_c", [kd, kc], kd > kc),
            Part("feature kernel: kappa_c > kappa_n", "kappa_c > kappa_n", [kc, kn], kc > kn),
            Part("logit kernel: gamma_d > gamma_c", "gamma_d > gamma_c", [gd, gc], gd > gc),
            Part("logit kernel: gamma_c > gamma_n", "gamma_c > gamma_n", [gc, gn], gc > gn),
            *(
                Part(
                    f"{name} kernel: close to its block fit",
                    f"|K - block fit|_F / |K|_F <= {BLOCK_RESIDUAL_MAX} (last record)",
                    residual[key],
                    bool(residual[key] <= BLOCK_RESIDUAL_MAX),
                )
                for name, key in (("feature", "features"), ("logit", "logits"))
            ),
        ],
    )
    blocks = claim(
        "After training, the kernels between an output (or last-layer neuron) and itself "
        "dominate those between different outputs (neurons), for both the logit and the "
        "feature kernel; the diagonal norms are not equal across neurons.",
        "Fig. 1c-d, App. C.1",
        [
            Part(
                "logit diagonal blocks dominate",
                "mean diagonal / mean off-diagonal block norm > 1",
                block_ratio["logits"],
                block_ratio["logits"] > 1.0,
            ),
            Part(
                "feature diagonal blocks dominate",
                "mean diagonal / mean off-diagonal block norm > 1",
                block_ratio["features"],
                block_ratio["features"] > 1.0,
            ),
            Part(
                "diagonal feature block norms vary across neurons",
                "std / mean of the diagonal feature block norms > 0.1",
                diag_spread,
                diag_spread > 0.1,
            ),
        ],
    )
    rises = claim(
        "The alignment of the traced NTK and of the traced feature kernel with the class "
        "labels Y^T Y increases during training.",
        "Fig. 1e, Sec. 3",
        [
            _rises(key.removeprefix("ntk_alignment_"), np.asarray(values, dtype=float))
            for key, values in sorted(alignment.items())
        ],
    )
    return [structure, blocks, rises]


def _rises(name: str, a: NDArray[np.float64]) -> Part:
    """Part "alignment rises": above the first record at every later one, and at least
    :data:`RISING_STEPS` of the steps rise (ours: [fraction above start, fraction rising])."""
    above = float(np.mean(a[1:] > a[0])) if a.size > 1 else float("nan")
    up = float(np.mean(np.diff(a) > 0)) if a.size > 1 else float("nan")
    return Part(
        f"{name} alignment rises",
        f"above the first record at every later record, and >= {RISING_STEPS} of the "
        "record-to-record steps rise",
        [above, up],
        bool(above == 1.0 and up >= RISING_STEPS),
    )


def _plot(run: RunWriter, frame: pd.DataFrame, kernels: dict[str, NDArray[np.float64]]) -> None:
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
