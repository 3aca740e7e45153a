"""NTK-vector products: the empirical NTK without storing a Jacobian (private).

Column ``(j, b)`` of the kernel is ``J(x) J(x2_j)^T e_b``: the gradient of ``f_b(x2_j)`` with
respect to the parameters (one per-sample vjp, batched over ``k`` columns with ``vmap``) is
pushed forward through all of ``x`` (one jvp). Memory about ``k (P + n1 A)``; cost ``n2 O``
jvps over ``x``.
"""

from __future__ import annotations

import torch
from torch import nn
from torch.func import jvp, vmap

from ._ntk_output import alias_names, call_with

__all__ = ["vp_kernel"]


def vp_kernel(
    wrapped: nn.Module,
    x: torch.Tensor,
    x2: torch.Tensor | None,
    mode: str,
    n_out: int,
    k: int,
    unused: set[int],
) -> torch.Tensor:
    """NTK-vector products: column (j, b) is J(x) J(x2_j)^T e_b, via one vjp and one jvp."""
    named = dict(wrapped.named_parameters())
    params = {n: p.detach() for n, p in named.items() if p.requires_grad and id(p) not in unused}
    consts = {n: p.detach() for n, p in named.items() if n not in params}
    consts.update(dict(wrapped.named_buffers()))
    aliases = alias_names(wrapped)
    xb = x if x2 is None else x2
    n1, n2 = x.shape[0], xb.shape[0]

    def f_batch(p: dict[str, torch.Tensor], inp: torch.Tensor) -> torch.Tensor:
        return call_with(wrapped, {**consts, **p}, aliases, (inp,))  # (n, O)

    def f_one(p: dict[str, torch.Tensor], xj: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return f_batch(p, xj[None])[0].gather(0, b[None])[0]

    grads = vmap(torch.func.grad(f_one), in_dims=(None, 0, 0))
    push = vmap(lambda t: jvp(lambda p: f_batch(p, x), (params,), (t,))[1])
    shape = {"full": (n1, n2, n_out, n_out), "diagonal": (n_out, n1, n2), "trace": (n1, n2)}
    res = torch.zeros(shape[mode], dtype=x.dtype, device=x.device)
    jj = torch.arange(n2, device=x.device).repeat_interleave(n_out)  # column (j, b) pairs, j-major
    bb = torch.arange(n_out, device=x.device).repeat(n2)
    for s in range(0, n2 * n_out, k):
        jk, bk = jj[s : s + k], bb[s : s + k]
        cols = push(grads(params, xb[jk], bk))  # (k, n1, O): Theta[:, j_k, :, b_k]
        if mode == "full":
            res[:, jk, :, bk] = cols
        else:
            # (k, n1): Theta[:, j_k, b_k, b_k]
            diag = cols[torch.arange(len(jk), device=x.device), :, bk]
            if mode == "diagonal":
                res[bk, :, jk] = diag
            else:
                res.index_add_(1, jk, diag.T)
    return res
