"""Input checks shared by the image models."""

from __future__ import annotations

import torch


def check_images(x: torch.Tensor, channels: int, size: int) -> None:
    """Raise ``ValueError`` unless ``x`` has shape (n, channels, size, size)."""
    expected = (channels, size, size)
    if x.dim() != 4 or tuple(x.shape[1:]) != expected:
        raise ValueError(
            f"`x` must have shape (n, {', '.join(map(str, expected))}); got {tuple(x.shape)}."
        )
