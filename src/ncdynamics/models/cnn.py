"""A small convolutional network for 28 x 28 (or any square) images."""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_int
from ._shapes import check_images
from .init import initialize

__all__ = ["SmallCNN"]


class SmallCNN(nn.Module):
    """Two conv-ReLU-maxpool stages, one hidden Linear layer, a Linear classifier.

    ``conv3x3(c_in -> c1) - ReLU - pool2 - conv3x3(c1 -> c2) - ReLU - pool2 - flatten -
    Linear(c2 * (s // 4)^2 -> width) - ReLU`` gives the features ``h`` of shape
    ``(n, width)``; ``classifier = Linear(width, num_outputs)``. With the defaults on
    28 x 28 x 1 inputs, P = 55,338 parameters.

    Parameters
    ----------
    in_channels : int, default=1
    num_outputs : int, default=10
    channels : tuple of int, default=(16, 32)
        Channels of the two conv layers.
    width : int, default=32
        Number of features (input of the classifier).
    input_size : int, default=28
        Height and width of the inputs (at least 4).
    init : str, default="pytorch-default"
        A scheme of :mod:`ncdynamics.models.init`.
    generator : torch.Generator, optional
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_outputs: int = 10,
        *,
        channels: tuple[int, int] = (16, 32),
        width: int = 32,
        input_size: int = 28,
        init: str = "pytorch-default",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        in_channels = check_int(in_channels, "in_channels", low=1)
        num_outputs = check_int(num_outputs, "num_outputs", low=1)
        width = check_int(width, "width", low=1)
        self.input_size = check_int(input_size, "input_size", low=4)
        if len(channels) != 2:
            raise ValueError(f"`channels` must hold 2 integers; got {channels!r}.")
        c1, c2 = (check_int(c, "channels", low=1) for c in channels)
        self.in_channels = in_channels
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, c1, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(c1, c2, 3, padding=1),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(c2 * (input_size // 4) ** 2, width),
            nn.ReLU(),
        )
        self.classifier = nn.Linear(width, num_outputs)
        initialize(self, init, generator=generator)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        check_images(x, self.in_channels, self.input_size)
        return self.body(x)  # (n, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))  # (n, num_outputs)
