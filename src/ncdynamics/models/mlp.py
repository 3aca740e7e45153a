"""A multilayer perceptron that exposes its features and classifier."""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_int, check_option
from .init import initialize

__all__ = ["ACTIVATIONS", "MLP"]

ACTIVATIONS = {
    "relu": nn.ReLU,
    "tanh": nn.Tanh,
    "gelu": nn.GELU,
    "leaky-relu": nn.LeakyReLU,
    "elu": nn.ELU,
    "swish": nn.SiLU,
    "sigmoid": nn.Sigmoid,
    "linear": nn.Identity,
}


class MLP(nn.Module):
    """Fully connected network ``in -> width x depth -> num_outputs``.

    Inputs of any shape ``(n, *input_shape)`` are flattened. ``features(x)`` returns the
    input of the last Linear layer (after the last hidden activation), shape
    ``(n, width)``; ``classifier`` is that layer.

    Parameters
    ----------
    in_features : int
    num_outputs : int
    depth : int, default=2
        Number of hidden layers.
    width : int, default=128
    activation : str, default="relu"
        One of ``ACTIVATIONS``.
    bias : bool, default=True
    init : str, default="pytorch-default"
        A scheme of :mod:`ncdynamics.models.init`.
    gain : float, default=1.0
        Gain of the ``xavier`` scheme.
    generator : torch.Generator, optional
        Source of the initial weights.
    """

    def __init__(
        self,
        in_features: int,
        num_outputs: int,
        *,
        depth: int = 2,
        width: int = 128,
        activation: str = "relu",
        bias: bool = True,
        init: str = "pytorch-default",
        gain: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        in_features = check_int(in_features, "in_features", low=1)
        num_outputs = check_int(num_outputs, "num_outputs", low=1)
        depth = check_int(depth, "depth", low=0)
        width = check_int(width, "width", low=1)
        check_option(activation, "activation", ACTIVATIONS)
        layers: list[nn.Module] = []
        d = in_features
        for _ in range(depth):
            layers += [nn.Linear(d, width, bias=bias), ACTIVATIONS[activation]()]
            d = width
        self.body = nn.Sequential(*layers)
        self.classifier = nn.Linear(d, num_outputs, bias=bias)
        initialize(self, init, gain=gain, generator=generator)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x.flatten(1))  # (n, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))  # (n, num_outputs)
