"""DenseNet-BC of the NTK-collapse paper's code, default DenseNet40-BC.

Parameter counts: docs/theories/ntk_collapse.md.

Three dense blocks of bottleneck layers BN-ReLU-conv1x1(bn_size k)-BN-ReLU-conv3x3(k), each
output concatenated to its input; the stem is a 3x3 conv with ``2 k`` channels; transitions
are BN-ReLU-conv1x1(c/2)-avgpool2; the head is BN-ReLU-global average pool, giving the
features ``h``; ``classifier = Linear(n, C)`` with bias. With blocks (6, 6, 6), growth 12,
bn_size 2 and one input channel: n = 132 and P = 96,202 (10 classes). Convs have no bias.

References
----------
.. [1] M. Seleznova et al. "Neural (Tangent Kernel) Collapse". NeurIPS 2023.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .._validation import check_int, check_scalar
from ._shapes import check_images
from .init import initialize

__all__ = ["DenseNetBC"]


class _DenseLayer(nn.Module):
    def __init__(self, c_in: int, growth: int, bn_size: int, momentum: float) -> None:
        super().__init__()
        self.bn1 = nn.BatchNorm2d(c_in, momentum=momentum)
        self.conv1 = nn.Conv2d(c_in, bn_size * growth, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(bn_size * growth, momentum=momentum)
        self.conv2 = nn.Conv2d(bn_size * growth, growth, 3, padding=1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = self.conv1(F.relu(self.bn1(x)))
        out = self.conv2(F.relu(self.bn2(out)))
        return torch.cat([x, out], dim=1)  # (n, c_in + growth, s, s)


class _Transition(nn.Module):
    def __init__(self, c_in: int, c_out: int, momentum: float) -> None:
        super().__init__()
        self.bn = nn.BatchNorm2d(c_in, momentum=momentum)
        self.conv = nn.Conv2d(c_in, c_out, 1, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.avg_pool2d(self.conv(F.relu(self.bn(x))), 2)


class DenseNetBC(nn.Module):
    """DenseNet-BC exposing ``features`` and ``classifier``.

    Parameters
    ----------
    in_channels : int, default=1
    num_outputs : int, default=10
    blocks : tuple of int, default=(6, 6, 6)
        Bottleneck layers per dense block (DenseNet40-BC: three blocks of 6).
    growth : int, default=12
        Growth rate k.
    bn_size : int, default=2
        Bottleneck width factor (the paper's code uses 2; original DenseNet-BC uses 4).
    width_multiplier : float, default=1.0
        Scales the growth rate (at least 1 channel).
    input_size : int, default=28
        Height and width; must be at least ``2 ** (len(blocks) - 1)``.
    bn_momentum : float, default=0.01
    init : str, default="pytorch-default"
    generator : torch.Generator, optional
    """

    def __init__(
        self,
        in_channels: int = 1,
        num_outputs: int = 10,
        *,
        blocks: tuple[int, ...] = (6, 6, 6),
        growth: int = 12,
        bn_size: int = 2,
        width_multiplier: float = 1.0,
        input_size: int = 28,
        bn_momentum: float = 0.01,
        init: str = "pytorch-default",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.in_channels = check_int(in_channels, "in_channels", low=1)
        num_outputs = check_int(num_outputs, "num_outputs", low=1)
        if len(blocks) < 1:
            raise ValueError(f"`blocks` must hold at least one block; got {blocks!r}.")
        blocks = tuple(check_int(b, "blocks", low=1) for b in blocks)
        mult = check_scalar(width_multiplier, "width_multiplier", low=0.0, closed="neither")
        k = max(1, int(round(check_int(growth, "growth", low=1) * mult)))
        bn_size = check_int(bn_size, "bn_size", low=1)
        self.input_size = check_int(input_size, "input_size", low=2 ** (len(blocks) - 1))
        momentum = check_scalar(bn_momentum, "bn_momentum", low=0.0, high=1.0)
        c = 2 * k
        self.stem = nn.Conv2d(self.in_channels, c, 3, padding=1, bias=False)
        stages: list[nn.Module] = []
        for i, n_layers in enumerate(blocks):
            for _ in range(n_layers):
                stages.append(_DenseLayer(c, k, bn_size, momentum))
                c += k
            if i < len(blocks) - 1:
                stages.append(_Transition(c, c // 2, momentum))
                c //= 2
        self.stages = nn.Sequential(*stages)
        self.bn_final = nn.BatchNorm2d(c, momentum=momentum)
        self.classifier = nn.Linear(c, num_outputs)
        initialize(self, init, generator=generator)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        check_images(x, self.in_channels, self.input_size)
        out = F.relu(self.bn_final(self.stages(self.stem(x))))  # (n, c, s', s')
        return out.mean((2, 3))  # (n, c)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))  # (n, num_outputs)
