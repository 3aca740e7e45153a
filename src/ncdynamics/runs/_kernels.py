"""A kernel computed by hand (an NTK, a Gram matrix), recorded with its block statistics.

The bookkeeping of kernel records: which scalars and arrays one kernel gives, and their
names. It writes through any sink (:class:`~ncdynamics.runs.Run`, a ``TeeSink``, a tracker),
so it is no method of the run store; the statistics themselves are
:func:`ncdynamics.probes.kernel_block_stats`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, Protocol

import numpy as np
from numpy.typing import ArrayLike

from ._store import _check_name

if TYPE_CHECKING:  # the probes import torch; the run store stays light until it needs them
    from ..probes.kernels import KernelBlockStats

__all__ = ["log_kernel"]


class _Writer(Protocol):
    def log(self, step: int, values: dict[str, float]) -> None: ...

    def save_array(self, name: str, step: int, array: Any) -> object: ...


def log_kernel(
    writer: _Writer,
    name: str,
    step: int,
    kernel: ArrayLike | KernelBlockStats,
    labels: ArrayLike | None = None,
    *,
    estimator: Literal["exact", "half-split"] = "exact",
) -> KernelBlockStats:
    """Record a kernel computed by hand (an NTK, a Gram matrix) with its block statistics.

    Parameters
    ----------
    writer : Run or any sink
        Receives the records through ``log(step, values)`` and ``save_array(name, step,
        array)``.
    name : str
        Prefix of the records.
    step : int
    kernel : array_like or KernelBlockStats
        A kernel in a layout of :func:`ncdynamics.probes.empirical_ntk` (full
        ``(n, n, O, O)``, ``(O, n, n)`` or traced ``(n, n)``), or the
        :class:`~ncdynamics.probes.KernelBlockStats` already computed from one (then
        ``labels`` are only stored).
    labels : array_like of shape (n,), optional
        One class per sample; required with a kernel array.
    estimator : {"exact", "half-split"}, default="exact"
        As in :func:`ncdynamics.probes.kernel_block_stats`.

    Returns
    -------
    KernelBlockStats
        Scalars go to the metrics as ``<name>/diagonal``, ``<name>/same_class``,
        ``<name>/different_class``, ``<name>/alignment``, ``<name>/alignment_centered`` and
        ``<name>/block_residual``; arrays as ``<name>.traced`` (n, n), ``<name>.labels``
        (n,) and, from a full kernel, ``<name>.block_norms`` (O, O).

    Raises
    ------
    ValueError
        If ``kernel`` is an array and ``labels`` is missing, or they do not match.
    """
    from ..probes.kernels import KernelBlockStats, kernel_block_stats

    _check_name(name, "name")  # the run store's rule for array names, checked before writing
    if isinstance(kernel, KernelBlockStats):
        stats = kernel
    elif labels is None:
        raise ValueError(
            "`labels` must be given with a kernel array (one class per sample); got None."
        )
    else:
        stats = kernel_block_stats(kernel, labels, estimator=estimator)
    v = stats.values
    writer.log(
        step,
        {
            f"{name}/diagonal": v.diagonal,
            f"{name}/same_class": v.same_class,
            f"{name}/different_class": v.different_class,
            f"{name}/alignment": stats.alignment,
            f"{name}/alignment_centered": stats.centered_alignment,
            f"{name}/block_residual": stats.block_residual,
        },
    )
    writer.save_array(f"{name}.traced", step, stats.traced)
    if labels is not None:
        writer.save_array(f"{name}.labels", step, np.asarray(labels))
    if stats.block_norms is not None:
        writer.save_array(f"{name}.block_norms", step, stats.block_norms)
    return stats
