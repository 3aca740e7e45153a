"""Recorder probes ``ntk_alignment`` and ``ntk_blocks`` (empirical NTK during training).

Both use a fixed, class-ordered subset of the Recorder's probe set: the first ``per_class``
samples of every class, in probe-set order, arranged class-major (as in the code of the
NTK-collapse paper: kernels on m = 12 samples per class; docs/theories/ntk_collapse.md,
Conventions). The subset is the same at every record, so kernels are comparable over time.
Kernels are computed with :func:`ncdynamics.probes.empirical_ntk` (BatchNorm in eval mode).

``ntk_alignment`` (traced kernels, cheap):
    scalars ``ntk_alignment_<out>``, ``ntk_alignment_<out>_centered`` for ``out`` in
    ``outputs``; arrays ``ntk_traced_<out>`` (n, n) and ``ntk_labels`` (n,).
``ntk_blocks`` (block structure):
    scalars ``ntk_gamma_d``, ``ntk_gamma_c``, ``ntk_gamma_n`` (logit kernel) and
    ``ntk_kappa_d``, ``ntk_kappa_c``, ``ntk_kappa_n`` (feature kernel), the block residuals
    ``ntk_block_residual_logits`` / ``_features``; arrays ``ntk_block_norms_logits`` (C, C)
    and, with ``feature_block_norms=True`` (a full (n N)^2 feature kernel: expensive),
    ``ntk_block_norms_features`` (n, n).
"""

from __future__ import annotations

from typing import cast

import numpy as np
import torch

from .._validation import check_int, check_labels, check_option
from ._base import ProbeInput, ProbeOutput, register_probe
from ._ntk_output import NamedOutput
from .kernels import ESTIMATORS, kernel_alignment, kernel_block_stats
from .ntk import Method, Mode, empirical_ntk

__all__ = ["NTKAlignmentProbe", "NTKBlocksProbe", "class_ordered_subset"]

OUTPUTS = ("logits", "features")


def class_ordered_subset(y: np.ndarray, per_class: int, num_classes: int) -> np.ndarray:
    """Indices of the first ``per_class`` samples of each class, class-major, shape (C m,)."""
    y = check_labels(y, "y", num_classes=num_classes, min_per_class=per_class)
    return np.concatenate([np.flatnonzero(y == c)[:per_class] for c in range(num_classes)])


class _KernelProbe:
    def __init__(
        self,
        *,
        per_class: int = 12,
        method: str = "auto",
        memory_budget: int | None = None,
        layer: str | None = None,
    ) -> None:
        self.per_class = check_int(per_class, "per_class", low=2)
        check_option(method, "method", [m.value for m in Method])
        self.method = method
        self.memory_budget = memory_budget
        self.layer = layer

    def _subset(self, inp: ProbeInput) -> tuple[torch.Tensor, np.ndarray]:
        y = inp.y.detach().cpu().numpy() if hasattr(inp.y, "detach") else np.asarray(inp.y)
        idx = class_ordered_subset(y, self.per_class, inp.num_classes)
        return inp.x[torch.as_tensor(idx)], y[idx]

    def _ntk(self, inp: ProbeInput, x: torch.Tensor, output: NamedOutput, mode: Mode) -> np.ndarray:
        k = empirical_ntk(
            inp.model,
            x,
            output=output,
            mode=mode,
            method=self.method,
            memory_budget=self.memory_budget,
            layer=self.layer,
        )
        return k.detach().cpu().numpy()


class NTKAlignmentProbe(_KernelProbe):
    """Traced logit and feature kernels and their label alignment."""

    name = "ntk_alignment"

    def __init__(
        self,
        *,
        per_class: int = 12,
        outputs: tuple[str, ...] = OUTPUTS,
        method: str = "auto",
        memory_budget: int | None = None,
        layer: str | None = None,
    ) -> None:
        super().__init__(
            per_class=per_class, method=method, memory_budget=memory_budget, layer=layer
        )
        for o in outputs:
            check_option(o, "outputs", OUTPUTS)
        self.outputs = tuple(cast(NamedOutput, o) for o in outputs)  # checked just above

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        x, y = self._subset(inp)
        out = ProbeOutput(arrays={"ntk_labels": y.astype(np.int64)})
        for o in self.outputs:
            k = self._ntk(inp, x, o, "trace")  # (n, n)
            out.scalars[f"ntk_alignment_{o}"] = kernel_alignment(k, y)
            out.scalars[f"ntk_alignment_{o}_centered"] = kernel_alignment(k, y, centered=True)
            out.arrays[f"ntk_traced_{o}"] = k
        return out


class NTKBlocksProbe(_KernelProbe):
    """Block values (gamma, kappa), block norms and block residuals."""

    name = "ntk_blocks"

    def __init__(
        self,
        *,
        per_class: int = 12,
        method: str = "auto",
        memory_budget: int | None = None,
        layer: str | None = None,
        feature_block_norms: bool = False,
        estimator: str = "exact",
    ) -> None:
        super().__init__(
            per_class=per_class, method=method, memory_budget=memory_budget, layer=layer
        )
        self.feature_block_norms = bool(feature_block_norms)
        self.estimator = check_option(estimator, "estimator", ESTIMATORS)

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        x, y = self._subset(inp)
        out = ProbeOutput(arrays={"ntk_labels": y.astype(np.int64)})
        kf = kernel_block_stats(self._ntk(inp, x, "logits", "full"), y, estimator=self.estimator)
        feat_mode: Mode = "full" if self.feature_block_norms else "diagonal"
        kh = kernel_block_stats(
            self._ntk(inp, x, "features", feat_mode), y, estimator=self.estimator
        )
        for sym, st, o in (("gamma", kf, "logits"), ("kappa", kh, "features")):
            out.scalars[f"ntk_{sym}_d"] = st.values.diagonal
            out.scalars[f"ntk_{sym}_c"] = st.values.same_class
            out.scalars[f"ntk_{sym}_n"] = st.values.different_class
            out.scalars[f"ntk_block_residual_{o}"] = st.block_residual
            if st.block_norms is not None:
                out.arrays[f"ntk_block_norms_{o}"] = st.block_norms
        return out


@register_probe("ntk_alignment")
def _make_alignment_probe(**options: object) -> NTKAlignmentProbe:
    return NTKAlignmentProbe(**options)  # type: ignore[arg-type]


@register_probe("ntk_blocks")
def _make_blocks_probe(**options: object) -> NTKBlocksProbe:
    return NTKBlocksProbe(**options)  # type: ignore[arg-type]
