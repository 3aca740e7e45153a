"""Floating-point settings for training the networks of [1] (PyTorch, CPU).

The small-initialisation networks of [1] (gains below 1 on 20-layer nets, and the very small
gains of the XOR and blob nets) carry activations and gradients that decay layer by layer into
the subnormal range (below ~1e-38 in float32). On x86 CPUs every arithmetic operation on a
subnormal number takes a slow microcode path, which can make a training step many times
slower without changing what is learned. :func:`flush_denormals` asks PyTorch to treat
subnormal numbers as zero instead.

This changes results only where subnormal values occur, and then by less than the smallest
normal float32 number; it is part of the recorded setting of the alignment trials, so the
trial functions that used it from the start call it, and the others do not.
"""

from __future__ import annotations

__all__ = ["flush_denormals"]


def flush_denormals() -> bool:
    """Flush subnormal floats to zero in this process's CPU PyTorch operations.

    The setting is process-wide and stays on (``torch.set_flush_denormal(True)``); call it at
    the start of a trial function, which may run in a fresh worker process.

    Returns
    -------
    bool
        Whether the CPU supports it (SSE3 on x86); without support nothing changes.
    """
    import torch

    return bool(torch.set_flush_denormal(True))
