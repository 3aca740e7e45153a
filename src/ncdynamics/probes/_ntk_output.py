"""The function an NTK is taken of: the chosen output, and the model as a function of its
parameters.

:class:`SelectedOutput` picks logits, classifier features, or a function of the logits;
:func:`call_with` evaluates a module with given parameter values. Both are shared by the fast
engine (``ntk.py``, ``_ntk_vp.py``) and the reference (``ntk_reference.py``), so that all of
them differentiate exactly the same function.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import torch
from torch import nn
from torch.func import functional_call

from ..models.features import find_classifier

__all__ = ["OUTPUTS", "NamedOutput", "Output", "SelectedOutput", "alias_names", "call_with"]

OUTPUTS = ("logits", "features")

#: The outputs that have a name.
NamedOutput = Literal["logits", "features"]
#: ``"logits"``, ``"features"``, or a callable from the model's output to (n, n_out).
Output = NamedOutput | Callable[[torch.Tensor], torch.Tensor]


class SelectedOutput(nn.Module):
    """Wraps ``model`` so that ``forward(x)`` returns the chosen output, shape (n, n_out)."""

    def __init__(self, model: nn.Module, output: Output, layer: str | None) -> None:
        super().__init__()
        self.model = model
        self.output = output
        self.layer = layer
        self._clf: nn.Module | None = None
        if output == "features" and (
            layer is not None or not callable(getattr(model, "features", None))
        ):
            # not registered as a submodule: its parameters belong to ``model`` already
            object.__setattr__(self, "_clf", find_classifier(model, layer))

    def _features(self, x: torch.Tensor) -> torch.Tensor:
        features = getattr(self.model, "features", None)
        if self._clf is None and callable(features):
            out: torch.Tensor = features(x)
            return out
        if self._clf is None:
            raise ValueError("`output`='features': the model has no classifier layer.")
        store: list[torch.Tensor] = []
        handle = self._clf.register_forward_pre_hook(lambda _m, a: store.append(a[0]))
        try:
            self.model(x)
        finally:
            handle.remove()
        if not store:
            raise ValueError("`output`='features': the classifier layer was not called.")
        return store[0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.output == "features":
            out = self._features(x).flatten(1)
        elif self.output == "logits":
            out = self.model(x)
        elif callable(self.output):
            out = self.output(self.model(x))
        else:
            raise ValueError(
                f"`output` must be one of {OUTPUTS} or a callable; got {self.output!r}."
            )
        if not isinstance(out, torch.Tensor):
            raise TypeError(
                f"`output` must yield a tensor of shape (n, n_outputs); got "
                f"{type(out).__name__}. Pass output=callable to select one."
            )
        if out.dim() != 2:
            raise ValueError(
                f"`output` must have shape (n, n_outputs) with a class axis; got shape "
                f"{tuple(out.shape)}. Pass output=lambda y: y.reshape(len(y), -1) or similar."
            )
        return out


def alias_names(module: nn.Module) -> dict[str, str]:
    """One name per parameter or buffer slot of ``module`` -> the first name of its tensor.

    A tensor shared by two modules (tied weights) has a slot in each, so several names here;
    the first is the one ``named_parameters()`` and ``named_buffers()`` list. A submodule
    registered under two names has one slot per tensor, listed once (under its first path).
    """
    out: dict[str, str] = {}
    first: dict[int, str] = {}  # tensor id -> its first name
    slots: set[tuple[int, str]] = set()  # (module id, attribute) already listed
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for store in (mod._parameters, mod._buffers):
            for key, t in store.items():
                if t is None or (id(mod), key) in slots:
                    continue
                slots.add((id(mod), key))
                name = f"{prefix}.{key}" if prefix else key
                out[name] = first.setdefault(id(t), name)
    return out


def call_with(
    module: nn.Module,
    values: dict[str, torch.Tensor],
    aliases: dict[str, str],
    args: tuple[torch.Tensor, ...],
) -> torch.Tensor:
    """``module(*args)`` with its parameters and buffers replaced by ``values``.

    ``values`` is keyed by first names (``alias_names``); every slot of the same tensor gets
    the same value, so a gradient through a shared tensor sums over its uses. Naming each
    slot once, rather than letting ``functional_call`` tie names, matters for a submodule
    registered under two names: ``tie_weights=True``, or a slot swapped twice, leaves plain
    tensors in place of the module's parameters after the call (torch 2.x).
    """
    full = {alias: values[first] for alias, first in aliases.items()}
    out: torch.Tensor = functional_call(module, full, args, tie_weights=False)
    return out
