"""Small regression datasets of the representation-alignment experiments.

The targets are real-valued; they are in ``info["targets_train"]`` (float32, shape
``(n_train, n_outputs)``) while ``y_train`` holds a class-like label (the point index, the
XOR output, the context) so that the usual tools (Recorder, balanced subsets) still apply.
The test split is empty: these are training-dynamics datasets.

Loaders: ``two-point``, ``xor``, ``orthogonal-blobs`` (van Rossem & Saxe, ICML 2024,
Sec. 3-4 and App. B).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_scalar
from ._dataset import Dataset, as_float32, register

__all__ = ["load_orthogonal_blobs", "load_two_point", "load_xor"]


def _dataset(
    x: np.ndarray, labels: np.ndarray, targets: np.ndarray, num_classes: int, name: str, info: dict
) -> Dataset:
    x = as_float32(x)
    empty_x = np.zeros((0, *x.shape[1:]), dtype=np.float32)
    info = {
        **info,
        "targets_train": as_float32(targets),
        "targets_test": np.zeros((0, targets.shape[1]), dtype=np.float32),
    }
    return Dataset(
        x, labels.astype(np.int64), empty_x, np.zeros(0, np.int64), num_classes, name, info
    )


@register("two-point")
def load_two_point(
    *, dx: float = 0.5, dy: float = 1.0, x1: float = -1.0, y1: float = 0.6
) -> Dataset:
    """Two 1-D inputs ``x1, x1 + dx`` with 1-D targets ``y1, y1 + dy`` (Sec. 3.1, App. B).

    Labels are the point indices 0 and 1. ``X = dx^2`` and ``Y = dy^2``.
    """
    dx = check_scalar(dx, "dx")
    dy = check_scalar(dy, "dy")
    if dx == 0:
        raise ValueError("`dx` must be nonzero (the two inputs must differ); got 0.")
    x = np.array([[x1], [x1 + dx]])
    t = np.array([[y1], [y1 + dy]])
    return _dataset(
        x, np.array([0, 1]), t, 2, "two-point", {"dx": dx, "dy": dy, "x1": x1, "y1": y1}
    )


@register("xor")
def load_xor() -> Dataset:
    """The four XOR points: inputs (0,0), (1,0), (0,1), (1,1) with targets 0, 1, 1, 0."""
    x = np.array([[0.0, 0.0], [1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    t = np.array([[0.0], [1.0], [1.0], [0.0]])
    return _dataset(x, t[:, 0].astype(np.int64), t, 2, "xor", {})


@register("orthogonal-blobs")
def load_orthogonal_blobs(
    *,
    n_positions: int = 30,
    image_size: int = 5,
    sigma: float = 1.0,
    position_range: tuple[float, float] = (0.0, 4.0),
    normalize: bool = False,
) -> Dataset:
    """Gaussian blobs on a small image with a context cue (Sec. 4.5, Fig. 7).

    Each point is an ``image_size x image_size`` image of an isotropic Gaussian blob (peak
    1, width ``sigma`` pixels) centred at ``(mu_x, mu_y)`` on an ``n_positions`` grid over
    ``position_range`` (pixel coordinates), flattened, followed by a one-hot context of
    length 2. The target is ``mu_x`` in context 0 and ``mu_y`` in context 1, mapped
    linearly from ``position_range`` to [-1, 1]. Order: context, then ``mu_x``, then
    ``mu_y``; ``2 n_positions^2`` points of dimension ``image_size^2 + 2``.

    ``info`` holds ``context``, ``mu_x``, ``mu_y`` (each of shape (n,)). Labels are the
    context. The blob width, position range and output scaling are not given in the paper;
    these defaults are our choice. ``normalize=True`` scales each image to sum 1
    instead of peak 1; with ``sigma=2`` (pixels) it is the authors' data set
    (loekvanrossem/universality ``experiments/orthogonal.ipynb`` cell 1, ``blobs``: pixels
    and centres on ``linspace(-1, 1, .)``, ``exp(-d^2 / 2)``, i.e. sigma 1 in those units,
    two pixel spacings of the 5-pixel grid, each blob divided by its sum).
    """
    n = check_int(n_positions, "n_positions", low=2)
    size = check_int(image_size, "image_size", low=1)
    sigma = check_scalar(sigma, "sigma", low=0.0, closed="neither")
    lo, hi = (check_scalar(v, "position_range") for v in position_range)
    if not hi > lo:
        raise ValueError(f"`position_range` must be increasing; got {position_range!r}.")
    mu = np.linspace(lo, hi, n)
    grid_x, grid_y = np.meshgrid(mu, mu, indexing="ij")
    mx, my = grid_x.ravel(), grid_y.ravel()  # (n^2,)
    pix = np.arange(size, dtype=np.float64)
    gx = np.exp(-((pix[None, :] - mx[:, None]) ** 2) / (2 * sigma**2))  # (n^2, size)
    gy = np.exp(-((pix[None, :] - my[:, None]) ** 2) / (2 * sigma**2))  # (n^2, size)
    img = (gx[:, :, None] * gy[:, None, :]).reshape(n * n, size * size)  # (n^2, size^2)
    if normalize:
        img = img / img.sum(axis=1, keepdims=True)
    context = np.repeat([0, 1], n * n)
    x = np.concatenate([np.tile(img, (2, 1)), np.eye(2)[context]], axis=1)
    mux, muy = np.tile(mx, 2), np.tile(my, 2)
    raw = np.where(context == 0, mux, muy)
    t = (2.0 * (raw - lo) / (hi - lo) - 1.0)[:, None]
    return _dataset(
        x,
        context,
        t,
        2,
        "orthogonal-blobs",
        {
            "context": context,
            "mu_x": mux,
            "mu_y": muy,
            "sigma": sigma,
            "n_positions": n,
            "image_size": size,
            "position_range": (float(lo), float(hi)),
        },
    )
