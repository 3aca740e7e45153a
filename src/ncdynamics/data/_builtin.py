"""Embedded and generated datasets: scikit-learn digits and Gaussian clusters."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_array, check_int, check_scalar
from ._dataset import Dataset, as_float32, register, rng_from


@register("digits")
def load_digits(
    *,
    test_fraction: float = 0.25,
    seed: int = 0,
    flatten: bool = False,
    classes: Sequence[int] | None = None,
) -> Dataset:
    """scikit-learn's bundled 8x8 handwritten digits (1797 images, 10 classes).

    Pixels are scaled to [0, 1] (the raw values run 0..16). The split is stratified and
    seeded. Images have shape (1, 8, 8) unless ``flatten``. ``classes`` keeps a subset of
    the digits, relabelled 0..k-1 in the given order.
    """
    from sklearn.datasets import load_digits as _sk_digits
    from sklearn.model_selection import train_test_split

    check_scalar(test_fraction, "test_fraction", low=0.0, high=1.0, closed="neither")
    bunch = _sk_digits()
    x = bunch.data.astype(np.float32) / 16.0
    y = bunch.target.astype(np.int64)
    num_classes = 10
    if classes is not None:
        keep = [int(c) for c in classes]
        bad = [c for c in keep if not 0 <= c <= 9]
        if bad or len(set(keep)) != len(keep) or len(keep) < 2:
            raise ValueError(f"`classes` must be >= 2 distinct digits in 0..9; got {classes!r}.")
        mask = np.isin(y, keep)
        remap = {c: i for i, c in enumerate(keep)}
        x, y = x[mask], np.array([remap[v] for v in y[mask]], dtype=np.int64)
        num_classes = len(keep)
    x = x if flatten else x.reshape(-1, 1, 8, 8)
    x_tr, x_te, y_tr, y_te = train_test_split(
        x, y, test_size=test_fraction, random_state=seed, stratify=y
    )
    return Dataset(
        as_float32(x_tr),
        y_tr,
        as_float32(x_te),
        y_te,
        num_classes,
        "digits",
        {"test_fraction": test_fraction, "seed": seed, "source": "sklearn.datasets.load_digits"},
    )


@register("gaussian-clusters")
def load_gaussian_clusters(
    *,
    num_classes: int = 4,
    dim: int = 16,
    n_train_per_class: int = 100,
    n_test_per_class: int = 100,
    spread: float = 1.0,
    separation: float = 3.0,
    means: ArrayLike | None = None,
    seed: int = 0,
) -> Dataset:
    """Isotropic Gaussian classes: x = mu_c + spread * N(0, I).

    Class means are drawn as ``separation * N(0, I/dim)`` (so their norms are about
    ``separation``) unless ``means`` of shape (num_classes, dim) is given.
    """
    num_classes = check_int(num_classes, "num_classes", low=2)
    dim = check_int(dim, "dim", low=1)
    n_tr = check_int(n_train_per_class, "n_train_per_class", low=1)
    n_te = check_int(n_test_per_class, "n_test_per_class", low=0)
    check_scalar(spread, "spread", low=0.0)
    check_scalar(separation, "separation", low=0.0)
    rng = rng_from(seed)
    if means is None:
        mu = separation * rng.standard_normal((num_classes, dim)) / np.sqrt(dim)
    else:
        mu = check_array(means, "means", shape=(num_classes, dim)).astype(np.float64)

    def draw(n: int) -> tuple[np.ndarray, np.ndarray]:
        y = np.repeat(np.arange(num_classes), n)
        x = mu[y] + spread * rng.standard_normal((y.size, dim))
        return as_float32(x), y.astype(np.int64)

    x_tr, y_tr = draw(n_tr)
    x_te, y_te = draw(n_te)
    return Dataset(
        x_tr,
        y_tr,
        x_te,
        y_te,
        num_classes,
        "gaussian-clusters",
        {"means": mu.tolist(), "spread": spread, "seed": seed},
    )
