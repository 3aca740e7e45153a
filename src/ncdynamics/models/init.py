"""Named initialisation schemes for Linear and convolution weights.

=================  ================================================================
``pytorch-default`` leave PyTorch's own initialisation (Kaiming-uniform, a = sqrt(5))
``lecun-normal``    truncated normal (2 std), std = 1/sqrt(fan_in) after truncation
                    correction, biases 0 (JAX/Flax ``lecun_normal``)
``he-fan-out``      normal, std = sqrt(2/fan_out), biases 0
``xavier``          normal, std = gain * sqrt(2/(fan_in + fan_out)), biases 0
=================  ================================================================
"""

from __future__ import annotations

import math

import torch
from torch import nn

from .._validation import check_option, check_scalar

__all__ = ["INIT_SCHEMES", "initialize"]

INIT_SCHEMES = ("pytorch-default", "lecun-normal", "he-fan-out", "xavier")

# std of a standard normal truncated to [-2, 2]; dividing by it restores unit variance.
_TRUNC_STD = 0.8796256610342398


def _fans(w: torch.Tensor) -> tuple[int, int]:
    receptive = w[0][0].numel() if w.dim() > 2 else 1
    return w.shape[1] * receptive, w.shape[0] * receptive


@torch.no_grad()
def initialize(
    model: nn.Module,
    scheme: str = "pytorch-default",
    *,
    gain: float = 1.0,
    generator: torch.Generator | None = None,
) -> nn.Module:
    """Re-initialise every Linear and Conv layer of ``model`` in place and return it.

    Norm layers are reset to weight 1, bias 0. ``gain`` scales the ``xavier`` std.
    """
    check_option(scheme, "scheme", INIT_SCHEMES)
    check_scalar(gain, "gain", low=0.0, closed="neither")
    for m in model.modules():
        if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d, nn.LayerNorm, nn.GroupNorm)):
            if getattr(m, "weight", None) is not None:
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
            continue
        if not isinstance(m, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            continue
        if scheme == "pytorch-default":
            m.reset_parameters() if generator is None else _default_with_gen(m, generator)
            continue
        fan_in, fan_out = _fans(m.weight)
        if scheme == "lecun-normal":
            std = 1.0 / math.sqrt(fan_in) / _TRUNC_STD
            nn.init.trunc_normal_(m.weight, 0.0, std, -2 * std, 2 * std, generator=generator)
        elif scheme == "he-fan-out":
            m.weight.normal_(0.0, math.sqrt(2.0 / fan_out), generator=generator)
        else:
            m.weight.normal_(0.0, gain * math.sqrt(2.0 / (fan_in + fan_out)), generator=generator)
        if m.bias is not None:
            nn.init.zeros_(m.bias)
    return model


def _default_with_gen(m: nn.Linear | nn.Conv1d | nn.Conv2d, generator: torch.Generator) -> None:
    fan_in, _ = _fans(m.weight)
    bound = 1.0 / math.sqrt(fan_in)
    # Kaiming-uniform with a = sqrt(5) has the same bound 1/sqrt(fan_in) as the bias.
    m.weight.uniform_(-bound, bound, generator=generator)
    if m.bias is not None:
        m.bias.uniform_(-bound, bound, generator=generator)
