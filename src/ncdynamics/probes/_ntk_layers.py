"""Layer-structured per-sample Jacobians for the empirical NTK (private).

For a layer ``y = W u + b`` inside a network, the Jacobian of output ``f_a`` of sample ``i``
with respect to ``W`` is ``g_ia u_i^T``, where ``u_i`` is the layer input of sample ``i`` and
``g_ia = df_a(x_i)/dy_i`` is the gradient with respect to the layer output. One forward pass
and one backward pass per output of the whole chunk give every ``u`` and ``g``, so no
per-sample backward is needed. Three cases:

- ``Linear`` with 2-D input: kept *factored*; the kernel contribution is
  ``(u_i . u_j + 1) (g_ia . g_jb)`` and the Jacobian is never formed.
- ``Conv2d`` (via ``unfold``), ``Linear`` with >2-D input: the per-sample Jacobian is
  assembled from ``g`` and the unfolded input with one batched GEMM (``materialised``).
- ``BatchNorm1d/2d`` in eval mode (running statistics): ``dF/dgamma_c = sum_s g_cs xhat_cs``,
  ``dF/dbeta_c = sum_s g_cs``.

A module qualifies when it is called exactly once per forward pass, its parameters are not
shared with another module, and a gradient check on a pilot batch shows that the layer
formula reproduces autograd's parameter gradient (this catches parameters also used
outside the module's own forward). Every other trainable parameter goes to the generic
``torch.func`` Jacobian.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

__all__ = ["LayerPlan", "Factor", "plan_layers", "structured_chunk"]

_BN = (nn.BatchNorm1d, nn.BatchNorm2d)


@dataclass
class LayerPlan:
    """Which modules get the structured treatment, and per-sample sizes for memory estimates.

    ``modules`` maps module -> kind (``factored``, ``conv``, ``seq-linear``, ``bn``);
    ``param_ids`` are the ids of the trainable parameters they cover; ``n_mat`` the number
    of materialised Jacobian columns; ``act_per_sample`` the number of activation entries
    of one sample (sum over all module outputs); ``out_per_sample`` the output entries of
    the structured layers; ``unfold_max`` the largest unfolded input of one sample.
    """

    modules: dict[nn.Module, str] = field(default_factory=dict)
    param_ids: set[int] = field(default_factory=set)
    unused_ids: set[int] = field(default_factory=set)
    n_mat: int = 0
    d_out_factored: int = 0
    d_in_factored: int = 0
    act_per_sample: int = 0
    out_per_sample: int = 0
    unfold_max: int = 0


@dataclass
class Factor:
    """A factored Linear contribution: ``(u_i.u_j * w + b) (g_ia . g_jb)``.

    ``u`` (n, d_in) or None when the weight is frozen; ``bias`` whether a trainable bias adds 1;
    ``g`` (n, o, d_out).
    """

    u: torch.Tensor | None
    bias: bool
    g: torch.Tensor


def _trainable(p: torch.nn.Parameter | None) -> bool:
    return p is not None and p.requires_grad


def _kind(m: nn.Module, inp: torch.Tensor) -> str | None:
    if isinstance(m, nn.Linear):
        return "factored" if inp.dim() == 2 else "seq-linear"
    if isinstance(m, nn.Conv2d):
        ok = (
            m.groups == 1
            and m.padding_mode == "zeros"
            and not isinstance(m.padding, str)
            and inp.dim() == 4
        )
        return "conv" if ok else None
    if isinstance(m, _BN):
        ok = not m.training and m.track_running_stats and m.running_mean is not None and m.affine
        return "bn" if ok else None
    return None


def _bn_xhat(m: nn.Module, u: torch.Tensor) -> torch.Tensor:
    """Normalised BN input, (n, C, S)."""
    u = u.reshape(u.shape[0], u.shape[1], -1)  # (n, C, S)
    mean = m.running_mean.to(u.dtype)[None, :, None]
    std = torch.sqrt(m.running_var.to(u.dtype) + m.eps)[None, :, None]
    return (u - mean) / std


def _unfold(m: nn.Module, u: torch.Tensor) -> torch.Tensor:
    """Layer input as (n, S, K): rows are positions, columns the weight's input indices."""
    if isinstance(m, nn.Conv2d):
        cols = F.unfold(
            u, m.kernel_size, dilation=m.dilation, padding=m.padding, stride=m.stride
        )  # (n, K, S)
        return cols.transpose(1, 2)
    return u.reshape(u.shape[0], -1, u.shape[-1])  # (n, T, d_in)


def _layer_jacobian(
    m: nn.Module, kind: str, u: torch.Tensor, g: torch.Tensor
) -> list[torch.Tensor]:
    """Materialised per-sample Jacobian pieces, each (n, o, p), for trainable params of ``m``.

    ``u`` is the layer input (n, ...), ``g`` the output gradient (n, o, *out_shape).
    """
    n, o = g.shape[:2]
    pieces = []
    if kind == "bn":
        gs = g.reshape(n, o, g.shape[2], -1)  # (n, o, C, S)
        if _trainable(m.weight):
            pieces.append((gs * _bn_xhat(m, u)[:, None]).sum(-1))  # (n, o, C)
        if _trainable(m.bias):
            pieces.append(gs.sum(-1))
        return pieces
    if kind == "conv":
        gs = g.reshape(n, o * g.shape[2], -1)  # (n, o*Cout, S)
    else:  # seq-linear: output (n, *, d_out) -> (n, o*d_out, T)
        gs = g.reshape(n, o, -1, g.shape[-1]).transpose(2, 3).reshape(n, o * g.shape[-1], -1)
    if _trainable(m.weight):
        jw = torch.bmm(gs, _unfold(m, u))  # (n, o*Cout, K)
        pieces.append(jw.reshape(n, o, -1))
    if _trainable(m.bias):
        pieces.append(gs.sum(-1).reshape(n, o, -1))
    return pieces


def _param_owner_counts(model: nn.Module) -> Counter[int]:
    counts: Counter[int] = Counter()
    for mod in model.modules():
        for p in mod._parameters.values():
            if p is not None:
                counts[id(p)] += 1
    return counts


def _capture(modules: list[nn.Module], store: dict[nn.Module, list]) -> list:
    """Forward hooks: record (input, output) of each call; return a clone downstream.

    The clone keeps the recorded output untouched by later in-place operations.
    """

    def hook(mod: nn.Module, args: tuple, out: torch.Tensor) -> torch.Tensor:
        store.setdefault(mod, []).append((args[0].detach(), out))
        return out.clone()

    return [m.register_forward_hook(hook) for m in modules]


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Relative agreement of two gradients, loose enough for float32 round-off."""
    tol = 1e-4 if a.dtype == torch.float32 else 1e-9
    return float(torch.linalg.vector_norm(a - b)) <= tol * (
        float(torch.linalg.vector_norm(b)) + 1e-30
    )


def plan_layers(
    model: nn.Module,
    forward,
    x1: torch.Tensor,
    trainable: list[torch.nn.Parameter],
    *,
    structured: bool = True,
) -> LayerPlan:
    """Decide which modules are structured, from a pilot pass on ``x1`` (a few samples).

    ``forward(x) -> (n, O)`` calls ``model``. Runs the gradient check described in the
    module docstring; trainable parameters that the output does not depend on at all are
    listed in ``unused_ids`` (their NTK contribution is zero). With ``structured=False``
    only the sizes and the unused parameters are determined.
    """
    plan = LayerPlan()
    owners = _param_owner_counts(model)
    leaves = [m for m in model.modules() if not list(m.children())]
    sizes: dict[nn.Module, list] = {}
    calls: dict[nn.Module, list] = {}

    def size_hook(mod, args, out):
        if isinstance(out, torch.Tensor):
            sizes.setdefault(mod, []).append(out[0].numel())

    cands = []
    for m in leaves if structured else []:
        ps = [m._parameters.get("weight"), m._parameters.get("bias")]
        others = [
            k for k, p in m._parameters.items() if p is not None and k not in ("weight", "bias")
        ]
        if (
            isinstance(m, (nn.Linear, nn.Conv2d) + _BN)
            and not others
            and any(_trainable(p) for p in ps)
            and all(p is None or owners[id(p)] == 1 for p in ps)
        ):
            cands.append(m)
    handles = [m.register_forward_hook(size_hook) for m in leaves]
    handles += _capture(cands, calls)
    try:
        with torch.enable_grad():
            f = forward(x1)  # (n, O)
            s = f.sum()
            chosen = []
            for m in cands:
                rec = calls.get(m, [])
                if len(rec) != 1:
                    continue
                kind = _kind(m, rec[0][0])
                if kind is not None and rec[0][1].requires_grad:
                    chosen.append((m, kind))
            tensors = [calls[m][0][1] for m, _ in chosen]
            params = [p for m, _ in chosen for p in (m.weight, m.bias) if _trainable(p)]
            wrt = tensors + params + trainable
            grads = (
                torch.autograd.grad(s, wrt, allow_unused=True)
                if s.requires_grad
                else [None] * len(wrt)
            )  # output independent of every parameter
    finally:
        for h in handles:
            h.remove()
    nt, npar = len(tensors), len(params)
    g_out, g_par = grads[:nt], list(grads[nt : nt + npar])
    plan.unused_ids = {
        id(p) for p, g in zip(trainable, grads[nt + npar :], strict=True) if g is None
    }
    for (m, kind), go in zip(chosen, g_out, strict=True):
        mine = [p for p in (m.weight, m.bias) if _trainable(p)]
        true = [g_par.pop(0) for _ in mine]
        if go is None:  # output independent of this layer: its parameters are unused
            continue
        u = calls[m][0][0]
        if kind == "factored":
            go2 = go.reshape(go.shape[0], -1)
            pred = ([go2.T @ u] if _trainable(m.weight) else []) + (
                [go2.sum(0)] if _trainable(m.bias) else []
            )
        else:
            pred = [pc.sum((0, 1)) for pc in _layer_jacobian(m, kind, u, go[:, None])]
        ok = all(
            t is not None and _close(pr.reshape(t.shape), t)
            for pr, t in zip(pred, true, strict=True)
        )
        if not ok:
            continue
        plan.modules[m] = kind
        plan.param_ids.update(id(p) for p in mine)
        n_out = go[0].numel()
        plan.out_per_sample += n_out
        if kind == "factored":
            plan.d_out_factored += go.shape[-1]
            plan.d_in_factored += u.shape[-1] if _trainable(m.weight) else 0
        else:
            plan.n_mat += sum(p.numel() for p in mine)
            if kind != "bn":
                plan.unfold_max = max(plan.unfold_max, _unfold(m, u[:1]).numel())
    plan.act_per_sample = sum(sum(v) for v in sizes.values()) + 1
    return plan


def structured_chunk(
    plan: LayerPlan,
    forward,
    x: torch.Tensor,
    out_idx: torch.Tensor,
) -> tuple[list[torch.Tensor], list[Factor]]:
    """Materialised Jacobian pieces, each (n, o, p_layer), and the factored parts.

    ``out_idx`` (o,) selects the outputs; each takes one backward pass of the whole chunk.
    """
    store: dict[nn.Module, list] = {}
    mods = list(plan.modules)
    handles = _capture(mods, store)
    try:
        with torch.enable_grad():
            f = forward(x)[:, out_idx]  # (n, o)
    finally:
        for h in handles:
            h.remove()
    n, o = f.shape
    outs = [store[m][0][1] for m in mods]
    grads = [
        torch.empty((n, o, *t.shape[1:]), dtype=f.dtype, device=f.device) for t in outs
    ]  # (n, o, *out_shape) per layer
    for k in range(o):  # one backward pass per output (measured faster than is_grads_batched)
        cot = torch.zeros_like(f)
        cot[:, k] = 1.0
        per = torch.autograd.grad(
            f, outs, grad_outputs=cot, retain_graph=k < o - 1, allow_unused=True
        )
        for full, g in zip(grads, per, strict=True):
            if g is None:
                full[:, k] = 0.0
            else:
                full[:, k] = g
    factors: list[Factor] = []
    pieces: list[torch.Tensor] = []
    for m, g in zip(mods, grads, strict=True):
        kind = plan.modules[m]
        u = store[m][0][0]
        if kind == "factored":
            factors.append(Factor(u if _trainable(m.weight) else None, _trainable(m.bias), g))
        else:
            pieces.extend(_layer_jacobian(m, kind, u, g))
    return pieces, factors
