"""Figure 2 of [1]: NC models have a small invariant, non-NC models do not:
``ntk_collapse.fig2`` (and, with cross-entropy, ``ntk_collapse.fig12``).

A sweep over learning rates and three initialisations, each run trained with the recipe of
:mod:`~ncdynamics.theories.ntk_collapse.training_recipe`. Per init an NC and a non-NC model
are chosen (:func:`~ncdynamics.theories.ntk_collapse.measure.select_nc_models`); panes: the
invariant norm ``m ||E||``, its alignment (28) and NC1-NC3 against epoch for the chosen models
(a-e), final NC metrics and test accuracy against the learning rate (f-h), the norms of
``H1 H1^T``, ``S_W`` and ``<h><h>^T`` (i) and the final kernel alignments (j). Each run's
summary row carries the theory's prediction of NC1 from its measured invariant
(:func:`~ncdynamics.theories.ntk_collapse.estimate.predict_collapse`).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ....training import run_trials
from ...experiment import RunWriter
from ..estimate import predict_collapse
from ..measure import first_epoch_reaching, select_nc_models
from ..training_recipe import TrainConfig, final_values, train_one, write_records

__all__ = ["run_fig2"]


def _prediction(result: dict[str, Any], m: int) -> dict[str, float]:
    """The theory's reading of a run's last invariant record (NaN when none was recorded)."""
    arr = result["arrays"]
    if "invariant_gram_w" not in arr:
        return {"collapses": float("nan"), "residual_fraction": float("nan")}
    step = max(arr["invariant_gram_w"])
    pred = predict_collapse(
        arr["invariant_gram_w"][step],
        arr["invariant_class_means"][step],
        arr["invariant_within_scatter"][step],
        arr["invariant_kappas"][step],
        m,
    )
    return {
        "collapses": float(pred.collapses),
        "residual_fraction": pred.residual_fraction,
        "slowest_rate": pred.slowest_rate,
    }


def run_fig2(config: TrainConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Figure 2 (and 12 with cross-entropy): NC and non-NC models per init, the LR sweep."""
    cfg_d = dataclasses.asdict(config)
    args = [
        (cfg_d, init, lr, seed + 1000 * i + j)
        for i, init in enumerate(config.inits)
        for j, lr in enumerate(config.lrs)
    ]
    results = run_trials(
        train_one, args, workers=config.workers, progress=progress, desc="ntk_collapse runs"
    )
    table, frames = [], []
    for k, res in enumerate(results):
        frame = write_records(run, res, f"run{k:02d}/")
        frames.append(frame)
        row = {
            "run": k,
            "init": res["init"],
            "lr": res["lr"],
            **final_values(frame),
            "epoch_999": first_epoch_reaching(res["train_accuracy"]),
            "diverged": bool(res["diverged"]),
            "nonfinite": ",".join(res["nonfinite"]),
            "final_epoch_train_accuracy": float(res["train_accuracy"][-1]),
            "seconds_total": res["seconds_total"],
            "seconds_kernel": res["seconds_kernel"],
            **_prediction(res, config.kernel_per_class),
        }
        table.append(row)
    df = pd.DataFrame(table)
    run.save_array("sweep_table", 0, df.select_dtypes("number").to_numpy())
    choices, per_init = {}, []
    for init in config.inits:
        sub = df[df["init"] == init]
        ch = select_nc_models(
            sub["nc/nc3"].to_numpy(), sub["final_epoch_train_accuracy"].to_numpy()
        )
        nc, non = sub.iloc[ch.nc], sub.iloc[ch.non_nc]
        choices[init] = (int(nc["run"]), int(non["run"]))
        per_init.append(
            {
                "init": init,
                "rule": ch.rule,
                "nc_run": int(nc["run"]),
                "non_nc_run": int(non["run"]),
                "nc_lr": float(nc["lr"]),
                "non_nc_lr": float(non["lr"]),
                "nc3": (float(nc["nc/nc3"]), float(non["nc/nc3"])),
                "invariant_norm": (float(nc["invariant_norm"]), float(non["invariant_norm"])),
                "invariant_alignment": (
                    float(nc["invariant_alignment"]),
                    float(non["invariant_alignment"]),
                ),
                "distinct": bool(ch.nc != ch.non_nc),
            }
        )
    _plot(run, frames, df, choices, config)
    claims = _claims(df, per_init)
    run.save_summary(
        {
            "runs": table,
            "chosen": per_init,
            "claims": claims,
            "kernel_fraction_of_time": float(
                df["seconds_kernel"].sum() / df["seconds_total"].sum()
            ),
        }
    )


def _spearman(a: NDArray[Any], b: NDArray[Any]) -> float:
    """Spearman rank correlation over the pairs where both are finite (NaN under 3 pairs)."""
    ok = np.isfinite(a) & np.isfinite(b)
    if ok.sum() < 3:
        return float("nan")
    ra = pd.Series(a[ok]).rank().to_numpy()
    rb = pd.Series(b[ok]).rank().to_numpy()
    return float(np.corrcoef(ra, rb)[0, 1])


def _claims(df: pd.DataFrame, per_init: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The claims of Fig. 2 (and App. B.4, App. C, Sec. 6) checked on the sweep."""
    pairs = [p for p in per_init if p["distinct"]]
    smaller = [p["invariant_norm"][0] < p["invariant_norm"][1] for p in pairs]
    higher = [p["invariant_alignment"][0] > p["invariant_alignment"][1] for p in pairs]
    C = 10
    rho_nc3 = _spearman(df["invariant_norm"].to_numpy(), df["nc/nc3"].to_numpy())
    rho_nc1 = _spearman(df["invariant_norm"].to_numpy(), df["nc/nc1_std"].to_numpy())
    alpha = df["alpha"].to_numpy()
    gm_ratio = (df["global_mean_norm"] / df["h1_norm"]).to_numpy()
    return [
        {
            "claim": "Fig. 2a: NC models have a smaller invariant norm m||E|| than non-NC models "
            "(per init)",
            "ours": [p["invariant_norm"] for p in pairs],
            "held": bool(pairs) and all(smaller),
        },
        {
            "claim": "Fig. 2b: NC models have a higher invariant alignment (28)",
            "ours": [p["invariant_alignment"] for p in pairs],
            "held": bool(pairs) and all(higher),
        },
        {
            "claim": "(sweep) invariant norm and final NC3 / NC1 are positively rank-correlated",
            "ours": {"spearman_nc3": rho_nc3, "spearman_nc1": rho_nc1},
            "held": bool(rho_nc3 > 0 and rho_nc1 > 0),
        },
        {
            "claim": "App. B.4: alpha << 1/C",
            "ours": float(np.nanmax(alpha)),
            "held": bool(np.nanmax(alpha) < 0.5 / C),
        },
        {
            "claim": "App. C pane i: ||<h><h>^T|| is small relative to ||H1 H1^T||",
            "ours": float(np.nanmax(gm_ratio)),
            "held": bool(np.nanmax(gm_ratio) < 0.1),
        },
        {
            "claim": "Sec. 6: non-NC models still reach ~100% train accuracy",
            "ours": [
                float(df.loc[df["run"] == p["non_nc_run"], "final_epoch_train_accuracy"].iloc[0])
                for p in pairs
            ],
            "held": bool(pairs)
            and all(
                float(df.loc[df["run"] == p["non_nc_run"], "final_epoch_train_accuracy"].iloc[0])
                >= 0.99
                for p in pairs
            ),
        },
    ]


_PANES = (
    ("invariant_norm", "a) m ||E||_F", True),
    ("invariant_alignment", "b) alignment (28)", False),
    ("nc/nc1_std", "c) NC1", True),
    ("nc/nc2_etf", "d) NC2", True),
    ("nc/nc3", "e) NC3", True),
)
_MARKERS = ("o", "s", "^", "D", "v")


def _plot(
    run: RunWriter,
    frames: list[pd.DataFrame],
    df: pd.DataFrame,
    choices: dict[str, tuple[int, int]],
    config: TrainConfig,
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
