"""Labelled data in the containers users already have, as the arrays the toolkit works on.

One conversion serves the Recorder's probe set and :func:`ncdynamics.training.train`'s
training data. Accepted, for inputs ``x`` of shape ``(n, *input_shape)`` and integer labels
``y`` of shape ``(n,)``:

- ``x`` and ``y`` given separately: NumPy arrays, anything ``np.asarray`` takes, or tensors;
- a pair ``(x, y)`` (tuple or list) of those;
- an :class:`ncdynamics.data.Dataset`: its training split;
- a ``torch.utils.data.Dataset`` whose items are ``(x_i, y_i)`` pairs (``TensorDataset``,
  torchvision datasets with a ``ToTensor`` transform), read item by item in index order;
- a ``torch.utils.data.DataLoader`` yielding ``(x_batch, y_batch)``, read once, batch after
  batch (so a shuffling loader gives its samples in that pass's order).

Everything is read into memory once: probe sets and the small datasets of this toolkit fit
there; for larger data, pass a subset.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from ..data import Dataset

__all__ = ["LabelledData", "as_dataset", "labelled_arrays"]

#: The containers of labelled samples accepted without separate labels.
LabelledData = (
    Dataset
    | tuple[Any, Any]
    | list[Any]
    | torch.utils.data.Dataset[Any]
    | torch.utils.data.DataLoader[Any]
)

_ACCEPTED = (
    "arrays or tensors `x` and `y`, a pair (x, y), an ncdynamics.data.Dataset, a torch "
    "Dataset of (x, y) items or a DataLoader of (x, y) batches"
)


def _to_numpy(value: Any, what: str) -> NDArray[Any]:
    if isinstance(value, torch.Tensor):
        return value.detach().cpu().numpy()
    if isinstance(value, (int, float, np.number, np.ndarray)):
        return np.asarray(value)
    raise TypeError(
        f"{what} must be a tensor or an array; got {type(value).__name__}. For torchvision "
        "datasets pass `transform=torchvision.transforms.ToTensor()`."
    )


def _pair(item: Any, what: str) -> tuple[Any, Any]:
    if isinstance(item, (tuple, list)) and len(item) == 2:
        return item[0], item[1]
    got = f"a {type(item).__name__}" + (
        f" of length {len(item)}" if isinstance(item, (tuple, list)) else ""
    )
    raise TypeError(f"{what} must be an (x, y) pair; got {got}.")


def _from_batches(batches: Iterable[Any], name: str) -> tuple[NDArray[Any], NDArray[Any]]:
    xs, ys = [], []
    for i, batch in enumerate(batches):
        xb, yb = _pair(batch, f"batch {i} of `{name}`")
        xs.append(_to_numpy(xb, f"the inputs of batch {i} of `{name}`"))
        ys.append(_to_numpy(yb, f"the labels of batch {i} of `{name}`").reshape(-1))
    if not xs:
        raise ValueError(f"`{name}` must yield at least one batch; got none.")
    return np.concatenate(xs), np.concatenate(ys)


def _from_items(data: Any, name: str) -> tuple[NDArray[Any], NDArray[Any]]:
    n = len(data)
    if n == 0:
        raise ValueError(f"`{name}` must hold at least one sample; got an empty dataset.")
    xs, ys = [], []
    for i in range(n):
        xi, yi = _pair(data[i], f"item {i} of `{name}`")
        xs.append(_to_numpy(xi, f"the input of item {i} of `{name}`"))
        ys.append(_to_numpy(yi, f"the label of item {i} of `{name}`").reshape(()))
    return np.stack(xs), np.stack(ys)


def labelled_arrays(
    data: LabelledData | ArrayLike | torch.Tensor,
    y: ArrayLike | torch.Tensor | None = None,
    *,
    name: str = "data",
) -> tuple[Any, Any]:
    """``(x, y)`` from any of the accepted containers (see the module docstring).

    With ``y`` given, ``(data, y)`` is returned as it is (arrays and tensors are checked by
    the caller); otherwise ``data`` must be one of the containers, and arrays come back.

    Raises
    ------
    TypeError
        If ``data`` is none of the accepted containers (the message lists them), or an item
        or batch is not an ``(x, y)`` pair of tensors or arrays.
    ValueError
        If the container is empty.
    """
    if y is not None:
        return data, y
    if isinstance(data, Dataset):
        return data.x_train, data.y_train
    if isinstance(data, (tuple, list)):
        return _pair(data, f"`{name}`")
    if isinstance(data, torch.utils.data.DataLoader):
        return _from_batches(data, name)
    if isinstance(data, torch.utils.data.Dataset) and hasattr(data, "__len__"):
        return _from_items(data, name)
    if isinstance(data, (np.ndarray, torch.Tensor)):
        raise TypeError(
            f"`{name}` is an array of inputs without labels; pass the labels as `y` "
            "(or a pair (x, y))."
        )
    raise TypeError(f"`{name}` must be one of: {_ACCEPTED}; got {type(data).__name__}.")


def as_dataset(
    data: LabelledData,
    *,
    test: LabelledData | None = None,
    num_classes: int | None = None,
    name: str = "data",
) -> Dataset:
    """An :class:`ncdynamics.data.Dataset` from ``data`` (and ``test``), as train takes it.

    A ``Dataset`` is returned unchanged. Anything else accepted by :func:`labelled_arrays`
    becomes the training split; ``test`` likewise the test split (empty when ``None``).
    ``num_classes`` defaults to one more than the largest label of either split. Inputs are
    stored as float32, labels as int64.
    """
    if isinstance(data, Dataset):
        return data
    x_tr, y_tr = (_as_numpy(a) for a in labelled_arrays(data, name=name))
    if test is None:
        x_te, y_te = x_tr[:0], y_tr[:0]
    else:
        x_te, y_te = (_as_numpy(a) for a in labelled_arrays(test, name="test"))
    labels: Sequence[NDArray[Any]] = [y for y in (y_tr, y_te) if y.size]
    if num_classes is None:
        num_classes = int(max(int(np.max(y)) for y in labels)) + 1 if labels else 1
    return Dataset(
        x_train=x_tr.astype(np.float32, copy=False),
        y_train=y_tr.astype(np.int64, copy=False),
        x_test=x_te.astype(np.float32, copy=False),
        y_test=y_te.astype(np.int64, copy=False),
        num_classes=num_classes,
        name=type(data).__name__,
    )


def _as_numpy(a: Any) -> NDArray[Any]:
    return a.detach().cpu().numpy() if isinstance(a, torch.Tensor) else np.asarray(a)
