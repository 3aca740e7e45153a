"""Recorder probe for loss and accuracy of the logits on the probe set."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import ArrayLike

from .._validation import check_option
from ._base import ProbeInput, ProbeOutput, register_probe

__all__ = ["PerformanceProbe", "classification_loss", "loss_and_accuracy"]

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


def loss_and_accuracy(logits: ArrayLike, y: ArrayLike, loss: str) -> tuple[float, float]:
    """Mean loss and accuracy of ``logits`` (n, C) against integer labels ``y`` (n,).

    The conventions of :func:`classification_loss`, evaluated in NumPy float64: on the
    (n, C) logits of a probe or test set a handful of NumPy calls cost a fraction of the
    torch ops, and the Recorder pays this at every record. Tensors are moved to the CPU.
    """
    check_option(loss, "loss", LOSSES)
    if isinstance(logits, torch.Tensor):
        logits = logits.detach().cpu().numpy()
    labels = np.asarray(y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else y)  # (n,)
    z = np.asarray(logits, dtype=np.float64).copy()  # (n, C), our own copy
    rows = np.arange(labels.size)
    accuracy = float(np.count_nonzero(z.argmax(1) == labels)) / labels.size
    if loss == "cross-entropy":
        top = z.max(1)
        lse = top + np.log(np.exp(z - top[:, None]).sum(1))
        return float((lse - z[rows, labels]).mean()), accuracy
    z[rows, labels] -= 1.0  # logits - onehot, in place
    return 0.5 * float(np.square(z).sum() / labels.size), accuracy


class PerformanceProbe:
    """Scalars ``loss`` and ``accuracy`` of the probe set (prefixed by ``prefix``)."""

    name = "performance"

    def __init__(self, *, loss: str = "cross-entropy", prefix: str = "probe") -> None:
        self.loss = check_option(loss, "loss", LOSSES)
        self.prefix = prefix

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        value, acc = loss_and_accuracy(inp.logits, inp.y, self.loss)
        return ProbeOutput(scalars={f"{self.prefix}/loss": value, f"{self.prefix}/accuracy": acc})


@register_probe("performance")
def _make(**options: Any) -> PerformanceProbe:
    return PerformanceProbe(**options)
