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
import torch
from numpy.typing import NDArray

from ....training import run_trials
from ...claims import Part, claim
from ...experiment import RunWriter
from ..estimate import predict_collapse
from ..measure import first_epoch_reaching, select_nc_models
from ..training_recipe import TrainConfig, final_values, train_one, write_records

__all__ = ["NC3_COLLAPSED", "fig2_claims", "run_fig2", "trained_runs"]


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


def _torch_tree(obj: Any) -> Any:
    """``obj`` with its NumPy arrays and scalars as tensors and Python numbers (what a
    checkpoint may hold)."""
    if isinstance(obj, np.ndarray):
        return torch.from_numpy(obj.copy())
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, dict):
        return {k: _torch_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_torch_tree(v) for v in obj)
    return obj


def _numpy_tree(obj: Any) -> Any:
    """The inverse of :func:`_torch_tree`: tensors back to NumPy arrays."""
    if isinstance(obj, torch.Tensor):
        return obj.numpy()
    if isinstance(obj, dict):
        return {k: _numpy_tree(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(_numpy_tree(v) for v in obj)
    return obj


def _trial_tag(k: int) -> str:
    return f"trial{k:03d}"


def trained_runs(
    run: RunWriter, args: list[tuple[Any, ...]], *, workers: int, progress: bool
) -> list[dict[str, Any]]:
    """:func:`train_one` for every entry of ``args``, keeping each finished training.

    Each result is saved as the run's checkpoint ``trial<k>`` when its training ends, and a
    result already saved for the same init, learning rate and seed is read back instead of
    trained again, so a sweep killed part-way (or stopped by a time budget) resumes with the
    trainings it had not finished.
    """
    results: dict[int, dict[str, Any]] = {}
    for k, (_, init, lr, trial_seed) in enumerate(args):
        saved = run.load_checkpoint(_trial_tag(k))
        if saved is not None:
            res = _numpy_tree(saved["result"])
            if (res["init"], res["lr"], res["seed"]) == (init, lr, trial_seed):
                results[k] = res
    todo = [k for k in range(len(args)) if k not in results]

    def keep(i: int, res: dict[str, Any]) -> None:
        run.save_checkpoint(0, {"result": _torch_tree(res)}, tag=_trial_tag(todo[i]), keep=1)

    fresh = run_trials(
        train_one,
        [args[k] for k in todo],
        workers=workers,
        progress=progress,
        desc="ntk_collapse runs",
        on_result=keep,
    )
    results.update(zip(todo, fresh, strict=True))
    return [results[k] for k in range(len(args))]


def run_fig2(config: TrainConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Figure 2 (and 12 with cross-entropy): NC and non-NC models per init, the LR sweep.

    Resumable: each finished training is kept in the run (:func:`trained_runs`).
    """
    cfg_d = dataclasses.asdict(config)
    args = [
        (cfg_d, init, lr, seed + 1000 * i + j)
        for i, init in enumerate(config.inits)
        for j, lr in enumerate(config.lrs)
    ]
    results = trained_runs(run, args, workers=config.workers, progress=progress)
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
    claims = fig2_claims(df, per_init, config.loss)
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


#: Final NC3 below which a run counts as collapsed: our reading of "exhibits NC" (the paper
#: gives no threshold; its NC models end near 0.1).
NC3_COLLAPSED = 0.2


def _fraction(flags: list[bool]) -> float:
    """Share of true flags (NaN for none)."""
    return float(np.mean(flags)) if flags else float("nan")


def _at_least(value: float, threshold: float) -> bool:
    return bool(np.isfinite(value) and value >= threshold)


def fig2_claims(
    df: pd.DataFrame, per_init: list[dict[str, Any]], loss: str = "mse"
) -> list[dict[str, Any]]:
    """The claims of Fig. 2 of [1] (Fig. 12 with cross-entropy) checked on a sweep.

    ``df`` holds one row per run (``run``, ``lr``, final values of
    :data:`~..training_recipe.FINAL_KEYS`, ``final_epoch_train_accuracy``); ``per_init``
    the NC / non-NC choice per init (``nc_run``, ``non_nc_run``, ``distinct``). Per-init
    conditions are graded: ``ours`` is the fraction of the inits where the condition holds
    (an init whose two picks coincide has no contrast and counts as failing).
    """
    C = 10
    fig = "Fig. 2" if loss == "mse" else "Fig. 12"
    row = {int(r["run"]): r for r in df.to_dict("records")}
    n_inits = len(per_init)

    def per_init_fraction(test: Any) -> float:
        flags = [
            bool(p["distinct"]) and bool(test(row[p["nc_run"]], row[p["non_nc_run"]]))
            for p in per_init
        ]
        return _fraction(flags) if n_inits else float("nan")

    def lower(key: str) -> Any:
        return lambda nc, non: nc[key] < non[key]

    def higher(key: str) -> Any:
        return lambda nc, non: nc[key] > non[key]

    every = f"fraction of the {n_inits} inits = 1"
    f_collapsed = per_init_fraction(lambda nc, non: nc["nc/nc3"] < NC3_COLLAPSED)
    f_norm = per_init_fraction(lower("invariant_norm"))
    f_align1 = per_init_fraction(lambda nc, non: nc["invariant_alignment"] > 0.9)
    f_align = per_init_fraction(higher("invariant_alignment"))
    contrast = claim(
        "For each initialisation, a model that exhibits neural collapse has a small "
        "invariant norm ||E||_F and an invariant alignment (28) close to 1, while a model "
        "that does not exhibit collapse has a larger ||E||_F and a lower alignment."
        + ("" if loss == "mse" else " (With cross-entropy the same correlation persists.)"),
        f"{fig}a-b, Sec. 6" if loss == "mse" else "Fig. 12a-b, App. C",
        [
            Part(
                "the NC model exhibits collapse",
                f"NC model's final NC3 < {NC3_COLLAPSED} (ours: the paper gives no "
                f"threshold); {every}",
                f_collapsed,
                f_collapsed == 1.0,
            ),
            Part(
                "NC model has the smaller m||E||",
                f"NC model's m||E||_F < non-NC model's; {every}",
                f_norm,
                f_norm == 1.0,
            ),
            Part(
                "NC model's invariant alignment is close to 1",
                f"NC model's alignment (28) > 0.9; {every}",
                f_align1,
                f_align1 == 1.0,
            ),
            Part(
                "non-NC model has the lower invariant alignment",
                f"non-NC model's alignment (28) < NC model's; {every}",
                f_align,
                f_align == 1.0,
            ),
        ],
    )
    finite = df[np.isfinite(df["test/accuracy"].to_numpy(dtype=float))]
    best = float(finite["test/accuracy"].max()) if len(finite) else float("nan")
    top = finite[finite["test/accuracy"] >= best - 0.01]
    top_nc = top["nc/nc3"].to_numpy(dtype=float) < NC3_COLLAPSED
    f_top = _fraction(top_nc.tolist())
    n_top_non = int(np.sum(~top_nc))
    f_train = per_init_fraction(lambda nc, non: non["final_epoch_train_accuracy"] >= 0.99)
    accuracy = claim(
        "Most models with high test accuracy exhibit neural collapse, but some models with "
        "comparable test accuracy do not, and these still reach about 100% training accuracy.",
        f"{fig}f-h, Sec. 6",
        [
            Part(
                "most high-test-accuracy models exhibit NC",
                f"among runs within 0.01 of the best test accuracy, fraction with final "
                f"NC3 < {NC3_COLLAPSED} > 0.5",
                f_top,
                _at_least(f_top, 0.5 + 1e-12),
            ),
            Part(
                "some comparable-accuracy models do not",
                f"among the same runs, number with final NC3 >= {NC3_COLLAPSED} >= 1",
                n_top_non,
                n_top_non >= 1,
            ),
            Part(
                "non-NC models reach ~100% train accuracy",
                f"non-NC model's last-epoch train accuracy >= 0.99; {every}",
                f_train,
                f_train == 1.0,
            ),
        ],
    )
    rho_nc3 = _spearman(df["invariant_norm"].to_numpy(), df["nc/nc3"].to_numpy())
    rho_nc1 = _spearman(df["invariant_norm"].to_numpy(), df["nc/nc1_std"].to_numpy())
    sweep = claim(
        "Over the learning-rate sweep, a smaller invariant norm goes with stronger collapse "
        "(smaller final NC1 and NC3).",
        f"{fig}a, c, e, Sec. 6",
        [
            Part(
                "m||E|| rank-correlates with final NC3",
                "Spearman rho(m||E||_F, NC3) > 0 over the finite runs",
                rho_nc3,
                rho_nc3 > 0,
            ),
            Part(
                "m||E|| rank-correlates with final NC1",
                "Spearman rho(m||E||_F, NC1 std) > 0 over the finite runs",
                rho_nc1,
                rho_nc1 > 0,
            ),
        ],
    )
    gm = (df["global_mean_norm"] / df["h1_norm"]).to_numpy(dtype=float)
    gm = gm[np.isfinite(gm)]
    f_gm = _fraction((gm < 0.1).tolist())
    f_h2 = per_init_fraction(lambda nc, non: nc["h2_norm"] < 0.1 * nc["h1_norm"])
    f_h2c = per_init_fraction(lower("h2_norm"))
    norms = claim(
        "In every setup the global feature mean is small next to the class means "
        "(||<h><h>^T|| << ||H1 H1^T||), and the within-class term H2 H2^T is small in the "
        "models that exhibit collapse.",
        f"{fig}i (App. C), Sec. 5.2",
        [
            Part(
                "global mean small",
                "fraction of finite runs with ||<h><h>^T|| / ||H1 H1^T|| < 0.1 = 1",
                f_gm,
                f_gm == 1.0,
            ),
            Part(
                "within-class term small in NC models",
                f"NC model's ||S_W|| / ||H1 H1^T|| < 0.1; {every}",
                f_h2,
                f_h2 == 1.0,
            ),
            Part(
                "within-class term smaller in NC than in non-NC models",
                f"NC model's ||S_W|| < non-NC model's; {every}",
                f_h2c,
                f_h2c == 1.0,
            ),
        ],
    )
    alpha = df["alpha"].to_numpy(dtype=float)
    alpha = alpha[np.isfinite(alpha)]
    f_alpha = _fraction((alpha * C < 0.1).tolist())
    small_alpha = claim(
        "In trained networks the feature-kernel ratio alpha = kappa_n m / (mu_class + "
        "C kappa_n m) is much smaller than 1/C.",
        "App. B.4, Sec. 5.2",
        [
            Part(
                "alpha << 1/C",
                "fraction of finite runs with alpha < 0.1 / C (an order of magnitude) = 1",
                f_alpha,
                f_alpha == 1.0,
            )
        ],
    )
    f_kh = per_init_fraction(higher("ntk_alignment_features"))
    f_kf = per_init_fraction(higher("ntk_alignment_logits"))
    kernels = claim(
        "At the end of training the kernel-label alignment of the NTK and of the feature "
        "kernel is typically higher in models that exhibit collapse.",
        f"{fig}j, App. C",
        [
            Part(
                "feature-kernel alignment higher in NC models",
                f"NC model's final A(K_h) > non-NC model's; fraction of the {n_inits} inits "
                ">= 2/3 ('typically')",
                f_kh,
                _at_least(f_kh, 2 / 3 - 1e-12),
            ),
            Part(
                "NTK alignment higher in NC models",
                f"NC model's final A(K_f) > non-NC model's; fraction of the {n_inits} inits "
                ">= 2/3 ('typically')",
                f_kf,
                _at_least(f_kf, 2 / 3 - 1e-12),
            ),
        ],
    )
    out = [contrast, accuracy, sweep, norms, small_alpha, kernels]
    if loss != "mse":
        out.append(
            claim(
                "With cross-entropy the models reach better NC metrics than with MSE but with "
                "a much larger invariant norm.",
                "Fig. 12, App. C",
                [
                    Part(
                        "better NC metrics than with MSE",
                        "final NC3 of the NC models below those of the MSE sweep (Fig. 2)",
                        "not measured: needs the MSE sweep; compare with ntk_collapse.fig2",
                        False,
                    ),
                    Part(
                        "larger invariant norm than with MSE",
                        "m||E||_F of the NC models above those of the MSE sweep (Fig. 2)",
                        "not measured: needs the MSE sweep; compare with ntk_collapse.fig2",
                        False,
                    ),
                ],
            )
        )
    return out


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
    _plot_chosen(run, frames, df, choices)
    _plot_lr_sweep(run, df, config)
    _plot_norms(run, df, choices)


def _plot_chosen(
    run: RunWriter,
    frames: list[pd.DataFrame],
    df: pd.DataFrame,
    choices: dict[str, tuple[int, int]],
) -> None:
    """Panes a-e of Figure 2: the invariant and NC of the chosen NC and non-NC models."""
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


def _plot_lr_sweep(run: RunWriter, df: pd.DataFrame, config: TrainConfig) -> None:
    """Panes f-h of Figure 2: final NC and test accuracy against the learning rate, per init."""
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


def _plot_norms(run: RunWriter, df: pd.DataFrame, choices: dict[str, tuple[int, int]]) -> None:
    """Panes i-j of Figure 2: final feature norms and kernel alignments of the chosen models."""
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
