"""ResNet20 for CIFAR- and MNIST-size inputs, with projection shortcuts.

The architecture of the NTK-collapse paper's code ([1], App. C; docs/ntk.md, Models): a conv3x3 stem
with ``width`` channels (no bias) + BN + ReLU; three stages of three basic blocks with
``width``, ``2 width`` and ``4 width`` channels, each block conv-BN-ReLU-conv-BN, added to
the shortcut, then ReLU; the first block of stages 2 and 3 downsamples with stride 2 and a
1x1 stride-2 projection conv *with bias* as the shortcut (option B); global average pooling
gives the features ``h`` of size ``4 width``; ``classifier = Linear(4 width, C)`` with bias.
With width 16, one input channel and 10 classes, P = 272,090.

References
----------
.. [1] E. Seleznova et al. "Neural (Tangent Kernel) Collapse". NeurIPS 2023.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import check_int, check_scalar
from ._shapes import check_images
from .init import initialize

__all__ = ["ResNet20"]


class _Block(nn.Module):
    def __init__(self, c_in: int, c_out: int, stride: int, momentum: float) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, c_out, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(c_out, momentum=momentum)
        self.conv2 = nn.Conv2d(c_out, c_out, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(c_out, momentum=momentum)
        self.shortcut = (
            nn.Conv2d(c_in, c_out, 1, stride=stride, bias=True)
            if stride != 1 or c_in != c_out
            else nn.Identity()
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + self.shortcut(x))


class ResNet20(nn.Module):
    """ResNet20 (3 stages x 3 basic blocks) exposing ``features`` and ``classifier``.

    Parameters
    ----------
    in_channels : int, default=1
    num_outputs : int, default=10
    width : int, default=16
        Channels of the stem and the first stage; stages have width, 2 width, 4 width.
    input_size : int, default=28
        Height and width of the inputs (at least 4; 28 for MNIST, 32 for CIFAR10).
    bn_momentum : float, default=0.01
        PyTorch BatchNorm momentum (0.01 matches Flax's 0.99 of the paper's code).
    init : str, default="pytorch-default"
    generator : torch.Generator, optional
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_outputs: int = 10,
        *,
        width: int = 16,
        input_size: int = 28,
        bn_momentum: float = 0.01,
        init: str = "pytorch-default",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.in_channels = check_int(in_channels, "in_channels", low=1)
        num_outputs = check_int(num_outputs, "num_outputs", low=1)
        width = check_int(width, "width", low=1)
        self.input_size = check_int(input_size, "input_size", low=4)
        momentum = check_scalar(bn_momentum, "bn_momentum", low=0.0, high=1.0)
        self.stem = nn.Sequential(
            nn.Conv2d(in_channels, width, 3, padding=1, bias=False),
            nn.BatchNorm2d(width, momentum=momentum),
            nn.ReLU(),
        )
        blocks: list[nn.Module] = []
        c_in = width
        for stage, c_out in enumerate((width, 2 * width, 4 * width)):
            for k in range(3):
                stride = 2 if stage > 0 and k == 0 else 1
                blocks.append(_Block(c_in, c_out, stride, momentum))
                c_in = c_out
        self.blocks = nn.Sequential(*blocks)
        self.classifier = nn.Linear(c_in, num_outputs)
        initialize(self, init, generator=generator)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        check_images(x, self.in_channels, self.input_size)
        out = self.blocks(self.stem(x))  # (n, 4 width, s', s')
        return out.mean((2, 3))  # (n, 4 width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))  # (n, num_outputs)
