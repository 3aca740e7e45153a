"""Shared steps of the alignment experiments: trials (module-level, for the process pool),
fits of a recorded history and the numbers the summaries report."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...data import load
from ..confrontation import r_squared
from .closed_form import final_distance
from .estimate import fit_output_rate, fit_rates
from .training import TABLE1, TABLE2, NetConfig, PairHistory, train_recording


def net_config(
    name: str,
    *,
    width: int | None = None,
    depth: int | None = None,
    epochs: int | None = None,
    lr_scale: float = 1.0,
) -> NetConfig:
    """A Table 1/2 row with optional size overrides (for the reduced presets)."""
    cfg = TABLE1[name] if name in TABLE1 else TABLE2[name]
    changes: dict[str, Any] = {"lr": cfg.lr * lr_scale}
    if width is not None:
        changes["width"] = width if not cfg.conv else max(20, (width // 20) * 20)
    if depth is not None:
        changes["depth"] = min(depth, cfg.depth)
    if epochs is not None:
        changes["epochs"] = epochs
    return dataclasses.replace(cfg, **changes)


def _threads() -> None:
    import torch

    torch.set_flush_denormal(True)


def two_point_trial(
    cfg: NetConfig,
    seed: int,
    dx: float = 0.5,
    dy: float = 1.0,
    optimizer: str = "sgd",
    lr: float | None = None,
    layer: Any = None,
) -> PairHistory:
    """Train ``cfg`` on the two-point data; a module-level function for ``run_trials``."""
    _threads()
    ds = load("two-point", dx=dx, dy=dy)
    return train_recording(
        cfg,
        ds.x_train,
        ds.info["targets_train"],
        seed=seed,
        optimizer=optimizer,
        lr=lr,
        layer=layer,
    )  # type: ignore[arg-type]


def dataset_trial(
    cfg: NetConfig,
    seed: int,
    x: NDArray[np.float32],
    targets: NDArray[np.float32],
    pair: tuple[int, int] = (0, 1),
    optimizer: str = "sgd",
    lr: float | None = None,
    batch_size: int | None = None,
) -> PairHistory:
    """Train ``cfg`` on given arrays (XOR, blobs, digits); module level for ``run_trials``."""
    _threads()
    return train_recording(
        cfg,
        x,
        targets,
        seed=seed,
        pair=pair,
        optimizer=optimizer,  # type: ignore[arg-type]
        lr=lr,
        batch_size=batch_size,
    )


@dataclass(frozen=True)
class HistoryFit:
    """Rates fitted to one history and the derived numbers."""

    inv_tau_h: float
    inv_tau_y: float
    fit_loss: float
    theory: NDArray[np.float64]  # (n_records, 3)
    r2: tuple[float, float, float]
    inv_tau_ybar: float
    loss_theory: NDArray[np.float64]  # (n_records,)
    predicted_final_a: float

    @property
    def rho(self) -> float:
        return self.inv_tau_h / self.inv_tau_y


def fit_history(
    h: PairHistory, *, y1: Any, y2: Any, variant: str = "eq7", a: NDArray[np.float64] | None = None
) -> HistoryFit:
    """Fit the rates (49) and the output-mean rate to a two-point history."""
    state = h.state if a is None else np.stack([a, h.b, h.w], axis=1)
    fit = fit_rates(h.epochs, state, X=h.X, Y=h.Y, variant=variant)
    th = fit.extra["trajectory"]
    r2 = tuple(r_squared(state[:, k], th[:, k]) for k in range(3))
    lf = fit_output_rate(
        h.epochs,
        h.pair_loss,
        th[:, 1],
        th[:, 2],
        ybar0=h.ybar[0],
        y1=np.atleast_1d(y1),
        y2=np.atleast_1d(y2),
    )
    p = fit.params
    pred = float(final_distance(state[0, 0], state[0, 1], h.X, h.Y, p.rho))
    return HistoryFit(
        p.inv_tau_h,
        p.inv_tau_y,
        fit.loss,
        th,
        r2,
        float(lf.params),  # type: ignore[arg-type]
        lf.extra["loss_curve"],
        pred,
    )


def plateau_epochs(loss: NDArray[np.float64], plateau: float) -> int:
    """First epoch at which the eq. (1) loss falls below half the plateau value ``Y/8``;
    ``len(loss)`` if it never does."""
    below = np.flatnonzero(loss < 0.5 * plateau)
    return int(below[0]) if below.size else int(loss.size)
