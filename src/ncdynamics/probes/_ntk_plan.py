"""Memory estimates and chunk plans for the empirical NTK (private).

All sizes are counted in tensor *entries* and converted to bytes with the dtype's item size.
The estimates are sums of the sizes of the tensors each method holds at its peak (see
``docs/ntk.md``, "Memory"); they are estimates, not measurements, and err on the large side
through the factors of 2 and 3 on transient terms.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "ChunkPlan",
    "Sizes",
    "one_chunk_entries",
    "plan_jacobian_chunks",
    "plan_vp_chunks",
    "result_entries",
]

SLACK = 32 * 2**20  # bytes: allocator granularity and small temporaries not modelled


@dataclass(frozen=True)
class Sizes:
    """Per-sample sizes of a problem.

    ``p_mat``: Jacobian columns stored materialised (BN and bias columns of the structured
    layers plus generic parameters); ``p_generic``: the generic (``torch.func``) part of
    them; ``d_out`` and ``d_in``: summed output and input widths of factored Linear layers;
    ``act``: activation entries of one sample; ``unfold``: largest unfolded layer input of
    one sample; ``p_total``: all trainable parameters used by the output; ``g_def`` and
    ``u_def``: output and input entries of one sample over the deferred (conv and
    sequence-Linear) layers, whose gradients and inputs are stored instead of their
    Jacobian; ``p_def``: the widest deferred layer's Jacobian columns (formed one layer at a
    time while contracting); ``u_formed``: the unfolded inputs of one sample over the convs
    whose Jacobian is formed during the backward passes (kept while they run).
    """

    p_mat: int
    p_generic: int
    d_out: int
    d_in: int
    act: int
    unfold: int
    p_total: int
    g_def: int = 0
    u_def: int = 0
    p_def: int = 0
    u_formed: int = 0


@dataclass(frozen=True)
class ChunkPlan:
    """Row/column blocks of ``n_block`` samples x ``o_block`` outputs, each filled in compute
    chunks of ``n_chunk`` x ``o_chunk``; ``store_all`` when every block is computed once and
    kept; ``peak_bytes`` the estimate."""

    n_block: int
    o_block: int
    n_chunk: int
    o_chunk: int
    store_all: bool
    peak_bytes: int


def _halving(n: int) -> list[int]:
    out = [n]
    while out[-1] > 1:
        out.append((out[-1] + 1) // 2)
    return out


def result_entries(mode: str, n1: int, n2: int, o: int) -> int:
    """Entries of the returned kernel."""
    return {"full": n1 * n2 * o * o, "diagonal": o * n1 * n2, "trace": n1 * n2}[mode]


def _store(s: Sizes, n: int, o: int) -> int:
    """A stored Jacobian block: materialised columns, gradients of factored and deferred
    layers, and their inputs."""
    return n * o * (s.p_mat + s.d_out + s.g_def) + n * (s.d_in + s.u_def)


def _transient(s: Sizes, n: int, o: int) -> int:
    """Working memory while one compute chunk is built: the graph and saved activations, one
    backward pass's gradients and temporaries, BN's normalised inputs; for generic
    parameters, the vmapped backward passes of all o outputs at once and their Jacobian."""
    generic = 2 * n * o * s.act + 3 * n * o * s.p_generic if s.p_generic else 0
    return 5 * n * s.act + n * s.u_formed + generic


def one_chunk_entries(s: Sizes) -> int:
    """Entries one sample and one output need beyond the result: a stored block and the
    graph of its pass (the smallest chunk of ``plan_jacobian_chunks``, quoted when even it
    does not fit)."""
    return _store(s, 1, 1) + 5 * s.act + s.u_formed + s.unfold


def _contraction(s: Sizes, n: int, o: int) -> int:
    """Working memory while two blocks are contracted: one deferred layer's Jacobian per
    block and one unfolded input."""
    return 2 * n * o * s.p_def + n * s.unfold


def plan_jacobian_chunks(
    s: Sizes, *, mode: str, n1: int, n2: int | None, n_out: int, budget: int, itemsize: int
) -> ChunkPlan | None:
    """Largest blocks that fit ``budget`` bytes, preferring no recomputation.

    ``n2=None`` is the symmetric case (one sample set). Returns None when not even one sample
    and one output fit.
    """
    sym = n2 is None
    n2v = n1 if n2 is None else n2
    n_max = max(n1, n2v)
    res = result_entries(mode, n1, n2v, n_out)
    # Full mode pairs every output block with every other, so all outputs per block are
    # preferred; in diagonal and trace modes output blocks are independent, so splitting the
    # outputs costs no recomputation while splitting the samples does.
    pairs = (
        [(o_b, n_b) for o_b in _halving(n_out) for n_b in _halving(n_max)]
        if mode == "full"
        else [(o_b, n_b) for n_b in _halving(n_max) for o_b in _halving(n_out)]
    )
    for o_b, n_b in pairs:
        store_all = n_b >= n_max and o_b == n_out
        stored = (
            _store(s, n1, n_out) + (0 if sym else _store(s, n2v, n_out))
            if store_all
            else 2 * _store(s, n_b, o_b)
        )
        o_pair = o_b * o_b if mode == "full" else o_b
        # the block pair's kernel, one temporary of its size and the symmetric GEMM's pieces
        block = 5 * min(n_b, n1) * min(n_b, n2v) * o_pair // 2
        contract = block + _contraction(s, n_b, o_b)
        for o_c in _halving(o_b):
            for n_c in _halving(n_b):
                work = max(contract, _transient(s, n_c, o_c))  # building, then contracting
                peak = (res + stored + work) * itemsize + SLACK
                if peak <= budget:
                    return ChunkPlan(n_b, o_b, n_c, o_c, store_all, peak)
    return None


def plan_vp_chunks(
    s: Sizes, *, mode: str, n1: int, n2: int, n_out: int, budget: int, itemsize: int
) -> tuple[int, int] | None:
    """Columns per NTK-vector-product batch that fit ``budget``; (k, peak bytes) or None."""
    res = result_entries(mode, n1, n2, n_out)
    for k in _halving(min(n2 * n_out, 256)):
        peak = (
            res + 3 * k * s.p_total + 3 * k * n1 * s.act + 2 * k * n1 * n_out
        ) * itemsize + SLACK
        if peak <= budget:
            return k, peak
    return None
