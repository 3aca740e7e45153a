"""Class means of the features and of the logits at each record.

The theories that describe how class means move ([1] of the LE-SDE theory, the logit-space
L-model; the Hadamard-reduced cross-entropy dynamics) are confronted with a run through these
arrays. Both are small: ``(C, n_features)`` and ``(C, n_outputs)`` per record.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_labels
from ._base import ProbeInput, ProbeOutput, register_probe

__all__ = ["ClassMeansProbe", "class_means"]


def class_means(values: ArrayLike, labels: ArrayLike, num_classes: int) -> np.ndarray:
    """Float64 means of the rows of ``values`` (n, k) per class; shape (num_classes, k).

    Every class must occur in ``labels``: a class mean of no sample is undefined.
    """
    x = np.asarray(values, dtype=np.float64)
    y = check_labels(
        labels, "labels", n_samples=x.shape[0], num_classes=num_classes, min_per_class=1
    )
    counts = np.bincount(y, minlength=num_classes)
    onehot = np.zeros((num_classes, y.size))
    onehot[y, np.arange(y.size)] = 1.0
    return (onehot @ x) / counts[:, None]


class ClassMeansProbe:
    """Arrays ``class_means_logits`` (C, n_outputs) and, optionally, ``class_means_features``.

    Parameters
    ----------
    features : bool, default=True
        Also store the class means of the classifier's input (C, n_features).
    """

    name = "class_means"

    def __init__(self, *, features: bool = True) -> None:
        self.features = bool(features)

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        y = inp.y.detach().cpu().numpy()
        out = ProbeOutput()
        out.arrays["class_means_logits"] = class_means(
            inp.logits.detach().cpu().double().numpy(), y, inp.num_classes
        )
        if self.features:
            out.arrays["class_means_features"] = class_means(
                inp.features.detach().cpu().double().numpy(), y, inp.num_classes
            )
        return out


@register_probe("class_means")
def _make_class_means(**options: Any) -> ClassMeansProbe:
    return ClassMeansProbe(**options)
