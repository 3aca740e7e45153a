"""The two-point recipe shared by Figs. 2, 3, 5, 10, 11 and 15 of [1].

Table 1 networks are trained on two points, eq. (7) is fitted to each recorded history, and
the per-network numbers are logged and summarised the same way in every figure.

Two settings of the two points (:data:`TWO_POINT_SETTINGS`, the experiments' ``setting``
field): ``"authors-code"`` (the default of every preset) follows the authors' code
(loekvanrossem/universality at c4f4956): ``experiments/model_settings/2 points.txt`` gives
``dx2 = 1``, ``dy2 = 0.5`` (inputs -1 and 0, targets 0.6 and 0.6 + sqrt(0.5)) and the
0-based ``hidden_layer`` index (``NetConfig.authors_layer``), and
``experiments/2_points.ipynb`` trains on ``0.5 * mse_loss`` at the settings file's
learning rate halved (cell 2, which is Table 1's rate, our ``NetConfig.lr``) for twice its
epochs. ``"paper-text"`` is App. B.1's reading: ``dx = 0.5``, ``dy = 1``, eq. (1)'s loss and
the hidden layer "halfway" (``middle_layer``: 10 of 20).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ....models.table1 import middle_layer
from ....training import run_trials
from ...experiment import RunWriter
from ..training import NetConfig, PairHistory
from .history_fit import HistoryFit, fit_history, plateau_epochs
from .pair_records import record_pair
from .trials import net_config, two_point_trial

__all__ = [
    "TWO_POINT_SETTINGS",
    "Y1",
    "TwoPointSetting",
    "NetSizes",
    "TrialSettings",
    "arch_summary",
    "log_history",
    "setting_job",
    "table1_configs",
    "two_point_setting",
    "train_and_fit",
]

#: Target of the first point; the second point's target is ``Y1 + dy``.
Y1 = 0.6


@dataclass(frozen=True)
class TwoPointSetting:
    """Distances, training loss and hidden layer of the two-point experiments.

    Attributes
    ----------
    dx, dy : float
        Input and target distances (not squared).
    loss : {"mse", "half-mse", "sum-mse"}
        Training objective of :func:`..training.train_recording`.
    layer : {"authors", "middle"}
        ``NetConfig.authors_layer`` or ``middle_layer(depth)``.
    """

    dx: float
    dy: float
    loss: Literal["mse", "half-mse", "sum-mse"]
    layer: Literal["authors", "middle"]

    def layer_of(self, cfg: NetConfig) -> int:
        """The 1-indexed hidden layer of ``cfg`` that this setting reads."""
        return cfg.authors_layer if self.layer == "authors" else middle_layer(cfg.depth)


#: The authors' code and the paper's text (module docstring).
TWO_POINT_SETTINGS: dict[str, TwoPointSetting] = {
    "authors-code": TwoPointSetting(1.0, math.sqrt(0.5), "half-mse", "authors"),
    "paper-text": TwoPointSetting(0.5, 1.0, "half-mse", "middle"),
}


def two_point_setting(name: str) -> TwoPointSetting:
    """The setting named ``name`` (a key of :data:`TWO_POINT_SETTINGS`)."""
    if name not in TWO_POINT_SETTINGS:
        raise ValueError(f"`setting` must be one of {tuple(TWO_POINT_SETTINGS)}; got {name!r}.")
    return TWO_POINT_SETTINGS[name]


class NetSizes(Protocol):
    """Size overrides of an experiment config (``None`` keeps the paper's value)."""

    @property
    def width(self) -> int | None: ...

    @property
    def depth(self) -> int | None: ...

    @property
    def epochs(self) -> int | None: ...


class TrialSettings(NetSizes, Protocol):
    """Size overrides, the number of worker processes and the two-point setting."""

    @property
    def workers(self) -> int: ...

    @property
    def setting(self) -> str: ...


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

    The distances, loss and layer are ``config.setting``'s (:data:`TWO_POINT_SETTINGS`).

    Returns
    -------
    histories, fits : dict of str
        By architecture.
    seconds : float
        Wall time of the training.
    """
    cfgs = table1_configs(archs, config)
    st = two_point_setting(config.setting)
    t0 = time.perf_counter()
    hists = run_trials(
        two_point_trial,
        [setting_job(cfgs[a], seed, st) for a in archs],
        workers=config.workers,
        progress=progress,
        desc="two-point nets",
    )
    seconds = time.perf_counter() - t0
    hd: dict[str, PairHistory] = dict(zip(archs, hists, strict=True))
    fits = {a: fit_history(h, y1=Y1, y2=Y1 + st.dy) for a, h in hd.items()}
    return hd, fits, seconds


def setting_job(
    cfg: NetConfig,
    seed: int,
    st: TwoPointSetting,
    *,
    dx: float | None = None,
    dy: float | None = None,
    layer: int | Literal["all"] | None = None,
) -> tuple[Any, ...]:
    """The positional arguments of ``trials.two_point_trial`` for ``cfg`` under ``st``.

    ``dx``, ``dy`` and ``layer`` replace the setting's (the Fig. 5 grid, Fig. 10's layers).
    """
    return (
        cfg,
        seed,
        st.dx if dx is None else dx,
        st.dy if dy is None else dy,
        "sgd",
        None,
        st.layer_of(cfg) if layer is None else layer,
        st.loss,
    )


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
