"""Input checks shared by every public boundary of ncdynamics.

Each check raises with one message template: it names the argument, says what was
expected and reports what was received (shapes, never whole arrays). Internal code trusts
inputs that passed these checks.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

__all__ = [
    "check_array",
    "check_labels",
    "check_option",
    "check_scalar",
    "check_int",
    "check_finite_tensor",
]


def _shape_str(shape: Sequence[Any]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def check_array(
    x: Any,
    name: str,
    *,
    ndim: int | None = None,
    shape: Sequence[int | None] | None = None,
    finite: bool = True,
    dtype: Any = None,
    min_size: int = 0,
) -> np.ndarray:
    """Convert ``x`` to an ndarray and check its rank, shape and finiteness.

    Parameters
    ----------
    x : array_like
        Value to check (a torch tensor is converted through ``numpy()``).
    name : str
        Argument name, used in the message.
    ndim : int, optional
        Required number of dimensions.
    shape : sequence of int or None, optional
        Required shape; ``None`` entries match any length.
    finite : bool, default=True
        Reject NaN and Inf.
    dtype : numpy dtype, optional
        Cast to this dtype (floating conversion only).
    min_size : int, default=0
        Minimum number of elements.

    Returns
    -------
    ndarray

    Raises
    ------
    TypeError
        If ``x`` cannot be converted to a numeric array.
    ValueError
        On a wrong rank, shape, size or a non-finite entry.
    """
    arr = _numeric_array(x, name, dtype)
    if ndim is not None and arr.ndim != ndim:
        raise ValueError(
            f"`{name}` must have {ndim} dimension(s); got shape {_shape_str(arr.shape)}."
        )
    if shape is not None:
        _check_shape(arr, name, shape)
    if arr.size < min_size:
        raise ValueError(f"`{name}` must have at least {min_size} element(s); got {arr.size}.")
    if finite and arr.dtype.kind in "fc" and not np.isfinite(arr).all():
        n_bad = int(np.size(arr) - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"`{name}` must be finite; got {n_bad} NaN or Inf entries.")
    return arr


def _numeric_array(x: Any, name: str, dtype: Any) -> np.ndarray:
    """``x`` as an ndarray (a torch tensor through ``numpy()``, cast to ``dtype`` if given);
    TypeError unless it is numeric (bool, integer, float or complex)."""
    if hasattr(x, "detach") and hasattr(x, "cpu"):
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=dtype) if dtype is not None else np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be array-like; got {type(x).__name__}.") from exc
    # dtype.kind is cheaper than np.issubdtype, which the Recorder calls every record
    if arr.dtype.kind not in "biufc":  # bool, int, uint, float, complex
        raise TypeError(f"`{name}` must be a numeric array; got dtype {arr.dtype}.")
    return arr


def _check_shape(arr: np.ndarray, name: str, shape: Sequence[int | None]) -> None:
    """ValueError unless ``arr`` has ``shape`` (``None`` entries match any length), with a
    hint when the transpose would have it."""
    ok = len(shape) == arr.ndim and all(
        s is None or s == a for s, a in zip(shape, arr.shape, strict=False)
    )
    if not ok:
        want = _shape_str(["*" if s is None else s for s in shape])
        hint = ""
        if arr.ndim == 2 and len(shape) == 2 and tuple(arr.shape[::-1]) == tuple(shape):
            hint = " Pass the transpose?"
        raise ValueError(f"`{name}` must have shape {want}; got {_shape_str(arr.shape)}.{hint}")


def check_finite_tensor(t: Any, name: str) -> None:
    """Raise ``ValueError`` if a torch tensor holds NaN or Inf."""
    import torch

    if t.is_floating_point() and not bool(torch.isfinite(t).all()):
        n_bad = int((~torch.isfinite(t)).sum())
        raise ValueError(f"`{name}` must be finite; got {n_bad} NaN or Inf entries.")


def check_labels(
    y: Any,
    name: str = "labels",
    *,
    n_samples: int | None = None,
    num_classes: int | None = None,
    min_per_class: int = 0,
) -> np.ndarray:
    """Check integer class labels of shape (n_samples,).

    Labels must lie in ``[0, num_classes)`` and every class must have at least
    ``min_per_class`` samples.
    """
    arr = check_array(y, name, ndim=1)
    if not np.issubdtype(arr.dtype, np.integer):
        if np.issubdtype(arr.dtype, np.floating) and np.all(arr == np.round(arr)):
            arr = arr.astype(np.int64)
        else:
            raise TypeError(f"`{name}` must hold integer class labels; got dtype {arr.dtype}.")
    if n_samples is not None and arr.shape[0] != n_samples:
        raise ValueError(
            f"`{name}` must have length {n_samples} (one label per sample); got {arr.shape[0]}."
        )
    if arr.size and arr.min() < 0:
        raise ValueError(f"`{name}` must be >= 0; got minimum {int(arr.min())}.")
    if num_classes is not None and arr.size and arr.max() >= num_classes:
        raise ValueError(
            f"`{name}` must be < num_classes={num_classes}; got maximum {int(arr.max())}."
        )
    if min_per_class > 0:
        k = num_classes if num_classes is not None else (int(arr.max()) + 1 if arr.size else 0)
        counts = np.bincount(arr, minlength=k)
        small = np.flatnonzero(counts < min_per_class)
        if small.size:
            c = int(small[0])
            raise ValueError(
                f"`{name}` must have at least {min_per_class} samples in every class; "
                f"class {c} has {int(counts[c])}."
            )
    return arr.astype(np.int64, copy=False)


def check_scalar(
    x: Any,
    name: str,
    *,
    low: float | None = None,
    high: float | None = None,
    closed: str = "both",
    integer: bool = False,
) -> float:
    """Check a real scalar against an interval.

    ``closed`` is one of ``"both"``, ``"left"``, ``"right"``, ``"neither"``.
    """
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"`{name}` must be a real number; got {type(x).__name__} {x!r}.")
    if integer and not float(x).is_integer():
        raise TypeError(f"`{name}` must be an integer; got {x!r}.")
    v = float(x)
    if not math.isfinite(v):
        raise ValueError(f"`{name}` must be finite; got {x!r}.")
    lo_ok = low is None or (v >= low if closed in ("both", "left") else v > low)
    hi_ok = high is None or (v <= high if closed in ("both", "right") else v < high)
    if not lo_ok:
        op = ">=" if closed in ("both", "left") else ">"
        raise ValueError(f"`{name}` == {x!r}, must be {op} {low}.")
    if not hi_ok:
        op = "<=" if closed in ("both", "right") else "<"
        raise ValueError(f"`{name}` == {x!r}, must be {op} {high}.")
    return int(v) if integer else v


def check_int(x: Any, name: str, *, low: int | None = None, high: int | None = None) -> int:
    """Check an integer scalar in ``[low, high]``."""
    return int(check_scalar(x, name, low=low, high=high, integer=True))


def check_option(x: Any, name: str, options: Iterable[Any]) -> Any:
    """Check that ``x`` is one of ``options``; the message lists every legal value."""
    opts = list(options)
    if x not in opts:
        listed = ", ".join(repr(o) for o in opts)
        raise ValueError(f"`{name}` must be one of {listed}; got {x!r}.")
    return x
