"""Layer plans of the empirical NTK, cached per model (private).

Planning (``_fast_ntk_layers.plan_layers``: a pilot forward and backward pass, a gradient
check per layer, the output width) depends on the *structure* of the computation, not on the
values of the weights. Its result is kept per model, keyed on:

- the module tree: every submodule's name and class, the identity, shape, dtype, device and
  ``requires_grad`` of each of its parameters and buffers, and its forward and backward hooks
  (and the global ones);
- the chosen output (name, or the callable itself) and ``layer``;
- the per-sample input shape, dtype and device, and whether layers are structured at all
  (``method``).

So a parameter updated in place (an optimiser step) keeps the plan and the kernel is computed
from its new values; a replaced parameter or buffer, a frozen or unfrozen one, a new hook, a
new input shape or dtype misses. The memory budget and the mode only enter the chunk plan
(``_ntk_plan``), which is recomputed on every call (arithmetic, microseconds).

What the key cannot see is a forward pass that branches on a plain Python attribute (``if
self.use_skip:``); after changing such an attribute, call :func:`clear_plan_cache`. Plans whose
gradient check saw only zero gradients (``LayerPlan.verified`` false, e.g. behind a
zero-initialised head) are not stored, so they are checked again on the next call.

Entries are held per model in a ``WeakKeyDictionary`` (a model that is garbage collected
takes its plans along), at most ``MAX_PER_MODEL`` per model (least recently used dropped);
they name modules by their path, so they hold no reference to the model.
"""

from __future__ import annotations

import dataclasses
import threading
import weakref
from collections import OrderedDict
from collections.abc import Hashable

import torch
from torch import nn
from torch.nn.modules import module as _module

from ._fast_ntk_layers import LayerPlan

__all__ = ["MAX_PER_MODEL", "clear_plan_cache", "lookup", "plan_key", "store"]

MAX_PER_MODEL = 8

#: model -> key -> (plan without modules, {module path: kind}, n_out)
_Entry = tuple[LayerPlan, tuple[tuple[str, str], ...], int]
_CACHE: weakref.WeakKeyDictionary[nn.Module, OrderedDict[Hashable, _Entry]] = (
    weakref.WeakKeyDictionary()
)
_LOCK = threading.Lock()  # kernels may be computed from several threads (a recording thread)


def _tensor_sig(t: torch.Tensor | None) -> Hashable:
    if t is None:
        return None
    return (id(t), tuple(t.shape), t.dtype, t.device, t.requires_grad)


def plan_key(
    wrapped: nn.Module, output: object, layer: str | None, x: torch.Tensor, structured: bool
) -> Hashable | None:
    """The cache key of one call (see the module docstring); None (not cached) for an
    unhashable output callable."""
    try:
        hash(output)
    except TypeError:
        return None
    tree = tuple(
        (
            name,
            type(m),
            tuple(m._forward_hooks),
            tuple(m._forward_pre_hooks),
            tuple(m._backward_hooks),
            tuple(m._backward_pre_hooks),
            tuple((k, _tensor_sig(p)) for k, p in m._parameters.items()),
            tuple((k, _tensor_sig(b)) for k, b in m._buffers.items()),
        )
        for name, m in wrapped.named_modules(remove_duplicate=False)
    )
    hooks = tuple(
        tuple(d)
        for d in (
            _module._global_forward_hooks,
            _module._global_forward_pre_hooks,
            _module._global_backward_hooks,
            _module._global_backward_pre_hooks,
        )
    )
    return (tree, hooks, output, layer, tuple(x.shape[1:]), x.dtype, x.device, structured)


def lookup(
    model: nn.Module, key: Hashable | None, wrapped: nn.Module
) -> tuple[LayerPlan, int] | None:
    """The cached plan (bound to ``wrapped``'s modules) and output width, or None."""
    with _LOCK:
        entries = None if key is None else _CACHE.get(model)
        if entries is None or key not in entries:
            return None
        entries.move_to_end(key)
        bare, kinds, n_out = entries[key]
    by_name = dict(wrapped.named_modules())
    modules = {by_name[name]: kind for name, kind in kinds}
    return dataclasses.replace(bare, modules=modules, param_ids=set(bare.param_ids),
                               unused_ids=set(bare.unused_ids)), n_out  # fmt: skip


def store(
    model: nn.Module, key: Hashable | None, plan: LayerPlan, n_out: int, wrapped: nn.Module
) -> None:
    """Keep ``plan`` for ``model`` under ``key`` (only a verified plan)."""
    if key is None or not plan.verified:
        return
    names = {id(m): name for name, m in wrapped.named_modules()}
    kinds = tuple((names[id(m)], kind) for m, kind in plan.modules.items())
    bare = dataclasses.replace(plan, modules={})
    with _LOCK:
        entries = _CACHE.setdefault(model, OrderedDict())
        entries[key] = (bare, kinds, n_out)
        entries.move_to_end(key)
        while len(entries) > MAX_PER_MODEL:
            entries.popitem(last=False)


def clear_plan_cache(model: nn.Module | None = None) -> None:
    """Forget the cached NTK plans of ``model`` (of every model when None)."""
    with _LOCK:
        if model is None:
            _CACHE.clear()
        else:
            _CACHE.pop(model, None)
