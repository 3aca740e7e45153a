"""Label tools: corruption, class-balanced subsets and exact per-class batching."""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from .._validation import check_int, check_labels, check_scalar

__all__ = ["class_balanced_batches", "balanced_subset", "class_ordered", "corrupt_labels"]


def corrupt_labels(
    y: np.ndarray, p: float, num_classes: int, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Flip each label with probability ``p`` to one of the *other* classes, uniformly.

    Returns
    -------
    y_new : ndarray of shape (n_samples,)
    flipped : ndarray of bool, shape (n_samples,)
        Which labels were changed.
    """
    num_classes = check_int(num_classes, "num_classes", low=2)
    y = check_labels(y, "y", num_classes=num_classes)
    check_scalar(p, "p", low=0.0, high=1.0)
    flipped = np.less(rng.random(y.shape[0]), p)
    shift = rng.integers(1, num_classes, size=y.shape[0])
    y_new = np.where(flipped, (y + shift) % num_classes, y)
    return y_new.astype(np.int64), flipped


def balanced_subset(
    y: np.ndarray,
    n_per_class: int,
    rng: np.random.Generator | None = None,
    *,
    num_classes: int | None = None,
) -> np.ndarray:
    """Indices of ``n_per_class`` samples of every class, class-major ordered.

    With ``rng`` the samples are drawn at random, otherwise the first ones are taken.

    Raises
    ------
    ValueError
        If a class has fewer than ``n_per_class`` samples.
    """
    n_per_class = check_int(n_per_class, "n_per_class", low=1)
    y = check_labels(y, "y", num_classes=num_classes)
    k = num_classes if num_classes is not None else int(y.max()) + 1
    out = []
    for c in range(k):
        idx = np.flatnonzero(y == c)
        if idx.size < n_per_class:
            raise ValueError(
                f"`n_per_class` == {n_per_class} exceeds the {idx.size} samples of class {c}."
            )
        out.append(
            rng.choice(idx, n_per_class, replace=False) if rng is not None else idx[:n_per_class]
        )
    return np.concatenate(out)


def class_ordered(y: np.ndarray) -> np.ndarray:
    """A stable permutation that sorts samples class-major (class 0 first)."""
    return np.argsort(check_labels(y, "y"), kind="stable")


def class_balanced_batches(
    y: np.ndarray,
    per_class: int,
    rng: np.random.Generator,
    *,
    num_classes: int | None = None,
    n_batches: int | None = None,
) -> Iterator[np.ndarray]:
    """Yield index batches holding exactly ``per_class`` samples of every class.

    Each class is shuffled once per pass; a pass ends when the smallest class is used up
    (every class is truncated to the smallest count, as the NTK-collapse paper does).
    Within a batch the classes are interleaved in a random order.

    Parameters
    ----------
    y : ndarray of shape (n_samples,)
    per_class : int
        Samples of each class per batch.
    rng : numpy Generator
    n_batches : int, optional
        Stop after this many batches (default: one pass).
    """
    per_class = check_int(per_class, "per_class", low=1)
    y = check_labels(y, "y", num_classes=num_classes, min_per_class=per_class)
    k = num_classes if num_classes is not None else int(y.max()) + 1
    pools = [rng.permutation(np.flatnonzero(y == c)) for c in range(k)]
    steps = min(p.size for p in pools) // per_class
    if n_batches is not None:
        steps = min(steps, n_batches)
    for s in range(steps):
        batch = np.concatenate([p[s * per_class : (s + 1) * per_class] for p in pools])
        yield batch[rng.permutation(batch.size)]
