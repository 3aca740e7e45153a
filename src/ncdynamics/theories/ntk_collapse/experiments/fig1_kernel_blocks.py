"""Figure 1 of [1]: the class-block structure of the NTK and its alignment with the labels:
``ntk_collapse.fig1``.

One network trained with the recipe of :mod:`~ncdynamics.theories.ntk_collapse.training_recipe`;
panes: the traced logit and feature kernels (a, b) and their block-norm heatmaps (c, d) from
the full kernels at the last epoch, and the kernel-label alignment against epoch (e).
"""

from __future__ import annotations

import dataclasses

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ...experiment import RunWriter
from ..measure import first_epoch_reaching
from ..training_recipe import TrainConfig, final_values, train_one, write_records

__all__ = ["run_fig1"]


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
    rise = {k: (float(a[k].iloc[0]), float(a[k].iloc[-1])) for k in a.columns}
    run.save_summary(
        {
            "init": init,
            "lr": config.lr,
            "final": fin,
            "diag_over_offdiag_block_norm": ratio,
            "epoch_999": first_epoch_reaching(res["train_accuracy"]),
            "alignment_first_last": rise,
            "kernel_seconds": res["seconds_kernel"],
            "nonfinite_metrics_not_written": res["nonfinite"],
            "total_seconds": res["seconds_total"],
            "claims": [
                {
                    "claim": "Fig. 1a-b / Assumption 3.2: the feature kernel is class-block structured "  # noqa: E501
                    "(kappa_d > kappa_c > kappa_n)",
                    "ours": kap,
                    "held": bool(kap[0] > kap[1] > kap[2]),
                },
                {
                    "claim": "Fig. 1c-d: diagonal block norms dominate off-diagonal ones",
                    "ours": ratio,
                    "held": bool(min(ratio.values()) > 1.0),
                },
                {
                    "claim": "Fig. 1e: kernel-label alignment rises during training",
                    "ours": rise,
                    "held": bool(all(last > first for first, last in rise.values())),
                },
            ],
        }
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
