"""Empirical neural tangent kernel of any ``nn.Module``.

``empirical_ntk(model, x, x2)`` returns ``Theta[i, j, a, b] = <d f_a(x_i)/dw, d f_b(x2_j)/dw>``,
the inner product over all trainable parameters ``w`` of the gradients of outputs ``a`` and
``b`` ([1], eqs. (2)-(3)). Layout (``docs/axes.md``):

==========  ============================  ===============================================
mode        shape                         entries
==========  ============================  ===============================================
full        (n1, n2, n_out, n_out)        Theta[i, j, a, b]
diagonal    (n_out, n1, n2)               Theta[i, j, a, a], the output-diagonal blocks
trace       (n1, n2)                      sum_a Theta[i, j, a, a]  (/ n_out if ``average``)
==========  ============================  ===============================================

Conventions and assumptions:

- The model is evaluated in eval mode (BatchNorm uses its running statistics, dropout is off)
  and its training flag is restored afterwards; no buffer is changed. Train-mode BatchNorm
  (batch statistics) is not supported: it couples the samples of a batch, so per-sample
  gradients, and with them the empirical NTK of [1], are not defined. A BatchNorm built with
  ``track_running_stats=False`` uses batch statistics even in eval mode and is rejected.
- The layer plan (which layers take the fast path) is cached per model and keyed on its
  structure, not on its weight values (``_fast_ntk_plan_cache``): an optimiser step reuses
  it; ``clear_plan_cache(model)`` forgets it.
- Parameters with ``requires_grad=False`` are excluded. A parameter shared between modules
  is counted once (its gradient is the sum over its uses). Parameters the output does not
  depend on contribute zero.
- The output must be per-sample: row ``i`` of the output may depend only on ``x[i]``.
  Eval mode makes this hold for BatchNorm; a model that mixes samples gives a meaningless
  kernel with every method.

References
----------
.. [1] E. Seleznova, D. Weitzner, R. Giryes, G. Kutyniok, H.-H. Chou. "Neural (Tangent Kernel)
   Collapse". NeurIPS 2023.
"""

from __future__ import annotations

from contextlib import nullcontext
from enum import StrEnum
from typing import Literal, NoReturn

import numpy as np
import torch
from torch import nn
from torch.func import jacrev, vmap

from .._validation import check_finite_tensor, check_int, check_option
from ..models.modes import eval_mode
from . import _fast_ntk_layers as _layers
from . import _fast_ntk_plan_cache as _cache
from ._fast_ntk_contract import Block, contract, merge_small
from ._fast_ntk_plan_cache import clear_plan_cache
from ._ntk_output import OUTPUTS, Output, SelectedOutput, alias_names, call_with
from ._ntk_plan import (
    ChunkPlan,
    Sizes,
    one_chunk_entries,
    plan_jacobian_chunks,
    plan_vp_chunks,
    result_entries,
)
from ._ntk_vp import vp_kernel

__all__ = [
    "DEFAULT_MEMORY_BUDGET",
    "Method",
    "Mode",
    "clear_plan_cache",
    "empirical_ntk",
]

MODES = ("full", "diagonal", "trace")
#: Layout of the returned kernel (see the module docstring).
Mode = Literal["full", "diagonal", "trace"]
DEFAULT_MEMORY_BUDGET = 2 * 2**30  # bytes


class Method(StrEnum):
    """How the kernel is computed. All are exact; they differ in cost.

    With N samples, O outputs, P parameters, A activations per sample:

    - ``LAYERWISE``: one forward pass and one backward pass of the whole chunk per output
      give each layer's input ``u`` and output gradient ``g``. Linear layers contribute
      ``(u_i.u_j + 1)(g_ia.g_jb)`` without forming their Jacobian (cost N^2 O^2 d_out
      instead of N^2 O^2 d_in d_out); Conv2d weights (via unfold) keep ``u`` and ``g`` and
      form their Jacobian one layer at a time while contracting (one batched GEMM per
      layer); eval-mode BatchNorm and bias columns are formed per output; other parameters
      fall back to ``JACOBIAN``. Memory N O (P_small + sum_conv out + sum d_out) plus one
      layer's N O P_layer. Fastest on MLPs and CNNs.
    - ``JACOBIAN``: per-sample Jacobians with ``vmap(jacrev(functional_call))``, chunked over
      samples and outputs, contracted with one GEMM per block pair. Cost about N O backward
      passes plus 2 N^2 O^2 P flops (full) or 2 N^2 O P (diagonal, trace); memory N O P.
      Works on any model (the fallback of ``LAYERWISE``).
    - ``NTK_VP``: NTK-vector products: for each column (j, b), the gradient of f_b(x2_j)
      (one vjp) pushed forward through all of x (one jvp). No Jacobian is stored; memory
      about k (P + N A) for k columns at a time; cost N2 O batched jvps over x. Wins only
      when P is so large that the Jacobian does not fit.
    - ``AUTO`` (default): ``LAYERWISE`` when one chunk fits the memory budget, otherwise
      ``NTK_VP``.

    The tests compare every method with the readable, unchunked Jacobian contraction of
    :func:`ncdynamics.probes.ntk_reference.reference_ntk`.
    """

    AUTO = "auto"
    LAYERWISE = "layerwise"
    JACOBIAN = "jacobian"
    NTK_VP = "ntk-vp"


def _flat(c: _layers.Chunk) -> list[tuple[torch.Tensor | None, bool]]:
    """The tensors of a chunk, each with whether it has an output axis (axis 1)."""
    out: list[tuple[torch.Tensor | None, bool]] = [(c.small, True)]
    for d in c.deferred:
        out += [(d.u, False), (d.g, True)]
    for fac in c.factors:
        out += [(fac.u, False), (fac.g, True)]
    return out


def _present(t: torch.Tensor | None) -> torch.Tensor:
    """A chunk tensor that ``_flat`` never leaves out (layer gradients and conv inputs)."""
    if t is None:
        raise RuntimeError("a structured Jacobian block lost one of its tensors.")
    return t


def _unflat(c: _layers.Chunk, ts: list[torch.Tensor | None]) -> _layers.Chunk:
    """A chunk like ``c`` holding the tensors ``ts`` (in the order of ``_flat``)."""
    it = iter(ts)
    small = next(it)
    deferred = [
        _layers.Deferred(d.module, d.kind, _present(next(it)), _present(next(it)))
        for d in c.deferred
    ]
    factors = [_layers.Factor(next(it), fac.bias, _present(next(it))) for fac in c.factors]
    return _layers.Chunk(small, deferred, factors)


def _allocate(
    parts: list[tuple[torch.Tensor | None, bool]], n: int, o: int
) -> list[torch.Tensor | None]:
    """Empty tensors for a whole block of ``n`` samples and ``o`` outputs, shaped like the
    chunk tensors ``parts`` (with or without an output axis)."""
    return [
        None
        if p is None
        else torch.empty(
            (n, o, *p.shape[2:]) if has_o else (n, *p.shape[1:]), dtype=p.dtype, device=p.device
        )
        for p, has_o in parts
    ]


class _Engine:
    """Shared state of one call: wrapped model, parameter split, per-chunk Jacobians."""

    def __init__(self, wrapped: SelectedOutput, plan: _layers.LayerPlan, n_out: int) -> None:
        self.wrapped = wrapped
        self.plan = plan
        self.n_out = n_out
        named = dict(wrapped.named_parameters())
        skip = plan.param_ids | plan.unused_ids
        self.generic = {
            k: p.detach() for k, p in named.items() if p.requires_grad and id(p) not in skip
        }
        self.p_generic = sum(p.numel() for p in self.generic.values())
        self.consts: dict[str, torch.Tensor] = {}
        self.aliases: dict[str, str] = {}
        if self.p_generic:  # only the generic torch.func path calls the model functionally
            self.consts = {k: p.detach() for k, p in named.items() if k not in self.generic}
            self.consts.update(dict(wrapped.named_buffers()))
            self.aliases = alias_names(wrapped)

    def _generic_jac(self, x: torch.Tensor, out_idx: torch.Tensor) -> list[torch.Tensor]:
        """Per-sample Jacobian pieces (n, o, p) of the generic parameters (torch.func)."""
        consts, wrapped, aliases = self.consts, self.wrapped, self.aliases

        def f1(p: dict[str, torch.Tensor], xi: torch.Tensor) -> torch.Tensor:
            return call_with(wrapped, {**consts, **p}, aliases, (xi[None],))[0, out_idx]  # (o,)

        jac = vmap(jacrev(f1), in_dims=(None, 0))(self.generic, x)  # name -> (n, o, *shape)
        return [j.reshape(j.shape[0], j.shape[1], -1) for j in jac.values()]

    def _chunk(
        self, x: torch.Tensor, idx: torch.Tensor
    ) -> tuple[_layers.Chunk, list[torch.Tensor]]:
        """Structured part and generic pieces (n, o, p) of samples ``x`` and outputs ``idx``."""
        chunk = _layers.Chunk(None, [], [])
        if self.plan.modules:
            chunk = _layers.structured_chunk(self.plan, self.wrapped, x, idx)
        generic = self._generic_jac(x, idx) if self.p_generic else []
        return chunk, generic

    def block(self, x: torch.Tensor, out_idx: torch.Tensor, n_chunk: int, o_chunk: int) -> Block:
        """Jacobian block of all of ``x`` (n, ...) and outputs ``out_idx``, in chunks written
        into tensors allocated once for the whole block (no concatenation)."""
        n, o = x.shape[0], out_idx.numel()
        first: _layers.Chunk | None = None
        full: list[torch.Tensor | None] = []
        if n_chunk >= n and o_chunk >= o:  # one chunk: its tensors as they are
            first, generic = self._chunk(x, out_idx)
            full = [p for p, _ in _flat(first)] + list(generic)
        else:
            for s in range(0, n, n_chunk):
                for t in range(0, o, o_chunk):
                    chunk, generic = self._chunk(x[s : s + n_chunk], out_idx[t : t + o_chunk])
                    parts = _flat(chunk) + [(g, True) for g in generic]
                    if first is None:
                        first, full = chunk, _allocate(parts, n, o)
                    for dst, (p, has_o) in zip(full, parts, strict=True):
                        if p is not None and has_o:
                            _present(dst)[s : s + n_chunk, t : t + o_chunk] = p
                        elif p is not None:
                            _present(dst)[s : s + n_chunk] = p
                    del chunk, generic, parts
        if first is None:
            raise ValueError(f"`x` must hold at least one sample; got shape {tuple(x.shape)}.")
        n_struct = len(_flat(first))
        blk = _unflat(first, full[:n_struct])
        mats = ([blk.small] if blk.small is not None else []) + [
            _present(t) for t in full[n_struct:]
        ]
        return Block(merge_small(mats), blk.deferred, blk.factors, n, o, x.dtype, x.device)

    def sizes(self) -> Sizes:
        pl = self.plan
        p_total = (
            pl.n_mat
            + self.p_generic
            + sum(
                int(p.numel())
                for m in pl.modules
                if pl.modules[m] == "factored"
                for p in _layers.trainable_params(m)
            )
        )
        return Sizes(
            pl.n_small + self.p_generic,
            self.p_generic,
            pl.d_out_factored,
            pl.d_in_factored,
            pl.act_per_sample,
            pl.unfold_max,
            p_total,
            g_def=pl.g_deferred,
            u_def=pl.u_deferred,
            p_def=pl.p_deferred_max,
            u_formed=pl.act_per_sample_extra,
        )


def _place(
    res: torch.Tensor,
    blk: torch.Tensor,
    mode: str,
    i: slice,
    j: slice,
    oa: slice,
    ob: slice,
    *,
    mirror: bool,
) -> None:
    if mode == "full":
        res[i, j, oa, ob] = blk
        if mirror:
            res[j, i, ob, oa] = blk.permute(1, 0, 3, 2)
    elif mode == "diagonal":
        res[oa, i, j] = blk
        if mirror:
            res[oa, j, i] = blk.transpose(1, 2)
    else:
        res[i, j] += blk
        if mirror:
            res[j, i] += blk.T


def _slices(n: int, size: int) -> list[slice]:
    return [slice(s, min(s + size, n)) for s in range(0, n, size)]


def _jacobian_kernel(
    eng: _Engine, x: torch.Tensor, x2: torch.Tensor | None, mode: str, plan: ChunkPlan
) -> torch.Tensor:
    n1, n_out = x.shape[0], eng.n_out
    n2 = n1 if x2 is None else x2.shape[0]
    shape = {"full": (n1, n2, n_out, n_out), "diagonal": (n_out, n1, n2), "trace": (n1, n2)}
    res = torch.zeros(shape[mode], dtype=x.dtype, device=x.device)
    outs = [torch.arange(s.start, s.stop, device=x.device) for s in _slices(n_out, plan.o_block)]
    rows, cols = _slices(n1, plan.n_block), _slices(n2, plan.n_block)
    cache: dict[tuple[int, int, int], Block] = {}

    def get(side: int, sl: slice, k: int) -> Block:
        key = (side, sl.start, k)
        if key in cache:
            return cache[key]
        src = x if side == 1 or x2 is None else x2
        blk = eng.block(src[sl], outs[k], plan.n_chunk, plan.o_chunk)
        if plan.store_all:
            cache[key] = blk
        return blk

    side2 = 1 if x2 is None else 2
    for i in rows:
        for ka, oa in enumerate(outs):
            a = get(1, i, ka)
            cache[(1, i.start, ka)] = a  # the row block is reused across columns
            for j in cols:
                if x2 is None and j.start < i.start:
                    continue
                for kb, ob in enumerate(outs):
                    if mode != "full" and kb != ka:
                        continue
                    b = get(side2, j, kb)
                    with torch.no_grad():
                        blk = contract(a, b, mode)
                        sa, sb = (
                            slice(int(oa[0]), int(oa[-1]) + 1),
                            slice(int(ob[0]), int(ob[-1]) + 1),
                        )
                        _place(
                            res, blk, mode, i, j, sa, sb, mirror=x2 is None and j.start != i.start
                        )
                    del b, blk  # free the column block before the next one is built
            if not plan.store_all:
                cache.clear()
    return res


def _check_inputs(model: object, x: object, x2: object) -> tuple[torch.Tensor, torch.Tensor | None]:
    if not isinstance(model, nn.Module):
        raise TypeError(f"`model` must be a torch.nn.Module; got {type(model).__name__}.")
    params = [p for p in model.parameters() if p.requires_grad]
    if not params:
        raise ValueError(
            "`model` must have at least one trainable parameter "
            "(requires_grad=True); got none, so its NTK is zero."
        )
    dtype, device = params[0].dtype, params[0].device
    out: list[torch.Tensor | None] = []
    for name, t in (("x", x), ("x2", x2)):
        if t is None:
            out.append(None)
            continue
        if isinstance(t, np.ndarray):
            t = torch.from_numpy(t)
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"`{name}` must be a torch.Tensor; got {type(t).__name__}.")
        if t.dtype != dtype:
            raise TypeError(
                f"`{name}` must have the model's dtype {dtype}; got {t.dtype}. "
                f"Cast with {name}.to({dtype})."
            )
        if t.device != device:
            raise ValueError(
                f"`{name}` must be on the model's device {device}; got {t.device}. "
                f"Move it with {name}.to({str(device)!r})."
            )
        if t.dim() < 1 or t.shape[0] < 1:
            raise ValueError(
                f"`{name}` must have shape (n_samples, *input_shape) with "
                f"n_samples >= 1; got {tuple(t.shape)}."
            )
        check_finite_tensor(t, name)
        if t.is_inference():  # made under torch.inference_mode: autograd cannot use it
            with torch.inference_mode(False):
                t = t.clone()
        out.append(t)
    first, second = _present(out[0]), out[1]
    if second is not None and second.shape[1:] != first.shape[1:]:
        raise ValueError(
            f"`x2` must have shape (n2, {', '.join(map(str, first.shape[1:]))}) "
            f"like `x`; got {tuple(second.shape)}."
        )
    return first, second


def empirical_ntk(
    model: nn.Module,
    x: torch.Tensor,
    x2: torch.Tensor | None = None,
    *,
    output: Output = "logits",
    mode: Mode = "full",
    method: Method | str = Method.AUTO,
    memory_budget: int | None = None,
    average: bool = False,
    layer: str | None = None,
) -> torch.Tensor:
    """Empirical NTK of ``model`` between the samples of ``x`` and ``x2``.

    Implements [1], eq. (2) (``output="logits"``) and eq. (3) (``output="features"``)::

        Theta[i, j, a, b] = sum_w  d f_a(x_i)/dw * d f_b(x2_j)/dw

    Parameters
    ----------
    model : nn.Module
        Any module; evaluated in eval mode (training flag restored afterwards).
    x : Tensor of shape (n1, *input_shape)
        Same dtype as the model's parameters (float32 or float64).
    x2 : Tensor of shape (n2, *input_shape), optional
        Second sample set for a cross kernel; ``None`` means ``x`` (and uses symmetry).
    output : {"logits", "features"} or callable, default="logits"
        ``logits``: the model's output, shape (n, n_out). ``features``: the input of the
        classifier (``model.features(x)`` if defined, else the input of ``layer`` or of
        ``find_classifier``). A callable maps the model's output to (n, n_out).
    mode : {"full", "diagonal", "trace"}, default="full"
        Layout (n1, n2, O, O), (O, n1, n2) or (n1, n2); see the module docstring.
    method : Method or str, default="auto"
        See :class:`Method` for costs.
    memory_budget : int, optional
        Bound in bytes on the estimated peak extra memory, result included (default
        ``DEFAULT_MEMORY_BUDGET``, 2 GiB). Work is chunked over samples and outputs to stay
        under it.
    average : bool, default=False
        With ``mode="trace"``, divide by the number of outputs (mean instead of sum).
    layer : str, optional
        Name of the classifier submodule, for ``output="features"``.

    Returns
    -------
    Tensor
        The kernel, in the dtype of ``x``.

    Raises
    ------
    TypeError
        Not a module, wrong input type or dtype, an output that is not a tensor.
    ValueError
        No trainable parameters, wrong input shape, an output without a class axis, an
        unknown option, or a memory budget too small for one chunk.
    """
    x, x2 = _check_inputs(model, x, x2)
    check_option(mode, "mode", MODES)
    if not callable(output):
        check_option(output, "output", OUTPUTS)
    method = _as_method(method)
    if memory_budget is None:
        memory_budget = DEFAULT_MEMORY_BUDGET
    budget = check_int(memory_budget, "memory_budget", low=1)
    if not isinstance(average, bool):
        raise TypeError(f"`average` must be a bool; got {type(average).__name__}.")
    if average and mode != "trace":
        raise ValueError(f"`average`=True applies only to mode='trace'; got mode={mode!r}.")
    _check_per_sample(model)
    wrapped = SelectedOutput(model, output, layer)
    # a model already in eval mode everywhere needs no toggling (0.5 ms on a small net)
    training = any(m.training for m in model.modules())
    with eval_mode(model) if training else nullcontext(model):
        return _compute(wrapped, x, x2, mode, method, budget, average)


def _check_per_sample(model: nn.Module) -> None:
    """Reject a BatchNorm without running statistics: it normalises with the statistics of
    the batch even in eval mode, so a sample's output depends on the other samples."""
    for name, m in model.named_modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is None:
            raise ValueError(
                f"`model` must evaluate each sample on its own in eval mode; its BatchNorm "
                f"{name or type(m).__name__!r} has track_running_stats=False, so it uses the "
                f"batch's statistics and mixes samples (no per-sample NTK exists). Build it "
                f"with track_running_stats=True."
            )


def _as_method(method: Method | str) -> Method:
    """The :class:`Method` named by ``method``; an unknown name lists the known ones."""
    try:
        return Method(method)
    except ValueError:
        check_option(method, "method", [m.value for m in Method])
        raise


def _compute(
    wrapped: SelectedOutput,
    x: torch.Tensor,
    x2: torch.Tensor | None,
    mode: str,
    method: Method,
    budget: int,
    average: bool,
) -> torch.Tensor:
    structured = method in (Method.AUTO, Method.LAYERWISE)
    output = wrapped.output
    key = _cache.plan_key(wrapped, output, wrapped.layer, x, structured)
    cached = _cache.lookup(wrapped.model, key, wrapped)
    if cached is not None:
        plan, n_out = cached
    else:
        trainable = [p for p in wrapped.parameters() if p.requires_grad]
        pilot = x[:2]
        try:
            plan = _layers.plan_layers(wrapped, wrapped, pilot, trainable, structured=structured)
            with torch.no_grad():
                n_out = wrapped(pilot).shape[1]
        except RuntimeError as exc:
            msg = str(exc).splitlines()[0]
            raise ValueError(
                f"`x` of shape {tuple(x.shape)} could not be passed through the model: {msg}"
            ) from exc
        _cache.store(wrapped.model, key, plan, n_out, wrapped)
    eng = _Engine(wrapped, plan, n_out)
    itemsize = x.element_size()
    n1, n2 = x.shape[0], (None if x2 is None else x2.shape[0])
    sizes = eng.sizes()
    jplan = None
    if method != Method.NTK_VP:
        jplan = plan_jacobian_chunks(
            sizes, mode=mode, n1=n1, n2=n2, n_out=n_out, budget=budget, itemsize=itemsize
        )
    if jplan is not None:
        res = _jacobian_kernel(eng, x, x2, mode, jplan)
    else:
        if method in (Method.LAYERWISE, Method.JACOBIAN):
            _raise_budget(method.value, budget, sizes, mode, n1, n2, n_out, itemsize)
        vp = plan_vp_chunks(
            sizes,
            mode=mode,
            n1=n1,
            n2=n1 if n2 is None else n2,
            n_out=n_out,
            budget=budget,
            itemsize=itemsize,
        )
        if vp is None:
            _raise_budget(
                "ntk-vp" if method == Method.NTK_VP else "auto",
                budget,
                sizes,
                mode,
                n1,
                n2,
                n_out,
                itemsize,
            )
        res = vp_kernel(wrapped, x, x2, mode, n_out, vp[0], plan.unused_ids)
    return res / n_out if average else res


def _raise_budget(
    name: str, budget: int, s: Sizes, mode: str, n1: int, n2: int | None, n_out: int, itemsize: int
) -> NoReturn:
    res = result_entries(mode, n1, n1 if n2 is None else n2, n_out) * itemsize
    one = one_chunk_entries(s) * itemsize
    raise ValueError(
        f"`memory_budget` == {budget} bytes cannot hold one chunk of method {name!r}: the "
        f"result needs {res} bytes and one sample x one output about {one} more. Raise "
        f"memory_budget, use mode='trace' or 'diagonal', or fewer samples."
    )
