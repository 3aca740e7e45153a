"""Recorder probe for loss and accuracy of the logits on the probe set."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from .._validation import check_option
from ._base import ProbeInput, ProbeOutput, register_probe

__all__ = ["PerformanceProbe", "classification_loss"]

LOSSES = ("mse", "cross-entropy")


def classification_loss(logits: torch.Tensor, y: torch.Tensor, loss: str) -> torch.Tensor:
    """Mean loss of ``logits`` (n, C) against integer labels ``y`` (n,).

    ``mse`` is ½·mean over samples of the squared distance to the one-hot target (summed
    over classes), the convention of the NTK-collapse paper's code; ``cross-entropy`` is
    the mean softmax cross-entropy.
    """
    check_option(loss, "loss", LOSSES)
    if loss == "cross-entropy":
        return F.cross_entropy(logits, y)
    target = F.one_hot(y, logits.shape[1]).to(logits.dtype)
    return 0.5 * ((logits - target) ** 2).sum(1).mean()


class PerformanceProbe:
    """Scalars ``loss`` and ``accuracy`` of the probe set (prefixed by ``prefix``)."""

    name = "performance"

    def __init__(self, *, loss: str = "cross-entropy", prefix: str = "probe") -> None:
        self.loss = check_option(loss, "loss", LOSSES)
        self.prefix = prefix

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        # NumPy in float64: on a probe set's (n, C) logits a handful of NumPy calls cost a
        # fraction of the torch ops of classification_loss, and the Recorder pays this
        # every record. Same conventions as classification_loss.
        logits = inp.logits.detach().cpu().numpy().astype(np.float64)  # (n, C), a copy
        y = inp.y.detach().cpu().numpy()
        rows = np.arange(y.size)
        acc = float(np.count_nonzero(logits.argmax(1) == y)) / y.size
        if self.loss == "cross-entropy":
            top = logits.max(1)
            lse = top + np.log(np.exp(logits - top[:, None]).sum(1))
            value = float((lse - logits[rows, y]).mean())
        else:
            logits[rows, y] -= 1.0  # logits - onehot, in place on our float64 copy
            value = 0.5 * float(np.square(logits).sum() / y.size)
        return ProbeOutput(scalars={f"{self.prefix}/loss": value, f"{self.prefix}/accuracy": acc})


@register_probe("performance")
def _make(**options: Any) -> PerformanceProbe:
    return PerformanceProbe(**options)
