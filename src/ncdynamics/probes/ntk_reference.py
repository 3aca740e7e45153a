"""A short, readable reference for the empirical NTK: Jacobian contraction.

The recipe of the ``torch.func`` NTK tutorial, with no chunking and no structure: per-sample
Jacobians ``J[i, a, :] = d f_a(x_i) / dw`` of every trainable parameter with
``vmap(jacrev(functional_call))``, flattened and concatenated, then contracted::

    Theta[i, j, a, b] = sum_p J1[i, a, p] * J2[j, b, p]          ([1], eqs. (2)-(3))

It holds the whole (n, O, P) Jacobian of each sample set, so it is only for small problems:
the tests compare every method of :func:`ncdynamics.probes.empirical_ntk` (whose fast path
is ``_fast_ntk_layers`` and ``_fast_ntk_contract``) against it. Same conventions as
``empirical_ntk``: eval mode (training flags restored), only ``requires_grad`` parameters, a
shared parameter counted once, the layouts of ``docs/axes.md``.

References
----------
.. [1] E. Seleznova, D. Weitzner, R. Giryes, G. Kutyniok, H.-H. Chou. "Neural (Tangent Kernel)
   Collapse". NeurIPS 2023.
"""

from __future__ import annotations

from typing import Literal

import torch
from torch import nn
from torch.func import jacrev, vmap

from ..models.modes import eval_mode
from ._ntk_output import Output, SelectedOutput, alias_names, call_with

__all__ = ["reference_ntk"]


def _jacobian(wrapped: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """Per-sample Jacobian of the wrapped output, shape (n, n_out, n_params)."""
    named = dict(wrapped.named_parameters())  # a shared parameter appears once
    params = {k: p.detach() for k, p in named.items() if p.requires_grad}
    consts = {k: p.detach() for k, p in named.items() if not p.requires_grad}
    consts.update(dict(wrapped.named_buffers()))
    aliases = alias_names(wrapped)

    def f_one(p: dict[str, torch.Tensor], xi: torch.Tensor) -> torch.Tensor:
        return call_with(wrapped, {**consts, **p}, aliases, (xi[None],))[0]  # (n_out,)

    jac = vmap(jacrev(f_one), in_dims=(None, 0))(params, x)  # name -> (n, n_out, *shape)
    return torch.cat([j.flatten(2) for j in jac.values()], dim=2)  # (n, n_out, P)


def reference_ntk(
    model: nn.Module,
    x: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    output: Output = "logits",
    mode: Literal["full", "diagonal", "trace"] = "full",
    average: bool = False,
    layer: str | None = None,
) -> torch.Tensor:
    """Empirical NTK by full Jacobian contraction (slow; for tests).

    Same arguments and layout as :func:`ncdynamics.probes.empirical_ntk`, without its method
    and memory options; inputs are trusted (no validation).

    Returns
    -------
    Tensor
        (n1, n2, O, O) for ``full``, (O, n1, n2) for ``diagonal``, (n1, n2) for ``trace``.
    """
    wrapped = SelectedOutput(model, output, layer)
    with eval_mode(model):
        j1 = _jacobian(wrapped, x)  # (n1, O, P)
        j2 = j1 if x2 is None else _jacobian(wrapped, x2)  # (n2, O, P)
    if mode == "full":
        return torch.einsum("iap,jbp->ijab", j1, j2)
    diagonal = torch.einsum("iap,jap->aij", j1, j2)  # (O, n1, n2)
    if mode == "diagonal":
        return diagonal
    trace = diagonal.sum(0)
    return trace / j1.shape[1] if average else trace
