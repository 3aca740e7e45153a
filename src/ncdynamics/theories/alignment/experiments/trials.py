"""Training trials of the alignment experiments, one network per call.

Module-level functions, so that :func:`ncdynamics.training.run_trials` can pickle them to
worker processes; each returns the :class:`~..training.PairHistory` of one trained network.
:func:`net_config` picks a row of Table 1/2 of [1] and shrinks it for the reduced presets.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ....data import load
from ..numerics import flush_denormals
from ..training import (
    AUTHORS_CODE_ROWS,
    TABLE1,
    TABLE2,
    NetConfig,
    PairHistory,
    train_recording,
)

__all__ = ["ALL_TABLE1", "Optimizer", "dataset_trial", "net_config", "two_point_trial"]

#: The eleven architectures of Table 1 of [1] (without the initial-weight rows).
ALL_TABLE1 = (
    "default",
    "convolution",
    "skip",
    "shallow",
    "narrow",
    "dropout",
    "linear",
    "relu",
    "elu",
    "tanh",
    "swish",
)

Optimizer = Literal["sgd", "adam"]


def net_config(
    name: str,
    *,
    width: int | None = None,
    depth: int | None = None,
    epochs: int | None = None,
    lr_scale: float = 1.0,
    authors_code: bool = False,
) -> NetConfig:
    """A Table 1/2 row with optional size overrides (for the reduced presets).

    ``authors_code`` first replaces the row's settings by the authors' code where that differs
    from the paper's table (``training.AUTHORS_CODE_ROWS``).

    A convolutional row keeps a width that is a multiple of 20 (its channels), at least 20;
    ``depth`` never exceeds the row's own depth.
    """
    cfg = TABLE1[name] if name in TABLE1 else TABLE2[name]
    if authors_code:
        cfg = dataclasses.replace(cfg, **AUTHORS_CODE_ROWS.get(name, {}))
    changes: dict[str, Any] = {"lr": cfg.lr * lr_scale}
    if width is not None:
        changes["width"] = width if not cfg.conv else max(20, (width // 20) * 20)
    if depth is not None:
        changes["depth"] = min(depth, cfg.depth)
    if epochs is not None:
        changes["epochs"] = epochs
    return dataclasses.replace(cfg, **changes)


def two_point_trial(
    cfg: NetConfig,
    seed: int,
    dx: float = 0.5,
    dy: float = 1.0,
    optimizer: Optimizer = "sgd",
    lr: float | None = None,
    layer: int | Literal["all"] | None = None,
    loss: Literal["mse", "half-mse", "sum-mse"] = "mse",
    representation: Literal["post-activation", "pre-activation", "both"] = "post-activation",
    negative_slope: float | None = None,
    stop_below: float | None = None,
) -> PairHistory:
    """Train ``cfg`` on the two-point data (``dx``, ``dy`` apart) and record the pair.

    ``loss``, ``representation``, ``negative_slope`` and ``stop_below`` are those of
    :func:`..training.train_recording` (their defaults are the recorded setting).
    """
    flush_denormals()
    ds = load("two-point", dx=dx, dy=dy)
    return train_recording(
        cfg,
        ds.x_train,
        ds.info["targets_train"],
        seed=seed,
        optimizer=optimizer,
        lr=lr,
        layer=layer,
        loss=loss,
        representation=representation,
        negative_slope=negative_slope,
        stop_below=stop_below,
    )


def dataset_trial(
    cfg: NetConfig,
    seed: int,
    x: NDArray[np.float32],
    targets: NDArray[np.float32],
    pair: tuple[int, int] = (0, 1),
    optimizer: Optimizer = "sgd",
    lr: float | None = None,
    batch_size: int | None = None,
    loss: Literal["mse", "half-mse", "half-mean", "sum-mse"] = "mse",
    layer: int | None = None,
) -> PairHistory:
    """Train ``cfg`` on given arrays (XOR, blobs) and record the pair ``pair`` (``layer``:
    :func:`..training.train_recording`'s, the authors' layer by default)."""
    flush_denormals()
    return train_recording(
        cfg,
        x,
        targets,
        seed=seed,
        pair=pair,
        optimizer=optimizer,
        lr=lr,
        batch_size=batch_size,
        loss=loss,
        layer=layer,
    )
