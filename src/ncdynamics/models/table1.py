"""The multilayer-perceptron family of Table 1 of van Rossem & Saxe (ICML 2024).

One class covers every row: depth, width, activation (leaky ReLU, ReLU, ELU, tanh, Swish,
linear), Xavier-normal gain with zero biases, skip connections, dropout and the 1-D
convolutional variant. Every hidden layer's activations are available through
``hidden_layers(x)``, so any layer can play the role of the representation.

Readings of the paper's one-line descriptions:

- ``skip="two-back"``: ``h_l = act(W_l h_{l-1} + b_l) + h_{l-2}`` for every ``l >= 3``
  (a skip "jumping over the next two layers" on each layer; overlapping). ``"residual"``
  adds the skip only on odd ``l >= 3`` (blocks of two layers).
- ``conv=True``: the first layer is ``Linear(in -> width)``; every later hidden layer is a
  ``Conv1d(channels -> channels, kernel_size, padding=kernel_size // 2)`` on the hidden
  vector viewed as ``(channels, width // channels)``; the classifier is ``Linear(width ->
  out)``.
- ``dropout``: applied to each hidden activation in training mode (measure in eval mode).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from .._validation import check_int, check_option, check_scalar
from .init import initialize
from .mlp import ACTIVATIONS

__all__ = ["SKIPS", "TABLE1_ACTIVATIONS", "Table1Net", "middle_layer"]

TABLE1_ACTIVATIONS = ("leaky-relu", "relu", "elu", "tanh", "swish", "linear")
SKIPS = ("none", "two-back", "residual")


def middle_layer(depth: int) -> int:
    """The hidden layer halfway through a net of ``depth`` hidden layers (1-indexed).

    ``depth // 2`` (20 -> 10, 4 -> 2, 2 -> 1), and 1 for a single hidden layer.
    """
    return max(1, check_int(depth, "depth", low=1) // 2)


class _Conv1dLayer(nn.Module):
    """A hidden vector ``(n, channels * positions)`` through ``Conv1d`` and back."""

    def __init__(self, channels: int, positions: int, kernel_size: int) -> None:
        super().__init__()
        self.channels, self.positions = channels, positions
        self.conv = nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        z = self.conv(h.view(h.shape[0], self.channels, self.positions))  # (n, C, P)
        return z.flatten(1)  # (n, C * P)


class Table1Net(nn.Module):
    """Deep fully connected (or 1-D convolutional) network of Table 1.

    Parameters
    ----------
    in_features : int
    num_outputs : int
    depth : int
        Number of hidden layers (>= 1).
    width : int, default=500
    activation : {"leaky-relu", "relu", "elu", "tanh", "swish", "linear"}
        Leaky ReLU has slope 0.01, ELU alpha 1, Swish is SiLU.
    gain : float, default=1.0
        Xavier-normal gain (std ``gain * sqrt(2 / (fan_in + fan_out))``); biases are 0.
    skip : {"none", "two-back", "residual"}
    dropout : float, default=0.0
    conv : bool, default=False
    channels, kernel_size : int
        Of the convolutional variant (``width`` must be a multiple of ``channels``).
    generator : torch.Generator, optional
        Source of the initial weights.
    """

    def __init__(
        self,
        in_features: int,
        num_outputs: int,
        *,
        depth: int,
        width: int = 500,
        activation: str = "leaky-relu",
        gain: float = 1.0,
        skip: Literal["none", "two-back", "residual"] = "none",
        dropout: float = 0.0,
        conv: bool = False,
        channels: int = 20,
        kernel_size: int = 11,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        in_features = check_int(in_features, "in_features", low=1)
        num_outputs = check_int(num_outputs, "num_outputs", low=1)
        self.depth = check_int(depth, "depth", low=1)
        self.width = check_int(width, "width", low=1)
        check_option(activation, "activation", TABLE1_ACTIVATIONS)
        self.skip = check_option(skip, "skip", SKIPS)
        p = check_scalar(dropout, "dropout", low=0.0, high=1.0, closed="left")
        if conv:
            channels = check_int(channels, "channels", low=1)
            kernel_size = check_int(kernel_size, "kernel_size", low=1)
            if self.width % channels:
                raise ValueError(
                    f"`width` must be a multiple of `channels`={channels} for "
                    f"the convolutional variant; got {self.width}."
                )
        layers: list[nn.Module] = [nn.Linear(in_features, self.width)]
        for _ in range(self.depth - 1):
            layers.append(
                _Conv1dLayer(channels, self.width // channels, kernel_size)
                if conv
                else nn.Linear(self.width, self.width)
            )
        self.layers = nn.ModuleList(layers)
        self.act = ACTIVATIONS[activation]()
        self.drop = nn.Dropout(p) if p > 0 else nn.Identity()
        self.classifier = nn.Linear(self.width, num_outputs)
        self.activation = activation
        initialize(self, "xavier", gain=gain, generator=generator)

    def _has_skip(self, layer: int) -> bool:
        if self.skip == "two-back":
            return layer >= 3
        return self.skip == "residual" and layer >= 3 and layer % 2 == 1

    def hidden_layers(
        self, x: torch.Tensor, *, pre_activation: bool = False
    ) -> tuple[list[torch.Tensor], torch.Tensor]:
        """Every hidden layer and the output in one forward pass.

        Returns
        -------
        hidden : list of ``depth`` tensors of shape (n, width)
            Layer outputs (post-activation, after dropout and skip), or the affine
            pre-activations if ``pre_activation``.
        out : torch.Tensor of shape (n, num_outputs)
        """
        h = x.flatten(1)  # (n, in_features)
        outs: list[torch.Tensor] = []
        pres: list[torch.Tensor] = []
        for i, lin in enumerate(self.layers, start=1):
            z = lin(h)  # (n, width)
            h_new = self.drop(self.act(z))
            if self._has_skip(i):
                h_new = h_new + outs[i - 3]
            pres.append(z)
            outs.append(h_new)
            h = h_new
        return (pres if pre_activation else outs), self.classifier(h)

    def decode_from(self, h: torch.Tensor, layer: int) -> torch.Tensor:
        """The output computed from hidden layer ``layer`` (1-indexed); no-skip nets only."""
        layer = check_int(layer, "layer", low=1, high=self.depth)
        if self.skip != "none":
            raise ValueError(
                f"`decode_from` needs a net without skip connections; got skip={self.skip!r}."
            )
        for lin in self.layers[layer:]:
            h = self.drop(self.act(lin(h)))
        return self.classifier(h)  # (n, num_outputs)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden_layers(x)[0][-1]  # (n, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden_layers(x)[1]  # (n, num_outputs)
