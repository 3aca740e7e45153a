"""Features (input of the classifier) and logits of any ``nn.Module`` in one forward pass.

Models of the zoo have ``features(x)`` and ``classifier``. For any other module, name the
classifier layer (``layer="fc"``) and a forward hook on it captures its input.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn

__all__ = ["FeatureExtractor", "find_classifier"]


def find_classifier(model: nn.Module, layer: str | None = None) -> nn.Module:
    """The classifier layer: ``model.classifier``, a named submodule, or the last Linear."""
    if layer is not None:
        modules = dict(model.named_modules())
        if layer not in modules:
            known = ", ".join(n for n in modules if n) or "none"
            raise ValueError(
                f"`layer` must name a submodule of the model; got {layer!r}. Submodules: {known}."
            )
        return modules[layer]
    clf = getattr(model, "classifier", None)
    if isinstance(clf, nn.Module):
        return clf
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    if not linears:
        raise ValueError("`model` has no Linear layer and no `classifier`; pass `layer=`.")
    return linears[-1]


class FeatureExtractor:
    """Callable ``(model, x) -> (features, logits)`` using ``model.features`` or a hook.

    Parameters
    ----------
    layer : str, optional
        Name of the classifier submodule whose *input* are the features. Ignored for models
        that define ``features`` and ``classifier`` unless given.
    output : callable, optional
        Maps the model's raw output to logits (for models returning tuples or dicts).
    """

    def __init__(self, layer: str | None = None, output: Callable[..., torch.Tensor] | None = None):
        self.layer = layer
        self.output = output

    def __call__(self, model: nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if (
            self.layer is None
            and hasattr(model, "features")
            and hasattr(model, "classifier")
            and callable(model.features)
        ):
            h = model.features(x)
            return h.flatten(1), model.classifier(h)
        clf = find_classifier(model, self.layer)
        store: dict[str, torch.Tensor] = {}

        def hook(_m: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
            store["h"] = inputs[0]

        handle = clf.register_forward_pre_hook(hook)
        try:
            out = model(x)
        finally:
            handle.remove()
        out = self.output(out) if self.output is not None else out
        if "h" not in store:
            raise ValueError("the classifier layer was not called in the forward pass.")
        return store["h"].flatten(1), out
