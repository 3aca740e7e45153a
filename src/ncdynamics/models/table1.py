"""The multilayer-perceptron family of Table 1 of van Rossem & Saxe (ICML 2024).

One class covers every row: depth, width, activation (leaky ReLU, ReLU, ELU, tanh, Swish,
linear), Xavier-normal gain with zero biases, skip connections, dropout and the 1-D
convolutional variant. Every hidden layer's activations are available through
``hidden_layers(x)``, so any layer can play the role of the representation.

Readings of the paper's one-line descriptions:

- ``skip="two-back"``: ``h_l = act(W_l h_{l-1} + b_l) + h_{l-2}`` for every ``l >= 3``
  (a skip "jumping over the next two layers" on each layer; overlapping). ``"residual"``
  adds the skip only on odd ``l >= 3`` (blocks of two layers).
- ``conv=True, conv_layout="same-padding"``: the first layer is ``Linear(in -> width)``;
  every later hidden layer is a ``Conv1d(channels -> channels, kernel_size,
  padding=kernel_size // 2)`` on the hidden vector viewed as ``(channels, width //
  channels)``; the classifier is ``Linear(width -> out)``.
- ``conv=True, conv_layout="authors"``: the authors' code (loekvanrossem/universality,
  ``source/models.py``, class ``CNN``): ``Linear(in -> width)``, then ``Conv1d(1 ->
  channels, k)`` on the width-long vector as one channel, ``depth - 1`` times ``Conv1d(channels
  -> channels, k)``, ``Conv1d(channels -> 1, k)``, all without padding (the length shrinks by
  ``k - 1`` per convolution), and ``Linear(width - (k - 1)(depth + 1) -> out)``. Its hidden
  representations are the ``depth + 2`` layer outputs (flattened), as the authors' list of
  activations; the authors size the last Linear as ``width - k * depth``, which equals the
  actual length only at their ``depth = 10``.
- ``dropout``: applied to each hidden activation in training mode (measure in eval mode);
  ``dropout_input=True`` also drops the input, as the authors' ``Dropout`` class does (a
  ``Dropout`` module before every ``Linear``).
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn

from .._validation import check_int, check_option, check_scalar
from .init import initialize
from .mlp import ACTIVATIONS

__all__ = [
    "CONV_LAYOUTS",
    "SKIPS",
    "TABLE1_ACTIVATIONS",
    "Table1Net",
    "authors_layer",
    "middle_layer",
]

TABLE1_ACTIVATIONS = ("leaky-relu", "relu", "elu", "tanh", "swish", "linear")
SKIPS = ("none", "two-back", "residual")
CONV_LAYOUTS = ("same-padding", "authors")


def middle_layer(depth: int) -> int:
    """The hidden layer halfway through a net of ``depth`` hidden layers (1-indexed).

    ``depth // 2`` (20 -> 10, 4 -> 2, 2 -> 1), and 1 for a single hidden layer.
    """
    return max(1, check_int(depth, "depth", low=1) // 2)


def authors_layer(depth: int, *, dropout: bool = False) -> int:
    """The hidden layer the authors' code reads (1-indexed into ``Table1Net.hidden_layers``).

    The authors' settings files (loekvanrossem/universality, ``experiments/model_settings``)
    give ``hidden_layer``, a 0-based index into their model's list of hidden activations,
    equal to ``depth // 2`` for every MLP row: the ``depth // 2 + 1``-th hidden layer (20 ->
    11, 4 -> 3, 2 -> 2, 1 -> 1). Their ``Dropout`` net lists the output of every ``Dropout``
    and every ``Linear`` module, so index ``depth // 2`` (5 of the 10-layer row) is hidden
    layer ``depth // 4 + 1`` (3). Their ``CNN`` lists ``Linear``, ``Conv1d(1 -> 20)``, the
    ``Conv1d(20 -> 20)`` layers and ``Conv1d(20 -> 1)``: index 5 of the 10-layer row is the
    6th of those ``depth + 2`` representations (``conv_layout="authors"``), again
    ``depth // 2 + 1``.

    >>> [authors_layer(d) for d in (1, 2, 4, 20)], authors_layer(10, dropout=True)
    ([1, 2, 3, 11], 3)
    """
    depth = check_int(depth, "depth", low=1)
    if dropout:
        return depth // 4 + 1
    return depth // 2 + 1


class _Conv1dLayer(nn.Module):
    """A hidden vector ``(n, channels * positions)`` through ``Conv1d`` and back."""

    def __init__(self, channels: int, positions: int, kernel_size: int) -> None:
        super().__init__()
        self.channels, self.positions = channels, positions
        self.conv = nn.Conv1d(channels, channels, kernel_size, padding=kernel_size // 2)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        z = self.conv(h.view(h.shape[0], self.channels, self.positions))  # (n, C, P)
        return z.flatten(1)  # (n, C * P)


class _AuthorsConv(nn.Module):
    """``Conv1d`` without padding on a flattened ``(n, c_in * length)`` vector, flattened back."""

    def __init__(self, c_in: int, c_out: int, kernel_size: int) -> None:
        super().__init__()
        self.c_in = c_in
        self.conv = nn.Conv1d(c_in, c_out, kernel_size)

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.conv(h.view(h.shape[0], self.c_in, -1)).flatten(1)


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
        Of the convolutional variant (``width`` must be a multiple of ``channels`` in the
        ``"same-padding"`` layout, larger than ``(kernel_size - 1) (depth + 1)`` in the
        ``"authors"`` one).
    conv_layout : {"same-padding", "authors"}
        Module docstring; ``"authors"`` has ``depth + 2`` hidden representations.
    dropout_input : bool, default=False
        Also apply dropout to the input (the authors' ``Dropout`` net).
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
        conv_layout: Literal["same-padding", "authors"] = "same-padding",
        dropout_input: bool = False,
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
        self.conv_layout = check_option(conv_layout, "conv_layout", CONV_LAYOUTS)
        self.authors_conv = bool(conv) and conv_layout == "authors"
        final = self.width
        if conv:
            channels = check_int(channels, "channels", low=1)
            kernel_size = check_int(kernel_size, "kernel_size", low=1)
            if self.authors_conv:
                final = self.width - (kernel_size - 1) * (self.depth + 1)
                if final < 1:
                    raise ValueError(
                        f"`width` must exceed (kernel_size - 1) * (depth + 1) = "
                        f"{self.width - final} for the authors' convolutional layout; "
                        f"got {self.width}."
                    )
            elif self.width % channels:
                raise ValueError(
                    f"`width` must be a multiple of `channels`={channels} for "
                    f"the convolutional variant; got {self.width}."
                )
        layers: list[nn.Module] = [nn.Linear(in_features, self.width)]
        if self.authors_conv:
            layers.append(_AuthorsConv(1, channels, kernel_size))
            layers.extend(_AuthorsConv(channels, channels, kernel_size) for _ in range(depth - 1))
            layers.append(_AuthorsConv(channels, 1, kernel_size))
        else:
            for _ in range(self.depth - 1):
                layers.append(
                    _Conv1dLayer(channels, self.width // channels, kernel_size)
                    if conv
                    else nn.Linear(self.width, self.width)
                )
        self.layers = nn.ModuleList(layers)
        self.act = ACTIVATIONS[activation]()
        self.drop = nn.Dropout(p) if p > 0 else nn.Identity()
        self.drop_input = nn.Dropout(p) if p > 0 and dropout_input else nn.Identity()
        self.classifier = nn.Linear(final, num_outputs)
        self.activation = activation
        initialize(self, "xavier", gain=gain, generator=generator)

    @property
    def n_hidden(self) -> int:
        """Number of hidden representations: ``depth``, or ``depth + 2`` (authors' conv)."""
        return len(self.layers)

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
        hidden : list of ``n_hidden`` tensors of shape (n, width)
            Layer outputs (post-activation, after dropout and skip), or the affine
            pre-activations if ``pre_activation``; in the authors' conv layout the flattened
            ``(n, channels * length)`` outputs, of decreasing length.
        out : torch.Tensor of shape (n, num_outputs)
        """
        h = self.drop_input(x.flatten(1))  # (n, in_features)
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
        layer = check_int(layer, "layer", low=1, high=self.n_hidden)
        if self.skip != "none" or self.authors_conv:
            raise ValueError(
                "`decode_from` needs a net without skip connections or the authors' conv "
                f"layout; got skip={self.skip!r}, conv_layout={self.conv_layout!r}."
            )
        for lin in self.layers[layer:]:
            h = self.drop(self.act(lin(h)))
        return self.classifier(h)  # (n, num_outputs)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden_layers(x)[0][-1]  # (n, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.hidden_layers(x)[1]  # (n, num_outputs)
