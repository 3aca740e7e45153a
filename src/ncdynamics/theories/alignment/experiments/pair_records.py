"""The recorded pair of a trained network, written as the scalars of the ``pair_alignment`` probe.

The confrontation of the theory with a run (:mod:`..confront`, ``ncdyn compare``) reads the
scalars ``pair_a``, ``pair_b``, ``pair_w``, ``pair_X`` and ``pair_Y`` that the
:class:`ncdynamics.probes.PairAlignmentProbe` records, under one prefix per stream. These
experiments record the pair themselves (:mod:`..training`), so they write the same names:
``<prefix>.pair_a`` and so on, at about ``n_points`` evenly strided epochs (the first and the
last included), where ``prefix`` names the network (``shallow``, ``xor-low``, ``adam``).
"""

from __future__ import annotations

import numpy as np

from ...experiment import RunWriter
from ..training import PairHistory

__all__ = ["pair_records", "record_pair"]


def pair_records(
    h: PairHistory, prefix: str, n_points: int = 200, a: np.ndarray | None = None
) -> dict[int, dict[str, float]]:
    """``{epoch: {name: value}}``: the pair scalars of ``h`` at about ``n_points`` epochs.

    ``a`` overrides ``h.a`` (one hidden layer of a history recorded at every layer).
    """
    dist = h.a if a is None else a
    if dist.ndim != 1:
        raise ValueError(
            f"`a` must be one hidden layer's distances of shape ({h.epochs.size},); got shape "
            f"{dist.shape}. Pass a=h.a[:, layer - 1]."
        )
    stride = max(1, h.epochs.size // n_points)
    keep = np.union1d(np.arange(0, h.epochs.size, stride), [h.epochs.size - 1])
    return {
        int(h.epochs[k]): {
            f"{prefix}.pair_a": float(dist[k]),
            f"{prefix}.pair_b": float(h.b[k]),
            f"{prefix}.pair_w": float(h.w[k]),
            f"{prefix}.pair_X": float(h.X),
            f"{prefix}.pair_Y": float(h.Y),
        }
        for k in keep
    }


def record_pair(
    run: RunWriter, prefix: str, h: PairHistory, n_points: int = 200, a: np.ndarray | None = None
) -> None:
    """Log :func:`pair_records` of ``h`` into ``run`` (and flush)."""
    for step, values in pair_records(h, prefix, n_points, a).items():
        run.log(step, values)
    run.flush()
