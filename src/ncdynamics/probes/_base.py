"""The probe protocol used by the Recorder.

A probe is a callable object with a ``name`` that maps a :class:`ProbeInput` (the model and
one forward pass over a fixed probe set) to a :class:`ProbeOutput` (scalars for the metrics
table, arrays for the array store). The Recorder runs the forward pass once and hands the
same input to every probe.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch
from torch import nn

__all__ = [
    "FeatureFn",
    "Probe",
    "ProbeInput",
    "ProbeOutput",
    "available_probes",
    "make_probe",
    "register_probe",
]


#: ``feature_fn(model, x) -> (features, logits)``: features of shape (n, n_features) and
#: logits of shape (n, n_outputs), with gradients (the Recorder's feature extractor).
FeatureFn = Callable[[nn.Module, torch.Tensor], tuple[torch.Tensor, torch.Tensor]]


@dataclass
class ProbeInput:
    """One forward pass over the probe set, shared by all probes of a record.

    Attributes
    ----------
    model : torch.nn.Module
        The model, in eval mode while probes run.
    x : torch.Tensor of shape (n_samples, *input_shape)
        On the model's device and in its dtype.
    y : torch.Tensor of shape (n_samples,), int64
    features : torch.Tensor of shape (n_samples, n_features)
        Input of the classifier layer (on the CPU).
    logits : torch.Tensor of shape (n_samples, n_outputs)
        On the CPU.
    classifier : torch.nn.Linear or None
        The classifier layer, when it is a Linear layer.
    num_classes : int
    step : int
        The record's step (epoch or iteration, per the schedule).
    feature_fn : callable, optional
        ``feature_fn(model, x) -> (features, logits)``, for probes that need gradients.
    """

    model: nn.Module
    x: torch.Tensor
    y: torch.Tensor
    features: torch.Tensor
    logits: torch.Tensor
    classifier: nn.Linear | None
    num_classes: int
    step: int = 0
    feature_fn: FeatureFn | None = None


@dataclass
class ProbeOutput:
    """Scalars (go to the metrics table) and arrays (go to ``arrays/<name>/``)."""

    scalars: dict[str, float] = field(default_factory=dict)
    arrays: dict[str, np.ndarray] = field(default_factory=dict)


@runtime_checkable
class Probe(Protocol):
    name: str

    def __call__(self, inp: ProbeInput) -> ProbeOutput: ...


_PROBES: dict[str, Callable[..., Probe]] = {}


def register_probe(name: str) -> Callable[[Callable[..., Probe]], Callable[..., Probe]]:
    """Register a probe factory under ``name`` (used by ``make_probe``)."""

    def deco(factory: Callable[..., Probe]) -> Callable[..., Probe]:
        _PROBES[name] = factory
        return factory

    return deco


def available_probes() -> list[str]:
    return sorted(_PROBES)


def make_probe(name: str, **options: Any) -> Probe:
    """Build a registered probe by name; an unknown name lists the known ones."""
    if name not in _PROBES:
        raise ValueError(f"`probe` must be one of {', '.join(available_probes())}; got {name!r}.")
    return _PROBES[name](**options)
