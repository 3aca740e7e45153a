"""Measurements specific to the experiments of [1] on recorded runs.

The invariant metrics themselves are computed during training by the Recorder
probe ``ntk_invariant`` (:mod:`ncdynamics.probes.invariant`); this module holds what the
figures need on top: the learning-rate grid, the 99.9 % train-accuracy epoch, the smoothing
of curves and the automatic choice of an NC and a non-NC model.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...probes.invariant import invariant_metrics

__all__ = [
    "ModelChoice",
    "first_epoch_reaching",
    "invariant_metrics",
    "lr_grid",
    "select_nc_models",
    "smooth",
]


def lr_grid(k: ArrayLike) -> NDArray[np.float64]:
    """The grid of [1]: ``eta_k = 10^(-4 + 4.25 k / 30)``, k = 0..29.

    This is ``np.logspace(-4, 0.25, 30, endpoint=False)``; k = 19..22 give the captions'
    0.049, 0.068, 0.094 and 0.131.
    """
    ks = np.asarray(k, dtype=np.float64)
    grid: NDArray[np.float64] = 10.0 ** (-4.0 + 4.25 * ks / 30.0)
    return grid


def first_epoch_reaching(train_accuracy: ArrayLike, threshold: float = 0.999) -> float:
    """First epoch (1-based) whose train accuracy reaches ``threshold``; NaN if none.

    ``train_accuracy[e]`` is the accuracy during epoch ``e + 1`` (train mode, averaged over
    the epoch's batches). The paper uses the last 10 batches instead.
    """
    hits = np.flatnonzero(np.asarray(train_accuracy, dtype=np.float64) >= threshold)
    return float(hits[0] + 1) if hits.size else float("nan")


def smooth(values: ArrayLike, window: int = 10) -> NDArray[np.float64]:
    """Savitzky-Golay smoothing with polyorder 1, as the paper's figures.

    Series shorter than 3 points, or with NaN, are returned unchanged.
    """
    from scipy.signal import savgol_filter

    v = np.asarray(values, dtype=np.float64)
    w = min(int(window), v.size)
    if w < 3 or not np.all(np.isfinite(v)):
        return v
    return savgol_filter(v, w, 1)


@dataclass(frozen=True)
class ModelChoice:
    """Indices of the NC and non-NC model of one init, and why they were chosen."""

    nc: int
    non_nc: int
    candidates: tuple[int, ...]
    rule: str


def select_nc_models(
    nc3: ArrayLike, train_accuracy: ArrayLike, *, min_train_accuracy: float = 0.99
) -> ModelChoice:
    """Pick an NC and a non-NC model among runs of one init (automated; the rule is in
    docs/theories/ntk_collapse.md, Conventions).

    Among runs whose final train accuracy reaches ``min_train_accuracy`` (all runs if fewer
    than two do), the one with the lowest final NC3 is the NC model and the one with the
    highest is the non-NC model.
    """
    final_nc3 = np.asarray(nc3, dtype=np.float64)
    acc = np.asarray(train_accuracy, dtype=np.float64)
    ok = np.flatnonzero((acc >= min_train_accuracy) & np.isfinite(final_nc3))
    rule = f"train accuracy >= {min_train_accuracy}"
    if ok.size < 2:
        ok = np.flatnonzero(np.isfinite(final_nc3))
        rule = "all finite runs (fewer than two reached the accuracy threshold)"
    if ok.size == 0:
        raise ValueError("`nc3` must hold at least one finite value.")
    order = ok[np.argsort(final_nc3[ok])]
    return ModelChoice(int(order[0]), int(order[-1]), tuple(int(i) for i in ok), rule)
