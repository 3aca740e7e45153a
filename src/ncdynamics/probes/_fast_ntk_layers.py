"""Layer-structured per-sample Jacobians for the empirical NTK (private).

For a layer ``y = W u + b`` inside a network, the Jacobian of output ``f_a`` of sample ``i``
with respect to ``W`` is ``g_ia u_i^T``, where ``u_i`` is the layer input of sample ``i`` and
``g_ia = df_a(x_i)/dy_i`` is the gradient with respect to the layer output. One forward pass
and one backward pass per output of the whole chunk give every ``u`` and ``g``, so no
per-sample backward is needed. Three cases:

- ``Linear`` with 2-D input: kept *factored*; the kernel contribution is
  ``(u_i . u_j + 1) (g_ia . g_jb)`` and the Jacobian is never formed.
- ``Conv2d`` whose unfolded input has no more columns than output positions (``K <= S``,
  the first layers of a net on large images; kind ``conv-formed``): the weight's Jacobian,
  ``g`` times the unfolded input, is formed right away during each output's backward pass
  (one batched GEMM) and stored with the other narrow pieces; it is smaller than the
  gradients that deferral would store.
- ``Conv2d`` (via ``unfold``), ``Linear`` with >2-D input: the weight's per-sample Jacobian
  is ``g`` times the unfolded input, one batched GEMM per layer. It is *deferred*: the chunk
  keeps the layer input and the output gradients of all outputs (``Deferred``), and the
  Jacobian is formed layer by layer only when the kernel is contracted, then freed, so no
  more than one layer's Jacobian exists at a time. A bias's Jacobian (the sum of ``g`` over
  positions) is formed right away.
- ``BatchNorm1d/2d`` in eval mode (running statistics): ``dF/dgamma_c = sum_s g_cs xhat_cs``,
  ``dF/dbeta_c = sum_s g_cs``, formed right away.

When every structured layer is a factored ``Linear`` and the layers form a *chain* (the
input of each is an elementwise function of the output of the one before, and the network's
output depends on each layer's output only through the next layer), the O backward passes
are replaced by one pass of the whole block through the chain (``LayerPlan.chain``,
:func:`_chain_gradients`): the gradients of all outputs at a layer's output, (n o, d_out),
times the next layer's weight, one GEMM per layer, times the activation's derivative
(one elementwise backward of the activation alone). Autograd still runs the top part
(from the network output to the last layer's output, one pass per output, cheap) and the
activations' derivatives, so nothing about the activations is assumed; the chain structure
is checked on the pilot batch like the layer formulas (the chain's gradients must equal
autograd's at every layer) and, on every call, the shapes that the chain relies on.

The pieces formed right away (BN, biases) are narrow; they share one ``(n, o, p_small)``
tensor, written one output at a time, so the gradients of one output never need to be kept
once the next backward pass starts.

A module qualifies when it is called exactly once per forward pass, its parameters are not
shared with another module, and a gradient check on a pilot batch shows that the layer
formula reproduces autograd's parameter gradient (this catches parameters also used
outside the module's own forward). Every other trainable parameter goes to the generic
``torch.func`` Jacobian.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import nn

__all__ = [
    "Chunk",
    "Deferred",
    "Factor",
    "LayerPlan",
    "plan_layers",
    "structured_chunk",
    "trainable_params",
]

_BN = (nn.BatchNorm1d, nn.BatchNorm2d)

#: ``forward(x) -> (n, O)``: the wrapped model whose outputs the kernel is taken of.
Forward = Callable[[torch.Tensor], torch.Tensor]
#: What a capture hook records per call of a module: (its input, its output).
Calls = dict[nn.Module, list[tuple[torch.Tensor, torch.Tensor]]]


@dataclass
class LayerPlan:
    """Which modules get the structured treatment, and per-sample sizes for memory estimates.

    ``modules`` maps module -> kind (``factored``, ``conv``, ``conv-formed``, ``seq-linear``,
    ``bn``);
    ``param_ids`` are the ids of the trainable parameters they cover; ``n_mat`` the number
    of materialised Jacobian columns (``n_small`` formed right away, the rest deferred);
    ``act_per_sample`` the number of activation entries of one sample (sum over all module
    outputs); ``out_per_sample`` the output entries of the structured layers;
    ``unfold_max`` the largest unfolded input of one sample; ``g_deferred`` and
    ``u_deferred`` the output and input entries of one sample over the deferred layers;
    ``p_deferred_max`` the widest deferred layer's Jacobian columns; ``verified`` whether
    every structured layer's gradient check compared non-zero gradients (a check of zeros,
    e.g. behind a zero-initialised head, proves nothing, so such a plan is not reused);
    ``act_per_sample_extra`` the entries of one sample's unfolded inputs of the
    ``conv-formed`` layers, kept while the backward passes run; ``chain`` whether the
    output gradients are computed through the chain of factored layers (module docstring)
    instead of by one backward pass per output.
    """

    modules: dict[nn.Module, str] = field(default_factory=dict)
    param_ids: set[int] = field(default_factory=set)
    unused_ids: set[int] = field(default_factory=set)
    n_mat: int = 0
    n_small: int = 0
    d_out_factored: int = 0
    d_in_factored: int = 0
    act_per_sample: int = 0
    out_per_sample: int = 0
    unfold_max: int = 0
    g_deferred: int = 0
    u_deferred: int = 0
    p_deferred_max: int = 0
    verified: bool = True
    act_per_sample_extra: int = 0
    chain: bool = False


@dataclass
class Factor:
    """A factored Linear contribution: ``(u_i.u_j * w + b) (g_ia . g_jb)``.

    ``u`` (n, d_in) or None when the weight is frozen; ``bias`` whether a trainable bias adds 1;
    ``g`` (n, o, d_out).
    """

    u: torch.Tensor | None
    bias: bool
    g: torch.Tensor


def _trainable(p: torch.Tensor | None) -> bool:
    return p is not None and p.requires_grad


def _weight(m: nn.Module) -> torch.Tensor | None:
    """The module's registered ``weight`` parameter (None if it has none)."""
    return m._parameters.get("weight")


def _bias(m: nn.Module) -> torch.Tensor | None:
    """The module's registered ``bias`` parameter (None if it has none)."""
    return m._parameters.get("bias")


def trainable_params(m: nn.Module) -> list[torch.Tensor]:
    """The module's trainable ``weight`` and ``bias``, in that order."""
    return [p for p in (_weight(m), _bias(m)) if p is not None and p.requires_grad]


def _layer_weight(m: nn.Module) -> torch.Tensor:
    """The ``weight`` of a structured layer that has one (deferred layers always do)."""
    w = _weight(m)
    if w is None:
        raise ValueError(f"`{type(m).__name__}` has no weight.")
    return w


def _buffer(m: nn.Module, name: str) -> torch.Tensor:
    """A registered buffer that the layer's kind guarantees (BN running statistics)."""
    buf = m._buffers.get(name)
    if buf is None:
        raise ValueError(f"`{type(m).__name__}` has no buffer {name!r}.")
    return buf


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


def _bn_xhat(m: nn.BatchNorm1d | nn.BatchNorm2d, u: torch.Tensor) -> torch.Tensor:
    """Normalised BN input, (n, C, S)."""
    u = u.reshape(u.shape[0], u.shape[1], -1)  # (n, C, S)
    mean = _buffer(m, "running_mean").to(u.dtype)[None, :, None]
    std = torch.sqrt(_buffer(m, "running_var").to(u.dtype) + m.eps)[None, :, None]
    return (u - mean) / std


def _unfold(m: nn.Module, u: torch.Tensor, out: torch.Tensor | None = None) -> torch.Tensor:
    """Layer input as (n, S, K): rows are positions, columns the weight's input indices.

    For a conv, the entries of ``F.unfold``, written into ``out`` (a 1-D workspace of at
    least n*K*S entries) when given: the windows are a strided view of the padded input
    (``Tensor.unfold``) copied in one pass into a reused workspace: measured 5-7x faster than
    ``F.unfold`` on the ResNet's 28x28 and 14x14 layers, slightly slower on the 7x7 ones.
    """
    if not isinstance(m, nn.Conv2d):
        return u.reshape(u.shape[0], -1, u.shape[-1])  # (n, T, d_in)
    if isinstance(m.padding, str):  # excluded by ``_kind``
        raise ValueError(f"`{type(m).__name__}` with padding={m.padding!r} is not structured.")
    if out is None:
        cols = F.unfold(
            u, m.kernel_size, dilation=m.dilation, padding=m.padding, stride=m.stride
        )  # (n, K, S)
        return cols.transpose(1, 2)
    (kh, kw), (dh, dw), (ph, pw), (sh, sw) = m.kernel_size, m.dilation, m.padding, m.stride
    up = F.pad(u, (pw, pw, ph, ph))  # (n, C, H + 2 ph, W + 2 pw)
    win = up.unfold(2, dh * (kh - 1) + 1, sh).unfold(3, dw * (kw - 1) + 1, sw)
    win = win[..., ::dh, ::dw]  # (n, C, Ho, Wo, kh, kw), a view
    n, c, ho, wo = win.shape[:4]
    dst = out[: n * c * kh * kw * ho * wo].view(n, c, kh, kw, ho, wo)
    dst.copy_(win.permute(0, 1, 4, 5, 2, 3))
    return dst.view(n, c * kh * kw, ho * wo).transpose(1, 2)  # (n, S, K)


def _formed_right_away(m: nn.Module, kind: str, u: torch.Tensor) -> bool:
    """Whether a conv's weight Jacobian is formed per output during the backward passes
    (kind ``conv-formed``) instead of deferred: when its unfolded input has no more columns
    than output positions (K <= S, e.g. the first layers of a net on large images), its
    Jacobian (C_out K columns) is smaller than the gradients deferral would store
    (C_out S), so storing the O gradients, and the page faults of that store, are avoided."""
    if kind != "conv" or not _trainable(_weight(m)):
        return False
    s, k = _unfold(m, u[:1]).shape[1:]  # (1, S, K)
    return bool(k <= s)


def _deferred(m: nn.Module, kind: str) -> bool:
    """Whether the layer's weight Jacobian is deferred (conv and sequence Linear weights)."""
    return kind in ("conv", "seq-linear") and _trainable(_weight(m))


def weight_jacobian(
    m: nn.Module,
    kind: str,
    u: torch.Tensor,
    g: torch.Tensor,
    out: torch.Tensor | None = None,
    work: torch.Tensor | None = None,
) -> torch.Tensor:
    """Per-sample Jacobian (n, o, p) of the weight of a conv or sequence-Linear layer.

    ``u`` is the layer input (n, ...), ``g`` the output gradients (n, o, *out_shape). One
    batched GEMM: (n, o*C_out, S) @ (n, S, K), with S output positions and K = C_in * k_h * k_w
    (conv) or d_in (sequence Linear, S = sequence length). ``out``, a 1-D workspace of at
    least n*o*p entries, receives the result, and ``work`` (n*S*K entries) the unfolded input
    (reusing memory already touched is measurably faster than fresh pages for every layer).
    """
    n, o = g.shape[:2]
    if kind == "conv":
        gs = g.reshape(n, o * g.shape[2], -1)  # (n, o*Cout, S)
    else:  # seq-linear: output (n, o, *, d_out) -> (n, o*d_out, T)
        gs = g.reshape(n, o, -1, g.shape[-1]).transpose(2, 3).reshape(n, o * g.shape[-1], -1)
    cols = _unfold(m, u, work)  # (n, S, K)
    if out is None:
        return torch.bmm(gs, cols).reshape(n, o, -1)
    dst = out[: n * gs.shape[1] * cols.shape[2]].view(n, gs.shape[1], cols.shape[2])
    return torch.bmm(gs, cols, out=dst).view(n, o, -1)  # (n, o*Cout, K) -> (n, o, p)


def _small_width(m: nn.Module, kind: str) -> int:
    """Columns of the pieces formed right away: BN weight and bias, conv/Linear bias."""
    if isinstance(m, _BN):  # kind "bn"
        return m.num_features * (_trainable(_weight(m)) + _trainable(_bias(m)))
    if isinstance(m, nn.Conv2d) and kind == "conv-formed":  # the weight, then the bias
        return _layer_weight(m).numel() + (m.out_channels if _trainable(_bias(m)) else 0)
    if kind == "factored" or not _trainable(_bias(m)):
        return 0
    if isinstance(m, nn.Conv2d):  # kind "conv"
        return m.out_channels
    if isinstance(m, nn.Linear):  # kind "seq-linear"
        return m.out_features
    raise TypeError(f"not a structured layer: {type(m).__name__}.")


def small_pieces(
    m: nn.Module, kind: str, xhat: torch.Tensor | None, g: torch.Tensor
) -> list[torch.Tensor]:
    """Jacobian pieces (n, p) formed right away from one output's gradient ``g`` (n, *out).

    BN: ``sum_s g_cs xhat_cs`` (weight) and ``sum_s g_cs`` (bias), with ``xhat`` the
    normalised input (n, C, S); conv and sequence-Linear layers: the bias, ``sum_s g_cs``;
    a conv whose weight Jacobian is formed right away (kind ``conv-formed``): also the
    weight, ``g (n, C_out, S) @ xhat (n, S, K)`` with ``xhat`` the unfolded input.
    """
    n = g.shape[0]
    if kind == "conv-formed":
        if xhat is None:
            raise ValueError("a formed conv weight needs the unfolded input.")
        gs = g.reshape(n, g.shape[1], -1)  # (n, Cout, S)
        pieces = [torch.bmm(gs, xhat).reshape(n, -1)]  # (n, Cout * K)
        if _trainable(_bias(m)):
            pieces.append(gs.sum(-1))  # (n, Cout)
        return pieces
    if kind == "bn":
        gs = g.reshape(n, g.shape[1], -1)  # (n, C, S)
        pieces = []
        if _trainable(_weight(m)):  # dot products over S (measured faster than bmm, mul-sum)
            if xhat is None:
                raise ValueError("a BatchNorm weight needs the normalised input `xhat`.")
            pieces.append(torch.linalg.vecdot(gs, xhat))  # (n, C)
        if _trainable(_bias(m)):
            pieces.append(gs.sum(-1))  # (n, C)
        return pieces
    if kind == "factored" or not _trainable(_bias(m)):
        return []
    if kind == "conv":
        return [g.reshape(n, g.shape[1], -1).sum(-1)]  # (n, Cout)
    return [g.reshape(n, -1, g.shape[-1]).sum(1)]  # (n, d_out)


def _layer_param_grads(
    m: nn.Module, kind: str, u: torch.Tensor, g: torch.Tensor
) -> list[torch.Tensor]:
    """Parameter gradients of ``m`` (weight, then bias) summed over the samples, from the
    layer formulas; ``g`` (n, *out_shape) is the gradient of a scalar w.r.t. the output."""
    xhat = _bn_xhat(m, u) if isinstance(m, _BN) else None  # kind "bn"
    out = []
    if _deferred(m, kind):
        out.append(weight_jacobian(m, kind, u, g[:, None]).sum((0, 1)))
    return out + [p.sum(0) for p in small_pieces(m, kind, xhat, g)]


def _param_owner_counts(model: nn.Module) -> Counter[int]:
    counts: Counter[int] = Counter()
    for mod in model.modules():
        for p in mod._parameters.values():
            if p is not None:
                counts[id(p)] += 1
    return counts


def _capture(
    modules: Sequence[nn.Module],
    store: Calls,
    live: dict[nn.Module, list[torch.Tensor]] | None = None,
) -> list[torch.utils.hooks.RemovableHandle]:
    """Forward hooks: record (input, output) of each call; return a clone downstream.

    The clone keeps the recorded output untouched by later in-place operations. With
    ``live``, the input of each call is also recorded as it is (attached to the graph).
    """

    def hook(mod: nn.Module, args: tuple[torch.Tensor, ...], out: torch.Tensor) -> torch.Tensor:
        store.setdefault(mod, []).append((args[0].detach(), out))
        if live is not None:
            live.setdefault(mod, []).append(args[0])
        return out.clone()

    return [m.register_forward_hook(hook) for m in modules]


def _close(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Relative agreement of two gradients, loose enough for float32 round-off."""
    tol = 1e-4 if a.dtype == torch.float32 else 1e-9
    return float(torch.linalg.vector_norm(a - b)) <= tol * (
        float(torch.linalg.vector_norm(b)) + 1e-30
    )


def _chain_gradients(
    mods: Sequence[nn.Module],
    ins: Sequence[torch.Tensor],
    outs: Sequence[torch.Tensor],
    f: torch.Tensor,
    cots: torch.Tensor,
) -> list[torch.Tensor] | None:
    """Output gradients of a chain of factored Linear layers, or None if it is not one.

    ``mods`` are the layers in call order, ``ins`` their inputs as attached to the graph,
    ``outs`` their outputs, ``f`` (n, O) the network output and ``cots`` (o, n, O) the
    cotangents (one per output). Returns ``g_k`` (n, o, d_k) for every layer: the top one
    by autograd (``o`` passes from ``f`` to the last layer's output), then down the chain
    ``g_k = (g_{k+1} W_{k+1}) * D_k`` with ``D_k = d ins[k+1] / d outs[k]`` taken by one
    elementwise backward pass of the activation (a vector-Jacobian product with ones). This
    equals autograd's gradients only if ``ins[k+1]`` is an elementwise function of
    ``outs[k]`` and ``f`` depends on ``outs[k]`` through ``ins[k+1]`` alone; the plan checks
    that on its pilot batch (``plan_layers``). None when a shape does not fit a chain.
    """
    n, o = f.shape[0], cots.shape[0]
    for k in range(len(mods) - 1):
        if ins[k + 1].shape != outs[k].shape or outs[k].dim() != 2:
            return None
    top = outs[-1]
    g_top = f.new_empty((n, o, top.shape[-1]))
    for a in range(o):
        (g_a,) = torch.autograd.grad(f, [top], grad_outputs=cots[a], retain_graph=True)
        g_top[:, a] = g_a
    grads = [g_top]
    for k in range(len(mods) - 2, -1, -1):
        (d_k,) = torch.autograd.grad(
            ins[k + 1],
            [outs[k]],
            grad_outputs=torch.ones_like(ins[k + 1]),
            retain_graph=True,
            allow_unused=True,
        )  # one pass per layer: a pass from all inputs at once would add up the paths
        if d_k is None:  # the next layer's input does not depend on this output
            return None
        w = _layer_weight(mods[k + 1]).detach()  # (d_{k+1}, d_k)
        g = torch.mm(grads[0].reshape(n * o, -1), w).view(n, o, -1)
        grads.insert(0, g.mul_(d_k.detach()[:, None, :]))
    return grads


def _candidates(leaves: list[nn.Module], owners: dict[int, int]) -> list[nn.Module]:
    """Leaf modules that may be structured: a Linear, Conv2d or BatchNorm with no parameter
    but ``weight`` and ``bias``, at least one of them trainable, and none shared."""
    cands: list[nn.Module] = []
    for m in leaves:
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
    return cands


@dataclass
class _Pilot:
    """What the pilot pass saw: the output ``f``, the candidates called once with a known
    kind (``chosen``), the true gradients of the summed output with respect to their outputs
    (``g_out``), their parameters (``g_par``) and every trainable parameter (``g_all``),
    each module's calls and live inputs, and the output sizes of every leaf."""

    f: torch.Tensor
    chosen: list[tuple[nn.Module, str]]
    g_out: list[torch.Tensor | None]
    g_par: list[torch.Tensor | None]
    g_all: list[torch.Tensor | None]
    calls: Calls
    live: dict[nn.Module, list[torch.Tensor]]
    sizes: dict[nn.Module, list[int]]


def _pilot_pass(
    forward: Forward,
    x1: torch.Tensor,
    leaves: list[nn.Module],
    cands: list[nn.Module],
    trainable: list[torch.nn.Parameter],
) -> _Pilot:
    """One forward pass on ``x1`` with every leaf's output size recorded and the candidates'
    calls captured, then one backward pass of the summed output to the outputs of the
    candidates called once, their parameters and every trainable parameter."""
    sizes: dict[nn.Module, list[int]] = {}
    calls: Calls = {}
    live: dict[nn.Module, list[torch.Tensor]] = {}

    def size_hook(mod: nn.Module, args: tuple[torch.Tensor, ...], out: object) -> None:
        if isinstance(out, torch.Tensor):
            sizes.setdefault(mod, []).append(out[0].numel())

    handles = [m.register_forward_hook(size_hook) for m in leaves]
    handles += _capture(cands, calls, live)
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
            params = [p for m, _ in chosen for p in trainable_params(m)]
            wrt = tensors + params + trainable
            grads = (
                torch.autograd.grad(s, wrt, allow_unused=True, retain_graph=True)
                if s.requires_grad
                else [None] * len(wrt)
            )  # output independent of every parameter
    finally:
        for h in handles:
            h.remove()
    nt, npar = len(tensors), len(params)
    return _Pilot(
        f,
        chosen,
        list(grads[:nt]),
        list(grads[nt : nt + npar]),
        list(grads[nt + npar :]),
        calls,
        live,
        sizes,
    )


def _predicted_grads(
    m: nn.Module, kind: str, u: torch.Tensor, go: torch.Tensor
) -> list[torch.Tensor]:
    """The parameter gradients of layer ``m`` rebuilt from its input ``u`` and its output
    gradient ``go``, in the order of :func:`trainable_params`."""
    if kind != "factored":
        return _layer_param_grads(m, kind, u, go)
    go2 = go.reshape(go.shape[0], -1)
    return ([go2.T @ u] if _trainable(_weight(m)) else []) + (
        [go2.sum(0)] if _trainable(_bias(m)) else []
    )


def _add_layer(plan: LayerPlan, m: nn.Module, kind: str, u: torch.Tensor, go: torch.Tensor) -> None:
    """Enter a verified layer into ``plan`` with its share of the per-sample sizes."""
    mine = trainable_params(m)
    if _formed_right_away(m, kind, u):
        kind = "conv-formed"
        plan.act_per_sample_extra += _unfold(m, u[:1]).numel()  # kept while passes run
    plan.modules[m] = kind
    plan.param_ids.update(id(p) for p in mine)
    n_out = go[0].numel()
    plan.out_per_sample += n_out
    if kind == "factored":
        plan.d_out_factored += go.shape[-1]
        plan.d_in_factored += u.shape[-1] if _trainable(_weight(m)) else 0
        return
    plan.n_mat += sum(p.numel() for p in mine)
    plan.n_small += _small_width(m, kind)
    if _deferred(m, kind):
        plan.unfold_max = max(plan.unfold_max, _unfold(m, u[:1]).numel())
        plan.g_deferred += n_out
        plan.u_deferred += u[0].numel()
        plan.p_deferred_max = max(plan.p_deferred_max, _layer_weight(m).numel())


def _verify_layers(plan: LayerPlan, pilot: _Pilot) -> None:
    """Keep each chosen layer whose rebuilt parameter gradients match autograd's."""
    g_par = list(pilot.g_par)
    for (m, kind), go in zip(pilot.chosen, pilot.g_out, strict=True):
        true = [g_par.pop(0) for _ in trainable_params(m)]
        if go is None:  # output independent of this layer: its parameters are unused
            continue
        u = pilot.calls[m][0][0]
        pred = _predicted_grads(m, kind, u, go)
        ok = all(
            t is not None and _close(pr.reshape(t.shape), t)
            for pr, t in zip(pred, true, strict=True)
        )
        if not ok:
            continue
        if not all(t is not None and bool(t.any()) for t in true):
            plan.verified = False
        _add_layer(plan, m, kind, u, go)


def _chain_holds(plan: LayerPlan, pilot: _Pilot) -> bool:
    """Whether every structured layer is factored and the chain of them gives autograd's
    output gradients (module docstring)."""
    order = [m for m in pilot.calls if m in plan.modules]  # call order
    if not order or not all(plan.modules[m] == "factored" for m in order):
        return False
    g_true: dict[nn.Module, torch.Tensor | None] = {
        m: go for (m, _), go in zip(pilot.chosen, pilot.g_out, strict=True)
    }
    chain = _chain_gradients(
        order, [pilot.live[m][0] for m in order], [pilot.calls[m][0][1] for m in order],
        pilot.f, torch.ones_like(pilot.f)[None],
    )  # fmt: skip
    return chain is not None and all(
        g_t is not None and _close(g[:, 0], g_t)
        for g, g_t in zip(chain, (g_true[m] for m in order), strict=True)
    )


def plan_layers(
    model: nn.Module,
    forward: Forward,
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

    The steps: the candidate layers (:func:`_candidates`), the pilot pass and its true
    gradients (:func:`_pilot_pass`), the layers whose rebuilt gradients match
    (:func:`_verify_layers`), and whether their gradients can go through the chain
    (:func:`_chain_holds`).
    """
    plan = LayerPlan()
    leaves = [m for m in model.modules() if not list(m.children())]
    cands = _candidates(leaves, _param_owner_counts(model)) if structured else []
    pilot = _pilot_pass(forward, x1, leaves, cands, trainable)
    plan.unused_ids = {id(p) for p, g in zip(trainable, pilot.g_all, strict=True) if g is None}
    _verify_layers(plan, pilot)
    plan.act_per_sample = sum(sum(v) for v in pilot.sizes.values()) + 1
    if _chain_holds(plan, pilot):
        plan.chain = True
    return plan


def _grad(f: torch.Tensor, wrt: list[torch.Tensor], cot: torch.Tensor) -> None:
    """A backward pass from ``f`` with cotangent ``cot``, reaching ``wrt``; the results are
    dropped (the tensor hooks consume the gradients)."""
    torch.autograd.grad(f, wrt, grad_outputs=cot, retain_graph=True, allow_unused=True)


@dataclass
class Deferred:
    """A conv or sequence-Linear weight's Jacobian kept as factors: the layer input ``u``
    (n, ...) and the output gradients ``g`` (n, o, *out_shape); ``materialise()`` forms the
    (n, o, p) Jacobian."""

    module: nn.Module
    kind: str
    u: torch.Tensor
    g: torch.Tensor

    def materialise(
        self, out: torch.Tensor | None = None, work: torch.Tensor | None = None
    ) -> torch.Tensor:
        return weight_jacobian(self.module, self.kind, self.u, self.g, out, work)

    def unfold_numel(self) -> int:
        """Entries of the unfolded input (0 for a sequence Linear, which needs none)."""
        if self.kind != "conv":
            return 0
        return _unfold(self.module, self.u[:1]).numel() * self.u.shape[0]

    def numel(self) -> int:
        """Entries of the materialised Jacobian."""
        return self.g.shape[0] * self.g.shape[1] * _layer_weight(self.module).numel()


@dataclass
class Chunk:
    """Structured Jacobian of a chunk of samples and outputs.

    ``small`` (n, o, n_small) holds the columns formed right away (or None); ``deferred``
    the conv and sequence-Linear weights; ``factors`` the factored Linear layers.
    """

    small: torch.Tensor | None
    deferred: list[Deferred]
    factors: list[Factor]


def _factor(m: nn.Module, u: torch.Tensor, g: torch.Tensor) -> Factor:
    """The :class:`Factor` of factored layer ``m`` with input ``u`` and gradients ``g``."""
    return Factor(u if _trainable(_weight(m)) else None, _trainable(_bias(m)), g)


def _chain_chunk(
    mods: list[nn.Module],
    store: dict[nn.Module, list],
    live: dict[nn.Module, list[torch.Tensor]],
    f: torch.Tensor,
) -> Chunk | None:
    """All outputs' gradients at once through the chain of factored layers, or ``None``
    when this call's shapes do not fit it (then the passes run one output at a time)."""
    if not all(len(store.get(m, ())) == 1 for m in mods):
        return None
    n, o = f.shape
    order = list(store)  # call order
    cots = f.new_zeros((o, n, o))
    cots[torch.arange(o), :, torch.arange(o)] = 1.0  # cotangent a: ones in column a
    grads = _chain_gradients(
        order, [live[m][0] for m in order], [store[m][0][1] for m in order], f, cots
    )
    if grads is None:
        return None
    g_of = dict(zip(order, grads, strict=True))
    return Chunk(None, [], [_factor(m, store[m][0][0], g_of[m]) for m in mods])


class _Passes:
    """The backward passes of one chunk, one per output, and the stores their gradients go
    to: ``small`` (n, o, n_small) for the pieces formed right away, ``keep[i]``
    (n, o, *out_shape) for each deferred or factored layer (``None`` for the others).

    Each layer's gradient is consumed by a tensor hook as soon as the backward pass produces
    it (while it is in cache) and then dropped: asking autograd.grad for every layer output
    would hold all of them until the pass ends, which on a ResNet doubled the memory touched
    per pass.
    """

    def __init__(
        self,
        plan: LayerPlan,
        mods: list[nn.Module],
        inputs: list[torch.Tensor],
        outs: list[torch.Tensor],
        f: torch.Tensor,
    ) -> None:
        n, o = f.shape
        self.mods = mods
        self.kinds = [plan.modules[m] for m in mods]
        self.xhats = [
            _bn_xhat(m, u)
            if isinstance(m, _BN)  # kind "bn"
            else _unfold(m, u)  # (n, S, K), kept while the passes run
            if k == "conv-formed"
            else None
            for m, k, u in zip(mods, self.kinds, inputs, strict=True)
        ]
        # f's dtype and device
        self.small = f.new_empty((n, o, plan.n_small)) if plan.n_small else None
        self.keep = [
            f.new_empty((n, o, *t.shape[1:])) if k == "factored" or _deferred(m, k) else None
            for m, k, t in zip(mods, self.kinds, outs, strict=True)
        ]
        self.cols = [0]
        for m, kind in zip(mods, self.kinds, strict=True):
            self.cols.append(self.cols[-1] + _small_width(m, kind))
        self.current = 0  # the output whose backward pass is running
        self.seen: set[int] = set()

    def consume(self, i: int, g: torch.Tensor) -> None:
        """Store layer ``i``'s gradient for the current output (once per pass)."""
        if i in self.seen:
            return
        self.seen.add(i)
        k = self.current
        kept = self.keep[i]
        if kept is not None:
            kept[:, k] = g
        col = self.cols[i]
        for piece in small_pieces(self.mods[i], self.kinds[i], self.xhats[i], g):
            if self.small is None:  # n_small counts every piece, so this cannot happen
                raise RuntimeError("a small Jacobian piece without a `small` store.")
            self.small[:, k, col : col + piece.shape[1]] = piece
            col += piece.shape[1]

    def run(self, f: torch.Tensor, outs: list[torch.Tensor], first: int) -> None:
        """One backward pass per output (faster than is_grads_batched), driven to the output
        of layer ``first`` (the first called); layers it does not reach are asked for
        explicitly (found on the first pass)."""
        handles = [t.register_hook(lambda g, i=i: self.consume(i, g)) for i, t in enumerate(outs)]
        ask = [first]
        try:
            for k in range(f.shape[1]):
                self.current = k
                self.seen.clear()
                cot = torch.zeros_like(f)
                cot[:, k] = 1.0
                _grad(f, [outs[i] for i in ask], cot)
                missing = [i for i in range(len(outs)) if i not in self.seen]
                if missing:  # not upstream of the asked outputs: ask for them too
                    _grad(f, [outs[i] for i in missing], cot)
                    ask += [i for i in missing if i in self.seen]
                for i in range(len(outs)):
                    if i not in self.seen:  # output k does not depend on layer i
                        self.consume(i, torch.zeros_like(outs[i]))
        finally:
            for h in handles:
                h.remove()


def structured_chunk(
    plan: LayerPlan,
    forward: Forward,
    x: torch.Tensor,
    out_idx: torch.Tensor,
) -> Chunk:
    """Structured Jacobian of the samples ``x`` (n, ...) and the outputs ``out_idx`` (o,).

    One forward pass, then one backward pass of the whole chunk per output
    (:class:`_Passes`). Each backward's gradients are consumed before the next: narrow
    pieces are written into ``small``, the gradients of deferred and factored layers into
    their (n, o, ...) stores. A plan whose factored layers form a chain (``plan.chain``)
    instead takes all outputs' gradients through the chain at once (:func:`_chain_chunk`),
    when this call's shapes fit it.
    """
    store: dict[nn.Module, list] = {}
    live: dict[nn.Module, list[torch.Tensor]] | None = {} if plan.chain else None
    mods = list(plan.modules)
    handles = _capture(mods, store, live)
    try:
        with torch.enable_grad():
            f = forward(x)[:, out_idx]  # (n, o)
    finally:
        for h in handles:
            h.remove()
    if live is not None:
        chunk = _chain_chunk(mods, store, live, f)
        if chunk is not None:
            return chunk
    outs = [store[m][0][1] for m in mods]
    inputs = [store[m][0][0] for m in mods]
    first = mods.index(next(iter(store)))  # the structured layer called first
    del store
    passes = _Passes(plan, mods, inputs, outs, f)
    passes.run(f, outs, first)
    del f, outs
    passes.xhats.clear()  # free the normalised BN inputs before the caller contracts
    deferred, factors = [], []
    for m, kind, u, g in zip(mods, passes.kinds, inputs, passes.keep, strict=True):
        if kind == "factored" and g is not None:  # every factored layer keeps its gradients
            factors.append(_factor(m, u, g))
        elif g is not None:
            deferred.append(Deferred(m, kind, u, g))
    return Chunk(passes.small, deferred, factors)
