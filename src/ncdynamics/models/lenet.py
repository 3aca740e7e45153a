"""The LeNet-style convolutional network of the LE-SDE experiments.

Layers (Zhang, Wang & Su, NeurIPS 2021, App. D, and their code): Conv(C_in -> 6, 5x5) -> ReLU ->
MaxPool 2 -> Conv(6 -> 16, 5x5) -> ReLU -> MaxPool 2 -> flatten -> Linear(., 120) -> ReLU
-> Linear(120, 84) -> ReLU -> Linear(84, K). The paper calls it "a variant of AlexNet".
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_int
from .init import initialize

__all__ = ["LeNet"]


class LeNet(nn.Module):
    """LeNet-5-like CNN with ``features(x)`` (the 84-dim input of the classifier).

    Parameters
    ----------
    in_channels : int
        1 for grey images, 3 for colour.
    num_classes : int
    input_size : int, default=32
        Side of the square input; at least 16 (16x16 gives a 1x1x16 map after the convs).
    init : str, default="pytorch-default"
        A scheme of :mod:`ncdynamics.models.init`; the default is PyTorch's, U(±1/sqrt(fan_in)).
    generator : torch.Generator, optional
        Source of the initial weights.
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_classes: int = 3,
        *,
        input_size: int = 32,
        init: str = "pytorch-default",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        in_channels = check_int(in_channels, "in_channels", low=1)
        num_classes = check_int(num_classes, "num_classes", low=1)
        input_size = check_int(input_size, "input_size", low=16)
        side = ((input_size - 4) // 2 - 4) // 2
        self.input_size = input_size
        self.body = nn.Sequential(
            nn.Conv2d(in_channels, 6, 5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * side * side, 120),
            nn.ReLU(),
            nn.Linear(120, 84),
            nn.ReLU(),
        )
        self.classifier = nn.Linear(84, num_classes)
        initialize(self, init, generator=generator)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)  # (n, 84)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.body(x))  # (n, num_classes)
