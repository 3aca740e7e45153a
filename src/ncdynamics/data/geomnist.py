"""GEOMNIST: rotated, blurred triangles, rectangles and ellipses (Zhang, Wang & Su 2021).

Recipe (from the paper's App. D and its reference code; docs/theories/lesde.md, erratum 13), on a
``size`` x ``size`` canvas (32 by default; every coordinate below scales with size/32), background
0, shape 1, for N = n_train + n_test images per class with index i = 0..N-1:

- triangle (label 0): vertices (rows, cols) = (16+o, 16-8*sqrt(3)+o), (26+o, 24+o),
  (6+o, 24+o), o = linspace(-1, 1, N)[i], coordinates truncated to integers;
- rectangle (label 1): rows int(12+o)..int(20+o), cols int(8+o)..int(24+o), inclusive;
- ellipse (label 2): centre (16, 16), row radius r = linspace(5, 7, N)[i], column radius 2r;
- rotation by 176 i / N degrees about the centre (cubic spline, zero outside);
- Gaussian blur with sigma ~ U[0.9, 1.1], drawn independently per image.

Each class is shuffled and split into the first n_train (training) and the rest (test).
A pixel belongs to a filled shape when its centre lies inside it (a NumPy rasteriser, so
no scikit-image dependency; pixel sets can differ from ``skimage.draw`` on the boundary).
"""

from __future__ import annotations

import numpy as np

from .._validation import check_int, check_labels, check_scalar
from ._dataset import Dataset, as_float32, register, rng_from

__all__ = ["corrupt_labels_per_class", "load_geomnist", "make_geomnist_class"]

CLASSES = ("triangle", "rectangle", "ellipse")


def _triangle(rows: np.ndarray, cols: np.ndarray, verts: np.ndarray) -> np.ndarray:
    """Pixels whose centre lies inside (or on) the triangle ``verts`` (3, 2)."""
    (r0, c0), (r1, c1), (r2, c2) = verts

    def side(
        ra: float, ca: float, rb: float, cb: float
    ) -> np.ndarray:  # sign of the cross product of (b - a) and (p - a)
        return (rb - ra) * (cols - ca) - (cb - ca) * (rows - ra)

    s0, s1, s2 = side(r0, c0, r1, c1), side(r1, c1, r2, c2), side(r2, c2, r0, c0)
    return ((s0 >= 0) & (s1 >= 0) & (s2 >= 0)) | ((s0 <= 0) & (s1 <= 0) & (s2 <= 0))


def make_geomnist_class(
    label: int, n: int, *, size: int = 32, rng: np.random.Generator
) -> np.ndarray:
    """All ``n`` images of one class, in index order (before shuffling).

    Returns
    -------
    ndarray of shape (n, size, size), float32
    """
    from scipy import ndimage

    label = check_int(label, "label", low=0, high=2)
    n = check_int(n, "n", low=1)
    size = check_int(size, "size", low=8)
    s = size / 32.0
    rows, cols = np.mgrid[0:size, 0:size].astype(np.float64)
    offsets = np.linspace(-1, 1, n)
    radii = np.linspace(5, 7, n)
    sigmas = rng.uniform(0.9, 1.1, size=n)
    out = np.empty((n, size, size), dtype=np.float32)
    for i in range(n):
        o = offsets[i]
        if label == 0:
            verts = (
                np.array(
                    [[16 + o, 16 - 8 * np.sqrt(3) + o], [26 + o, 24 + o], [6 + o, 24 + o]]
                ).astype(int)
                * s
            )
            img = _triangle(rows, cols, verts)
        elif label == 1:
            r0, r1 = int(12 + o) * s, int(20 + o) * s
            c0, c1 = int(8 + o) * s, int(24 + o) * s
            img = (rows >= r0) & (rows <= r1) & (cols >= c0) & (cols <= c1)
        else:
            r = radii[i] * s
            img = ((rows - 16 * s) / r) ** 2 + ((cols - 16 * s) / (2 * r)) ** 2 < 1
        img = ndimage.rotate(
            img.astype(np.float64), 176.0 * i / n, reshape=False, order=3, mode="constant", cval=0.0
        )
        out[i] = ndimage.gaussian_filter(img, sigma=sigmas[i])
    return out


@register("geomnist")
def load_geomnist(
    *,
    n_train_per_class: int = 500,
    n_test_per_class: int = 500,
    size: int = 32,
    seed: int = 0,
    label_noise: float = 0.0,
) -> Dataset:
    """GEOMNIST with K = 3 classes (triangle 0, rectangle 1, ellipse 2) as (N, 1, size, size).

    Parameters
    ----------
    n_train_per_class, n_test_per_class : int
        Per-class counts (the p_err sweep of [1] uses 500 and 500).
    size : int
        Canvas side.
    seed : int
        Seeds the blur widths, the shuffles and the label corruption.
    label_noise : float
        p_err: fraction of training labels per class moved to the other classes
        (:func:`corrupt_labels_per_class`); test labels stay clean.
    """
    n_tr = check_int(n_train_per_class, "n_train_per_class", low=1)
    n_te = check_int(n_test_per_class, "n_test_per_class", low=0)
    check_scalar(label_noise, "label_noise", low=0.0, high=1.0)
    rng = rng_from(seed)
    xs_tr, xs_te = [], []
    for label in range(3):
        imgs = make_geomnist_class(label, n_tr + n_te, size=size, rng=rng)
        imgs = imgs[rng.permutation(n_tr + n_te)]
        xs_tr.append(imgs[:n_tr])
        xs_te.append(imgs[n_tr:])
    y_tr = np.repeat(np.arange(3), n_tr)
    y_te = np.repeat(np.arange(3), n_te)
    if label_noise > 0:
        y_tr = corrupt_labels_per_class(y_tr, label_noise, 3, rng)
    return Dataset(
        as_float32(np.concatenate(xs_tr)[:, None]),
        y_tr.astype(np.int64),
        as_float32(np.concatenate(xs_te)[:, None]),
        y_te.astype(np.int64),
        3,
        "geomnist",
        {
            "classes": list(CLASSES),
            "size": size,
            "seed": seed,
            "label_noise": label_noise,
            "n_train_per_class": n_tr,
            "n_test_per_class": n_te,
        },
    )


def corrupt_labels_per_class(
    y: np.ndarray, p: float, num_classes: int, rng: np.random.Generator
) -> np.ndarray:
    """Move exactly floor(p n_c) labels of every class c to the other classes.

    The chosen indices (without replacement) are split evenly over the other classes in
    increasing order, the remainder going to the last ones; for K = 3 that is floor(m/2)
    to the lower-indexed other class and the rest to the other, as in [1]'s reference code
    (the paper says "uniformly across all other classes", equal in expectation).

    Returns
    -------
    ndarray of shape (n_samples,), int64
    """
    k = check_int(num_classes, "num_classes", low=2)
    y = check_labels(y, "y", num_classes=k)
    check_scalar(p, "p", low=0.0, high=1.0)
    out = y.copy()
    for c in range(k):
        idx = np.flatnonzero(y == c)
        m = int(np.floor(p * idx.size))
        chosen = rng.choice(idx, m, replace=False)
        others = [j for j in range(k) if j != c]
        sizes = [m // (k - 1)] * (k - 1)
        for j in range(m - sum(sizes)):
            sizes[-1 - j] += 1
        start = 0
        for target, cnt in zip(others, sizes, strict=True):
            out[chosen[start : start + cnt]] = target
            start += cnt
    return out
