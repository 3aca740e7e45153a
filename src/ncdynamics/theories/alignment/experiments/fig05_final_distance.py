"""Fig. 5 of [1]: the final representational distance against eq. (10).

The rates are averaged over ``n_fit_seeds`` trials at the two-point setting's distances;
eq. (10) with the resulting ``rho`` then predicts the final ``||dh||^2`` of fresh trials on a
dx x dy grid.

Protocol of the authors' code (loekvanrossem/universality, ``experiments/rich_structure.ipynb``
cell 2, ``make_plots``), the defaults here: a fit trial is dropped when its final loss
(``0.5 * mse``) exceeds ``fit_drop_loss = 1e-2``, and ``1/tau_h``, ``1/tau_y`` are averaged
separately over the kept ones; each grid trial trains at a fifth of the settings file's
learning rate (``grid_lr_scale = 0.4`` of Table 1's) for at most ``grid_epochs = 40000``
epochs, stops once the loss is below ``grid_stop_loss = 1e-4`` and is dropped when it ends
above ``grid_drop_loss = 1e-3``. ``setting="paper-text"`` keeps the earlier reading: grid
trials at Table 1's rate and epochs, "converged" as ``PairHistory.converged``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ....training import run_trials
from ...claims import Part, claim
from ...experiment import RunWriter
from ..closed_form import final_distance
from ..training import PairHistory
from .history_fit import fit_history
from .pair_records import record_pair
from .plotting import pyplot
from .trials import two_point_trial
from .two_point import Y1, TwoPointSetting, setting_job, table1_configs, two_point_setting

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "FinalDistanceConfig",
    "final_distance_claims",
    "plot_predicted_vs_actual",
    "run_final_distance",
]


@dataclass(frozen=True)
class FinalDistanceConfig:
    """Rates averaged over ``n_fit_seeds`` fit trials, then eq. (10) on a grid (module doc)."""

    archs: tuple[str, ...] = ("shallow", "narrow")
    n_fit_seeds: int = 50
    grid: int = 5
    dx_range: tuple[float, float] = (0.5, 1.5)
    dy_range: tuple[float, float] = (0.0, 1.0)
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2
    #: Two-point setting (``two_point.TWO_POINT_SETTINGS``): the authors' code, or
    #: ``"paper-text"`` (``--set setting=paper-text``).
    setting: str = "authors-code"
    fit_drop_loss: float = 1e-2
    grid_lr_scale: float = 0.4
    grid_epochs: int = 40_000
    grid_stop_loss: float = 1e-4
    grid_drop_loss: float = 1e-3


def run_final_distance(
    config: FinalDistanceConfig, run: RunWriter, *, seed: int, progress: bool
) -> None:
    """Fit trials, then grid trials; figure ``fig5_final_distance``."""
    st = two_point_setting(config.setting)
    jobs, keys = _trial_jobs(config, st, seed)
    t0 = time.perf_counter()
    hists: list[PairHistory] = run_trials(
        two_point_trial, jobs, workers=config.workers, progress=progress, desc="two-point trials"
    )
    train_s = time.perf_counter() - t0
    per: dict[str, Any] = {}
    all_pred: list[float] = []
    all_act: list[float] = []
    groups: list[str] = []
    for a in config.archs:
        per[a] = _architecture_summary(config, run, st, a, hists, keys)
        all_pred += per[a]["predicted"]
        all_act += per[a]["actual"]
        groups += [a] * len(per[a]["predicted"])
    run.save_figure(
        plot_predicted_vs_actual(
            np.array(all_pred),
            np.array(all_act),
            groups,
            "Fig. 5: final ||dh||^2, network vs eq. (10)",
        ),
        "fig5_final_distance",
    )
    run.save_summary(
        {
            "architectures": per,
            "train_seconds": train_s,
            "claims": final_distance_claims(
                {a: (per[a]["pearson_r"], per[a]["median_actual_over_predicted"]) for a in per}
            ),
        }
    )


def _trial_jobs(
    config: FinalDistanceConfig, st: TwoPointSetting, seed: int
) -> tuple[list[tuple[Any, ...]], list[tuple[str, str, float, float]]]:
    """The trials of every architecture, each with its key ``(arch, kind, dx, dy)``: the
    fit trials at the setting's distances, then one grid trial per ``(dx, dy)`` point."""
    cfgs = table1_configs(config.archs, config)
    authors = config.setting == "authors-code"
    dxs = np.linspace(*config.dx_range, config.grid)
    dys = np.linspace(*config.dy_range, config.grid)
    jobs: list[tuple[Any, ...]] = []
    keys = []
    for a in config.archs:
        grid_cfg = cfgs[a]
        if authors:
            grid_cfg = replace(
                grid_cfg,
                lr=grid_cfg.lr * config.grid_lr_scale,
                epochs=config.grid_epochs if config.epochs is None else grid_cfg.epochs,
            )
        for s in range(config.n_fit_seeds):
            jobs.append(setting_job(cfgs[a], seed + s, st))
            keys.append((a, "fit", st.dx, st.dy))
        for i, dx in enumerate(dxs):
            for j, dy in enumerate(dys):
                job = setting_job(
                    grid_cfg, seed + 10_000 + i * config.grid + j, st, dx=float(dx), dy=float(dy)
                )
                stop = config.grid_stop_loss if authors else None
                jobs.append((*job, "post-activation", None, stop))
                keys.append((a, "grid", float(dx), float(dy)))
    return jobs, keys


def _architecture_summary(
    config: FinalDistanceConfig,
    run: RunWriter,
    st: TwoPointSetting,
    a: str,
    hists: Sequence[PairHistory],
    keys: Sequence[tuple[str, str, float, float]],
) -> dict[str, Any]:
    """One architecture's entry of the summary: the rates fitted to its kept fit trials
    (the first fit trial is recorded for ``ncdyn compare``), and eq. (10) with their mean
    ratio against the final distance of each kept grid trial."""
    authors = config.setting == "authors-code"
    fit_all = [h for h, k in zip(hists, keys, strict=True) if k[0] == a and k[1] == "fit"]
    fit_h = [h for h in fit_all if h.loss[-1] <= config.fit_drop_loss] if authors else fit_all
    fits = [fit_history(h, y1=Y1, y2=Y1 + st.dy) for h in fit_h]
    if fit_all:  # the first fit trial, for the confrontation (ncdyn compare)
        record_pair(run, a, fit_all[0])
    nan = float("nan")
    # no kept fit trial: no rates, so nothing to predict (every grid trial unjudged)
    rh = float(np.mean([f.inv_tau_h for f in fits])) if fits else nan
    ry = float(np.mean([f.inv_tau_y for f in fits])) if fits else nan
    log_rho = np.log([f.rho for f in fits]) if fits else np.full(1, nan)
    rho = rh / ry if fits else nan
    pred, act, n_drop = _grid_predictions(config, a, hists, keys, rho, bool(fits))
    pred_a, act_a = np.array(pred), np.array(act)
    r = float(np.corrcoef(pred_a, act_a)[0, 1]) if pred_a.size > 2 else float("nan")
    ratio = float(np.median(act_a / np.maximum(pred_a, 1e-300))) if pred_a.size else float("nan")
    return {
        "inv_tau_h_mean": rh,
        "inv_tau_y_mean": ry,
        "rho": rho,
        "log_rho_mean": float(log_rho.mean()),
        "log_rho_std": float(log_rho.std()),
        "n_fit_kept": len(fit_h),
        "n_fit_dropped": len(fit_all) - len(fit_h),
        "n_grid_converged": int(pred_a.size),
        "n_grid_dropped": n_drop,
        "pearson_r": r,
        "median_actual_over_predicted": ratio,
        "predicted": pred,
        "actual": act,
    }


def _grid_predictions(
    config: FinalDistanceConfig,
    a: str,
    hists: Sequence[PairHistory],
    keys: Sequence[tuple[str, str, float, float]],
    rho: float,
    have_rates: bool,
) -> tuple[list[float], list[float], int]:
    """Eq. (10) at ratio ``rho`` and the final distance of each of ``a``'s grid trials that
    is kept (converged, or under the loss threshold of the authors' code), and the number
    dropped (all of them without rates)."""
    authors = config.setting == "authors-code"
    pred: list[float] = []
    act: list[float] = []
    n_drop = 0
    for h, k in zip(hists, keys, strict=True):
        if k[0] != a or k[1] != "grid":
            continue
        kept = h.loss[-1] <= config.grid_drop_loss if authors else h.converged()
        if not kept or not have_rates:
            n_drop += 1
            continue
        pred.append(float(final_distance(h.a[0], h.b[0], h.X, h.Y, rho)))
        act.append(float(h.a[-1]))
    return pred, act, n_drop


def plot_predicted_vs_actual(
    pred: NDArray[np.float64], actual: NDArray[np.float64], groups: Sequence[str], title: str
) -> Figure:
    """Scatter of eq. (10) against the measured final ``||dh||^2``, one dot per trial."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(4.2, 4))
    for g in dict.fromkeys(groups):
        m = np.array([x == g for x in groups])
        ax.scatter(pred[m], actual[m], s=14, label=g)
    hi = float(max(np.max(pred), np.max(actual))) * 1.05 if len(pred) else 1.0
    ax.plot([0, hi], [0, hi], "k:", lw=1)
    ax.set_xlabel("theory (eq. 10)")
    ax.set_ylabel("network, final ||dh||^2")
    ax.set_title(title, fontsize=9)
    if len(pred):  # no trial to show (all dropped): no legend either
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def final_distance_claims(
    measured: Mapping[str, tuple[float, float]],
) -> list[dict[str, Any]]:
    """The claim record of Fig. 5 of [1]: two parts per architecture.

    Parameters
    ----------
    measured : mapping
        ``{architecture: (Pearson r of final a and eq. (10), median actual/predicted)}``
        over the converged grid trials.
    """
    parts = []
    for a, (r, ratio) in measured.items():
        parts.append(
            Part(
                f"{a}: final distances correlate with eq. (10)", "Pearson r > 0.9", r, bool(r > 0.9)
            )
        )
        parts.append(
            Part(
                f"{a}: final distances on the scale of eq. (10)",
                "median actual/predicted in [0.7, 1.4]",
                ratio,
                bool(0.7 <= ratio <= 1.4),
            )
        )
    return [
        claim(
            "Fig. 5: at small initial weights, with the two effective rates of each "
            "architecture fitted and averaged over 50 trials at one pair of distances (the "
            "text: dx = 0.5, dy = 1; the authors' code: dx^2 = 1, dy^2 = 0.5), eq. (10) "
            "predicts the final representational distance of converged trials on a 5 x 5 grid "
            "of input distances (0.5 to 1.5) and output distances (0 to 1).",
            "Fig. 5, Sec. 4.4, App. B.1",
            parts,
        )
    ]
