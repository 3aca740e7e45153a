"""The two-point recipe shared by Figs. 2, 3, 10, 11 and 15 of [1].

Table 1 networks are trained on two points ``dx = 0.5``, ``dy = 1`` apart (targets ``Y1`` and
``Y1 + 1``), eq. (7) is fitted to each recorded history, and the per-network numbers are
logged and summarised the same way in every figure.
"""

from __future__ import annotations

import time
from typing import Any, Protocol

from ....training import run_trials
from ...experiment import RunWriter
from ..training import NetConfig, PairHistory
from .history_fit import HistoryFit, fit_history, plateau_epochs
from .pair_records import record_pair
from .trials import net_config, two_point_trial

__all__ = [
    "Y1",
    "NetSizes",
    "TrialSettings",
    "arch_summary",
    "log_history",
    "table1_configs",
    "train_and_fit",
]

#: Target of the first point; the second point's target is ``Y1 + dy``.
Y1 = 0.6


class NetSizes(Protocol):
    """Size overrides of an experiment config (``None`` keeps the paper's value)."""

    @property
    def width(self) -> int | None: ...

    @property
    def depth(self) -> int | None: ...

    @property
    def epochs(self) -> int | None: ...


class TrialSettings(NetSizes, Protocol):
    """Size overrides and the number of worker processes."""

    @property
    def workers(self) -> int: ...


def table1_configs(archs: tuple[str, ...], config: NetSizes) -> dict[str, NetConfig]:
    """The Table 1/2 rows named in ``archs`` with ``config``'s size overrides."""
    return {
        a: net_config(a, width=config.width, depth=config.depth, epochs=config.epochs)
        for a in archs
    }


def train_and_fit(
    config: TrialSettings, archs: tuple[str, ...], seed: int, progress: bool
) -> tuple[dict[str, PairHistory], dict[str, HistoryFit], float]:
    """Train each of ``archs`` on the two points (one seed) and fit eq. (7) to each.

    Returns
    -------
    histories, fits : dict of str
        By architecture.
    seconds : float
        Wall time of the training.
    """
    cfgs = table1_configs(archs, config)
    t0 = time.perf_counter()
    hists = run_trials(
        two_point_trial,
        [(cfgs[a], seed, 0.5, 1.0) for a in archs],
        workers=config.workers,
        progress=progress,
        desc="two-point nets",
    )
    seconds = time.perf_counter() - t0
    hd: dict[str, PairHistory] = dict(zip(archs, hists, strict=True))
    fits = {a: fit_history(h, y1=Y1, y2=Y1 + 1.0) for a, h in hd.items()}
    return hd, fits, seconds


def log_history(
    run: RunWriter, prefix: str, h: PairHistory, fit: HistoryFit, n_points: int = 200
) -> None:
    """Log about ``n_points`` records of the measured and fitted ``a, b, w`` and the loss,
    the pair scalars the confrontation reads (:func:`.pair_records.record_pair`), and store
    the full arrays ``<prefix>.state`` and ``<prefix>.theory``."""
    stride = max(1, h.epochs.size // n_points)
    for k in range(0, h.epochs.size, stride):
        run.log(
            int(h.epochs[k]),
            {
                f"{prefix}.a": h.a[k],
                f"{prefix}.b": h.b[k],
                f"{prefix}.w": h.w[k],
                f"{prefix}.loss": h.pair_loss[k],
                f"{prefix}.a_theory": fit.theory[k, 0],
                f"{prefix}.b_theory": fit.theory[k, 1],
                f"{prefix}.w_theory": fit.theory[k, 2],
            },
        )
    run.flush()
    record_pair(run, prefix, h, n_points)
    run.save_array(f"{prefix}.state", 0, h.state)
    run.save_array(f"{prefix}.theory", 0, fit.theory)


def arch_summary(h: PairHistory, fit: HistoryFit) -> dict[str, Any]:
    """The summary entry of one network: fitted rates, goodness, start, end and plateau."""
    return {
        "inv_tau_h": fit.inv_tau_h,
        "inv_tau_y": fit.inv_tau_y,
        "rho": fit.rho,
        "inv_tau_ybar": fit.inv_tau_ybar,
        "fit_loss_49": fit.fit_loss,
        "r2_a": fit.r2[0],
        "r2_b": fit.r2[1],
        "r2_w": fit.r2[2],
        "a0": float(h.a[0]),
        "b0": float(h.b[0]),
        "w0": float(h.w[0]),
        "final_a": float(h.a[-1]),
        "final_b": float(h.b[-1]),
        "predicted_final_a": fit.predicted_final_a,
        "final_loss": float(h.loss[-1]),
        "converged": h.converged(),
        "plateau_epochs": plateau_epochs(h.pair_loss, h.Y / 8),
    }
