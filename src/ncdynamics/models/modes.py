"""Evaluation mode for a while, with every submodule's own mode given back afterwards."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from torch import nn

__all__ = ["eval_mode"]


@contextmanager
def eval_mode(model: nn.Module) -> Iterator[nn.Module]:
    """Put ``model`` in eval mode for the duration of the ``with`` block.

    Afterwards every submodule gets its own earlier mode back. ``model.train(was_training)``
    would instead set one mode everywhere, and so undo a submodule the user keeps in eval
    mode while the rest trains (a frozen BatchNorm, say). Modes are restored through
    ``train()``, so modules that override it see the change.

    Examples
    --------
    >>> from torch import nn
    >>> net = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2)).train()
    >>> _ = net[1].eval()  # frozen statistics
    >>> with eval_mode(net):
    ...     net.training, net[1].training
    (False, False)
    >>> net.training, net[1].training
    (True, False)
    """
    modes = [(module, module.training) for module in model.modules()]
    model.eval()
    try:
        yield model
    finally:
        model.train(modes[0][1])
        for module, mode in modes:  # pre-order: a parent is fixed before its children
            if module.training != mode:
                module.train(mode)
