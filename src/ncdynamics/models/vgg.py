"""VGG11-BN and VGG16-BN of the NTK-collapse paper's code ([1] App. C).

Each conv is 3x3 "same" with bias, then BN and ReLU; ``M`` is a 2x2 max-pool. After the
convolutional stack the map is flattened and passed through FC(512)-BN-ReLU and
FC(256)-BN-ReLU, which give the features ``h`` (size ``256 * width_multiplier``);
``classifier = Linear(n, C)`` with bias. Dropout is 0. With width multiplier 1, one input
channel at 32x32 and 10 classes VGG11 has P = 9,622,922; VGG16 with three channels
P = 15,121,226.

References
----------
.. [1] M. Seleznova et al. "Neural (Tangent Kernel) Collapse". NeurIPS 2023.
"""

from __future__ import annotations

import torch
from torch import nn

from .._validation import check_int, check_option, check_scalar
from ._shapes import check_images
from .init import initialize

__all__ = ["VGG", "VGG_CONFIGS"]

VGG_CONFIGS: dict[str, tuple[int | str, ...]] = {
    "vgg11": (64, "M", 128, "M", 256, 256, "M", 512, 512, "M", 512, 512, "M"),
    "vgg16": (
        64,
        64,
        "M",
        128,
        128,
        "M",
        256,
        256,
        256,
        "M",
        512,
        512,
        512,
        "M",
        512,
        512,
        512,
        "M",
    ),
}


def _scaled(c: int, mult: float) -> int:
    return max(1, int(round(c * mult)))


class VGG(nn.Module):
    """VGG with batch norm, exposing ``features`` and ``classifier``.

    Parameters
    ----------
    config : {"vgg11", "vgg16"}
    in_channels : int, default=1
    num_outputs : int, default=10
    width_multiplier : float, default=1.0
        Scales every conv and FC width (e.g. 0.125 for a CPU-sized VGG).
    input_size : int, default=32
        Height and width of the inputs; must be divisible by 2**(number of pools) = 32.
    bn_momentum : float, default=0.1
        PyTorch BatchNorm momentum (0.1 matches Flax 0.9 of the paper's code).
    init : str, default="pytorch-default"
    generator : torch.Generator, optional
    """

    def __init__(
        self,
        config: str = "vgg11",
        in_channels: int = 1,
        num_outputs: int = 10,
        *,
        width_multiplier: float = 1.0,
        input_size: int = 32,
        bn_momentum: float = 0.1,
        init: str = "pytorch-default",
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_option(config, "config", VGG_CONFIGS)
        self.in_channels = check_int(in_channels, "in_channels", low=1)
        num_outputs = check_int(num_outputs, "num_outputs", low=1)
        mult = check_scalar(width_multiplier, "width_multiplier", low=0.0, closed="neither")
        self.input_size = check_int(input_size, "input_size", low=1)
        momentum = check_scalar(bn_momentum, "bn_momentum", low=0.0, high=1.0)
        n_pool = VGG_CONFIGS[config].count("M")
        if self.input_size % 2**n_pool:
            raise ValueError(
                f"`input_size` must be divisible by {2**n_pool} for {config}; "
                f"got {self.input_size}."
            )
        layers: list[nn.Module] = []
        c = self.in_channels
        for item in VGG_CONFIGS[config]:
            if item == "M":
                layers.append(nn.MaxPool2d(2))
                continue
            c_out = _scaled(int(item), mult)
            layers += [
                nn.Conv2d(c, c_out, 3, padding=1, bias=True),
                nn.BatchNorm2d(c_out, momentum=momentum),
                nn.ReLU(),
            ]
            c = c_out
        self.convs = nn.Sequential(*layers)
        flat = c * (self.input_size // 2**n_pool) ** 2
        h1, h2 = _scaled(512, mult), _scaled(256, mult)
        self.head = nn.Sequential(
            nn.Linear(flat, h1),
            nn.BatchNorm1d(h1, momentum=momentum),
            nn.ReLU(),
            nn.Linear(h1, h2),
            nn.BatchNorm1d(h2, momentum=momentum),
            nn.ReLU(),
        )
        self.classifier = nn.Linear(h2, num_outputs)
        initialize(self, init, generator=generator)

    def features(self, x: torch.Tensor) -> torch.Tensor:
        check_images(x, self.in_channels, self.input_size)
        return self.head(self.convs(x).flatten(1))  # (n, 256 * width_multiplier)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))  # (n, num_outputs)
