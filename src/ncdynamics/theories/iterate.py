"""Discrete-time trajectories: iterate a map and record the iterates at chosen iterations.

Gradient descent on the UFM (:func:`~ncdynamics.theories.ufm.run_gd_reference`), on
the logits (:func:`~ncdynamics.theories.ufm.run_logit_gd`) and its exact image on the
reduced singular values (:func:`~ncdynamics.theories.hadamard.model.discrete_gd_map`) are all
``x_{k+1} = step(x_k)`` recorded at iterations ``steps``; this module is that one loop. The
batched fast path (:mod:`~ncdynamics.theories.hadamard.fast_batched_gd`) has its own loop.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from numpy.typing import NDArray

from .._validation import check_array

__all__ = ["check_steps", "iterate_map"]

S = TypeVar("S")


def check_steps(steps: Any) -> NDArray[np.int64]:
    """``steps`` as int64: a non-empty, non-negative, non-decreasing 1-d array of integers."""
    steps = check_array(steps, "steps", ndim=1, min_size=1)
    if not np.all(steps == np.round(steps)) or steps[0] < 0 or np.any(np.diff(steps) < 0):
        raise ValueError("`steps` must be non-negative, non-decreasing integers.")
    out: NDArray[np.int64] = steps.astype(np.int64)
    return out


def iterate_map(step: Callable[[S], S], x0: S, steps: NDArray[np.int64]) -> list[S]:
    """Iterates ``x_k`` of ``x_{k+1} = step(x_k)`` at each ``k`` in ``steps`` (checked steps).

    ``step`` must return a new state (it is not copied); entry ``i`` of the result is
    ``x_{steps[i]}``, so ``steps[0] = 0`` records ``x0`` itself.
    """
    out: list[S] = []
    x, k = x0, 0
    for target in steps:
        while k < target:
            x = step(x)
            k += 1
        out.append(x)
    return out
