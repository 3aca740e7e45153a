"""Empirical NTK: ncdynamics.probes.empirical_ntk against the common recipe, same process.

Baseline (the common recipe): per-sample Jacobians with ``vmap(jacrev(functional_call))``
over all samples (built in chunks of 25 samples into one preallocated tensor, as planning
needed for N=500), then one ``einsum('iap,jbp->ijab')``: the recipe of the package's
reference, ``probes/ntk_reference.py``, chunked. The time of that einsum alone is printed as
the GEMM floor of the Jacobian-contraction method. Ours is ``method="auto"``, the
layer-structured fast path (``probes/_fast_ntk_layers.py``, ``probes/_fast_ntk_contract.py``).

Cases (issue 3): (a) MLP 784-512-512-10, N=500; (b) SmallCNN on 28x28, N=200; (c) ResNet20
width 16 on 28x28, N=120. ``--quick`` uses N = 50 / 50 / 20 and finishes in under a minute
on an idle 2-core machine. One intra-op thread by default (``--threads``): on a shared
2-core machine a second thread made every method several times slower in CPU time.

For each case it prints the time of the baseline (full), ours in full, trace and diagonal
modes, "ours full, then traced", and the ratios. It also times the *reverse-pass floor*: one
forward pass and O reverse passes of the whole batch to the input (one per output), with no
parameter gradient, Jacobian or contraction. Every exact method built on reverse mode
needs at least these O passes (a kernel entry is a sum over outputs of products of
per-output gradients), so "full-then-trace / floor" bounds what any trace mode of that kind
can gain over full-then-trace. Times are the best of ``--repeat`` runs
after one warm-up on 2 samples (first calls of some kernels pay a one-off setup cost).

Memory: with ``--memory`` every (case, method) runs again in its own subprocess, which
resets its peak resident set size just before the computation (``/proc/self/clear_refs``)
and reports the peak (``VmHWM``) minus the resident size at that moment: a *measured* peak
extra memory. Without ``--memory`` only the baseline's *estimate* from tensor sizes (the
Jacobian N*O*P plus the result) is printed. The baseline is skipped (and says so) when that
estimate exceeds ``--baseline-max-gb``.

Usage::

    .venv/bin/python benchmarks/bench_ntk.py [--quick] [--memory] [--cases mlp,cnn,resnet]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from types import ModuleType

import numpy as np
import torch
from _timing import Timing, emit, interleaved
from _timing import ratio_text as ratio
from threadpoolctl import threadpool_limits
from torch import nn
from torch.func import functional_call, jacrev, vmap

from ncdynamics.models import MLP, ResNet20, SmallCNN
from ncdynamics.probes import empirical_ntk

SIZES = {"mlp": (500, 50), "cnn": (200, 50), "resnet": (120, 20), "usercnn": (100, 40)}
PEER_SIZES = ((100, 200, 400), (50,))  # full run, --quick
BUDGET = 4 * 2**30  # the 4 GB budget of the issue
GEMM_CPU = [0.0]  # CPU seconds of the baseline's last einsum
RESULTS: list[dict[str, object]] = []  # the records of this run, see ``results()``
PEER_PINS = "jax[cpu]==0.4.26 neural-tangents==0.6.5"  # pyproject's ntk-peer extra


class DigitsCNN(nn.Module):
    """A user-style CNN: two conv + BatchNorm + ReLU + max-pool blocks and a linear head,
    for 8x8 single-channel digits (P = 6,266)."""

    def __init__(self, generator: torch.Generator) -> None:
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1),
            nn.BatchNorm2d(16),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (16, 4, 4)
            nn.Conv2d(16, 32, 3, padding=1),
            nn.BatchNorm2d(32),
            nn.ReLU(),
            nn.MaxPool2d(2),  # (32, 2, 2)
            nn.Flatten(),
        )
        self.head = nn.Linear(128, 10)
        with torch.no_grad():  # seeded weights, non-trivial running statistics
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=generator) / max(1, p[0].numel()) ** 0.5)
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.2, 0.2, generator=generator)
                    m.running_var.uniform_(0.5, 2.0, generator=generator)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.body(x))


def build(case: str, n: int, device: str = "cpu") -> tuple[nn.Module, torch.Tensor]:
    """The model (eval mode) and ``n`` inputs of a case, on ``device``."""
    g = torch.Generator().manual_seed(0)
    model: nn.Module
    if case == "mlp":
        model = MLP(784, 10, depth=2, width=512, generator=g)
        x = torch.randn(n, 784, generator=g)
    elif case == "cnn":
        model = SmallCNN(1, 10, generator=g)
        x = torch.rand(n, 1, 28, 28, generator=g)
    elif case == "usercnn":
        from ncdynamics.data import load

        model = DigitsCNN(g)
        x = torch.from_numpy(load("digits").x_train[:n]).float()  # (n, 1, 8, 8)
    else:
        model = ResNet20(1, 10, width=16, generator=g)
        with torch.no_grad():  # non-trivial running statistics, as after training
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_var.uniform_(0.5, 2.0, generator=g)
        x = torch.rand(n, 1, 28, 28, generator=g)
    return model.eval().to(device), x.to(device)


def synchronize(device: str) -> Callable[[], None]:
    """A function that waits for the device's queued work (a no-op on the CPU)."""
    if device.startswith("cuda"):
        return lambda: torch.cuda.synchronize(device)
    return lambda: None


def baseline(
    model: nn.Module, x: torch.Tensor, chunk: int = 25
) -> tuple[torch.Tensor, float, float]:
    """The common recipe; returns (kernel (N, N, O, O), jacobian seconds, einsum seconds)."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())
    sync = synchronize(str(x.device))

    def f(p, xi):
        return functional_call(model, {**p, **buffers}, (xi[None],))[0]  # (O,)

    t0 = time.perf_counter()
    jmat = None  # (N, O, P), filled chunk by chunk (a concatenation would double the peak)
    for s in range(0, len(x), chunk):
        jac = vmap(jacrev(f), in_dims=(None, 0))(params, x[s : s + chunk])
        piece = torch.cat([j.reshape(j.shape[0], j.shape[1], -1) for j in jac.values()], dim=2)
        del jac
        if jmat is None:
            jmat = piece.new_empty((len(x), piece.shape[1], piece.shape[2]))
        jmat[s : s + chunk] = piece
        del piece
    sync()
    t1, c1 = time.perf_counter(), time.process_time()
    k = torch.einsum("iap,jbp->ijab", jmat, jmat)
    sync()
    t2, c2 = time.perf_counter(), time.process_time()
    GEMM_CPU[0] = c2 - c1
    return k, t1 - t0, t2 - t1


def reverse_floor(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    """One forward pass and one reverse pass per output, to the input only (the floor)."""
    xg = x.clone().requires_grad_(True)
    f = model(xg)  # (N, O)
    for k in range(f.shape[1]):
        cot = torch.zeros_like(f)
        cot[:, k] = 1.0
        (gx,) = torch.autograd.grad(f, xg, grad_outputs=cot, retain_graph=k < f.shape[1] - 1)
    return gx


def dense_columns(model: nn.Module) -> int:
    """Parameters whose per-sample Jacobian columns an exact kernel must contract one by one:
    every trainable parameter except the weights of ``Linear`` layers, whose Gram factors
    into input and output-gradient products (``docs/ntk.md``). For a conv layer the
    alternative to its Jacobian's Gram, products of the (S x S) position Grams of output
    gradients and unfolded inputs, costs more whenever S^2 exceeds the unfolded width K,
    which holds for every conv of these cases (the digits CNN: S^2 = 4096/256 against
    K = 9/144)."""
    factored = {id(m.weight) for m in model.modules() if isinstance(m, nn.Linear)}
    return sum(p.numel() for p in model.parameters() if p.requires_grad and id(p) not in factored)


def gram_floor(
    model: nn.Module, x: torch.Tensor, n_out: int, mode: str, device: str
) -> Callable[[], object]:
    """The reverse-pass floor plus the one symmetric product the ``mode``'s kernel needs of
    the dense Jacobian columns (:func:`dense_columns`), on random numbers of that shape:
    ``N*O`` rows for the full kernel, ``N`` rows of ``O*P`` for the traced one, by the faster
    of :func:`symmetric_products` (timed once at set-up). A lower bound for this family of
    methods, not for every algorithm."""
    n, p = x.shape[0], dense_columns(model)
    rows, cols = (n * n_out, p) if mode == "full" else (n, n_out * p)
    g = torch.Generator().manual_seed(0)
    a_t = torch.randn((cols, rows), generator=g, dtype=x.dtype)
    product = min(symmetric_products(a_t, device).values(), key=_fastest_of_three)

    def floor() -> object:
        reverse_floor(model, x)
        return product()

    return floor


def symmetric_products(a_t: torch.Tensor, device: str) -> dict[str, Callable[[], object]]:
    """Ways to compute ``a @ a.T`` from ``a_t`` (= a.T, C-contiguous): torch's GEMM, and on
    CPU BLAS ``ssyrk``/``dsyrk`` (half the flops, upper triangle only; the faster for a
    square-ish result, while the GEMM is the faster for few rows with long inner products)."""
    a = a_t.T.to(device)
    ways: dict[str, Callable[[], object]] = {"gemm": lambda: a @ a.T}
    if device == "cpu":
        from ncdynamics.probes._fast_syrk import syrk_update

        a_t_np = a_t.numpy()
        update = syrk_update(a_t_np.dtype)

        def syrk() -> object:
            c = np.zeros((a_t_np.shape[1],) * 2, dtype=a_t_np.dtype, order="F")
            update(1.0, a_t_np, c)  # c += a a^T (upper triangle)
            return c

        ways["syrk"] = syrk
    return ways


def _fastest_of_three(fn: Callable[[], object]) -> float:
    """The median of three timed calls after one untimed call (for choosing a method)."""
    fn()
    times = []
    for _ in range(3):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return statistics.median(times)


def n_params(model: nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def baseline_bytes(model: nn.Module, n: int, n_out: int = 10) -> int:
    return 4 * (n * n_out * n_params(model) + n * n * n_out * n_out)


CLOCK = {"name": "wall"}  # --clock: wall (perf_counter) or cpu (process_time of all threads)


def timed(
    fns: dict[str, Callable[[], object]],
    rounds: int,
    sync: Callable[[], object],
    outputs: dict[str, object] | None = None,
    warmup: int = 1,
) -> dict[str, Timing]:
    """``_timing.interleaved`` on the clock chosen with ``--clock`` (wall time, or the
    process's CPU time, which leaves out waiting for a core on a loaded machine), with the
    device synchronised inside every timed call."""
    return interleaved(
        fns, rounds=rounds, warmup=warmup, clock=CLOCK["name"], sync=sync, outputs=outputs
    )


def text(t: Timing) -> str:
    return f"{t.text()} (median [range] of {len(t.times)})"


def record(benchmark: str, t: Timing, n: int, base: Timing | None = None, **extra: object) -> None:
    """One machine-readable record in ``_timing.emit``'s fields (size ``N=n``; the ratio is
    the baseline's median over this one's, with the range of the per-round ratios), kept for
    ``--json`` and appended to ``$NCDYN_BENCH_RESULTS`` for ``run_all.py``."""
    device = str(extra.pop("device", "cpu"))
    rec = emit(benchmark, t, size=f"N={n}", baseline=base, device=device, n=n, **extra)
    RESULTS.append(rec)


def results() -> list[dict[str, object]]:
    """The records of every timing of this run so far, one dict per (benchmark, variant,
    n), in ``_timing.emit``'s fields (``baseline``, ``ratio`` and its per-round range) plus
    ``n`` and, where measured, ``max_rel_diff``, ``mode`` or ``of``."""
    return list(RESULTS)


def _status_kb(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def measure_memory(case: str, n: int, what: str) -> None:
    """Child process: run one computation and print its peak extra RSS in bytes (JSON).

    The peak (VmHWM) is reset just before the computation by writing 5 to
    /proc/self/clear_refs (Linux), so earlier transients (imports, set-up) do not count;
    without that file the lifetime ``ru_maxrss`` is used, an upper bound.
    """
    torch.set_num_threads(1)
    model, x = build(case, n)
    empirical_ntk(model, x[:2])  # load kernels; not counted
    if what == "baseline":
        baseline(model, x[:2])
    before = _status_kb("VmRSS")
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        read_peak = lambda: _status_kb("VmHWM")  # noqa: E731
    except OSError:
        read_peak = lambda: resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # noqa: E731
    if what == "baseline":
        baseline(model, x)
    else:
        empirical_ntk(model, x, mode=what, memory_budget=BUDGET)
    print(json.dumps({"extra_bytes": max(read_peak() - before, 0) * 1024}))


def child_memory(case: str, n: int, what: str) -> float:
    out = subprocess.run(
        [sys.executable, __file__, "--child", case, str(n), what],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])["extra_bytes"] / 1e9


def run_case(case: str, n: int, args: argparse.Namespace) -> None:
    dev = args.device
    model, x = build(case, n, dev)
    sync = synchronize(dev)
    bench = f"ntk-{case}"
    print(
        f"\n== {case}: N={n}, P={n_params(model):,}, {torch.get_num_threads()} threads, "
        f"device {dev}, {args.rounds} interleaved rounds"
    )
    first = None
    if case == "usercnn":
        first = _first_call(model, x, args, sync)
    empirical_ntk(model, x[:2])  # warm-up of ours (and of the shared conv/GEMM kernels)
    baseline(model, x[:2])

    def ntk(mode: str) -> Callable[[], torch.Tensor]:
        return lambda: empirical_ntk(model, x, mode=mode, memory_budget=BUDGET)  # type: ignore[arg-type]

    fns: dict[str, Callable[[], object]] = {
        "ours full": ntk("full"),
        "ours trace": ntk("trace"),
        "ours diagonal": ntk("diagonal"),
        "full-then-trace": lambda: torch.einsum("ijaa->ij", ntk("full")()),
        "reverse-pass floor": lambda: reverse_floor(model, x),
        "passes + Gram floor, full": gram_floor(model, x, 10, "full", dev),
        "passes + Gram floor, trace": gram_floor(model, x, 10, "trace", dev),
    }
    est = baseline_bytes(model, n)
    with_base = est <= args.baseline_max_gb * 1e9 and (
        case != "mlp" or args.quick or args.mlp_baseline
    )
    if with_base:
        fns["baseline full"] = lambda: baseline(model, x)[0]
    outs: dict[str, object] = {}
    t = timed(fns, args.rounds if case != "mlp" or not with_base else 1, sync, outs)
    for k in fns:
        print(f"{k:22s} {text(t[k])}")
    then, floor = t["full-then-trace"], t["reverse-pass floor"]
    print(f"  ratio full-then-trace / trace     {ratio(then, t['ours trace'])}")
    print(f"  ratio full-then-trace / diagonal  {ratio(then, t['ours diagonal'])}")
    print(f"  ratio full-then-trace / floor     {ratio(then, floor)}   (ceiling of the two above)")
    print(f"  ratio trace / floor               {ratio(t['ours trace'], floor)}   (target <= 1.5)")
    print(f"  ratio diagonal / floor            {ratio(t['ours diagonal'], floor)}")
    full_floor, trace_floor = t["passes + Gram floor, full"], t["passes + Gram floor, trace"]
    print(f"  ratio trace / (passes + Gram)     {ratio(t['ours trace'], trace_floor)}")
    print(f"  ratio full / (passes + Gram)      {ratio(t['ours full'], full_floor)}")
    for k in ("ours trace", "ours diagonal"):
        record(bench, t[k], n, then, device=dev)
        record(bench + "-floor", floor, n, t[k], device=dev, of=k)
    record(bench + "-floor", trace_floor, n, t["ours trace"], device=dev, of="ours trace")
    record(bench + "-floor", full_floor, n, t["ours full"], device=dev, of="ours full")
    record(bench, floor, n, device=dev)
    if with_base:
        base = t["baseline full"]
        k_ours, k_base = outs["ours full"], outs["baseline full"]
        assert isinstance(k_ours, torch.Tensor) and isinstance(k_base, torch.Tensor)
        err = float((k_ours - k_base).abs().max() / k_base.abs().max())
        print(
            f"  ratio baseline / ours full        {ratio(base, t['ours full'])}   "
            f"max rel. difference {err:.1e}"
        )
        print(f"  ratio baseline / ours trace       {ratio(base, t['ours trace'])}")
        print(
            f"  ratio baseline / (passes + Gram)  {ratio(base, full_floor)}   (the most any "
            "method of this family can gain over the baseline's full kernel)"
        )
        record(bench + "-floor", full_floor, n, base, device=dev, of="baseline full")
        record(bench, t["ours full"], n, base, device=dev, max_rel_diff=err)
        record(bench, base, n, device=dev)
    else:
        record(bench, t["ours full"], n, device=dev)
        print(
            f"baseline               skipped (estimated {est / 1e9:.1f} GB; the MLP baseline "
            f"takes minutes: --mlp-baseline runs it once)"
        )
    if first is not None:
        print(
            f"  first call on a new model instance (plan built) {first.median:.4f} s, warm "
            f"(plan cached) {t['ours full'].median:.4f} s: first / warm "
            f"{first.median / t['ours full'].median:.2f}x (target <= 1.5)"
        )
        record(bench + "-first-call", first, n, t["ours full"], device=dev)
    if not args.skip_generic:
        _generic(model, x, args, sync)
    print(f"memory (4 GB budget): baseline estimated {est / 1e9:.2f} GB")
    if args.memory:
        measure_base = est <= min(args.baseline_max_gb, 8.0) * 1e9
        for what in ("full", "trace", "diagonal") + (("baseline",) if measure_base else ()):
            print(f"  measured peak extra RSS, {what:9s} {child_memory(case, n, what):6.2f} GB")
        if not measure_base:
            print(f"  baseline not measured again (estimated {est / 1e9:.1f} GB > 8 GB)")


def _first_call(model: nn.Module, x: torch.Tensor, args: argparse.Namespace, sync) -> Timing:
    """Seconds of the first full-kernel call on a fresh instance of ``model``'s class (its
    plan not yet cached), one per round; the process itself is warm (torch's one-off set-up
    of the shapes is paid by an untimed call on ``model`` first, and printed)."""
    t0 = time.perf_counter()
    empirical_ntk(model, x)
    sync()
    print(
        f"  first call on this model (with torch's one-off set-up of these shapes when no "
        f"case ran before in this process) "
        f"{time.perf_counter() - t0:.4f} s"
    )
    now = time.perf_counter if CLOCK["name"] == "wall" else time.process_time
    times = []
    for _ in range(args.rounds):
        fresh, _ = build("usercnn", 1, args.device)
        empirical_ntk(model, x)  # the warm state the timed call should not inherit: another
        sync()  # model's plan is cached, not this one's
        t = now()
        empirical_ntk(fresh, x)
        sync()
        times.append(now() - t)
    return Timing("ours full, first call", tuple(times), CLOCK["name"])


def _generic(model: nn.Module, x: torch.Tensor, args: argparse.Namespace, sync) -> None:
    """Trace and diagonal against full with the generic ``jacobian`` method (same Jacobian,
    only the contraction differs)."""

    def jac(mode: str) -> Callable[[], object]:
        return lambda: empirical_ntk(model, x, method="jacobian", mode=mode, memory_budget=BUDGET)  # type: ignore[arg-type]

    t = timed({m: jac(m) for m in ("full", "trace", "diagonal")}, 1, sync, warmup=0)
    print(
        f"generic method='jacobian': full {text(t['full'])}   trace {text(t['trace'])}   "
        f"diagonal {text(t['diagonal'])}"
    )


# --- neural-tangents, the peer (optional extra ``ntk-peer``) ---------------------------------


def load_peer() -> tuple[ModuleType, ModuleType] | str:
    """``(jax, neural_tangents)`` on one CPU core, or the reason why not (a message).

    XLA's CPU client is limited to one intra-op thread through ``XLA_FLAGS`` (set before jax
    is first imported), as torch is by ``torch.set_num_threads(1)``. neural-tangents 0.6.5
    (its last release) reads two aliases that jax removed in 0.4.26 (the first jax release
    that runs with NumPy 2): ``jax.interpreters.ad.source_info_util`` and
    ``jax.interpreters.ad.config``; they are pointed at ``jax.extend.source_info_util`` and
    ``jax.config``, which are the same objects under their new names.
    """
    if "jax" not in sys.modules:
        os.environ["XLA_FLAGS"] = (
            os.environ.get("XLA_FLAGS", "")
            + " --xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
        ).strip()
    try:
        import jax
        import jax.extend
        from jax.interpreters import ad

        if not hasattr(ad, "__dict__") or "source_info_util" not in ad.__dict__:
            ad.source_info_util = jax.extend.source_info_util  # type: ignore[attr-defined]
        if "config" not in ad.__dict__:
            ad.config = jax.config  # type: ignore[attr-defined]
        import neural_tangents as nt
    except Exception as exc:  # ImportError, or a broken install of the extra
        return (
            f"neural-tangents comparison skipped: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''} (install the extra: "
            f"pip install '.[ntk-peer]', i.e. {PEER_PINS})"
        )
    return jax, nt


def peer_mlp_fn(model: nn.Module, jnp: ModuleType, jax: ModuleType):
    """The MLP of ``build("mlp")`` as a jax function ``f(params, x)`` and its parameters
    (the torch weights, transposed to (in, out))."""
    lins = [m for m in model.modules() if isinstance(m, nn.Linear)]
    params = [
        (jnp.asarray(m.weight.detach().cpu().numpy().T), jnp.asarray(m.bias.detach().cpu().numpy()))
        for m in lins
    ]

    def f(p, x):
        h = x
        for k, (w, b) in enumerate(p):
            h = h @ w + b
            if k < len(p) - 1:
                h = jax.nn.relu(h)
        return h  # (n, 10)

    return f, params


def run_peer(args: argparse.Namespace) -> None:
    """Ours against neural-tangents' structured-derivatives NTK on the MLP 784-512-512-10,
    float32, the same weights and inputs, full and trace (averaged over the outputs, the
    convention of neural-tangents' ``trace_axes``)."""
    print(
        "\n== peer: neural-tangents (structured derivatives, vmap_axes=0, jit), MLP 784-512-512-10"
    )
    if args.device != "cpu":
        print(
            "neural-tangents comparison skipped: the extra installs jax for the CPU only "
            f"(device {args.device})"
        )
        return
    peer = load_peer()
    if isinstance(peer, str):
        print(peer)
        return
    jax, nt = peer
    print(f"jax {jax.__version__} on {jax.devices()[0]}, XLA_FLAGS={os.environ.get('XLA_FLAGS')!r}")
    for n in PEER_SIZES[1 if args.quick else 0]:
        _peer_one(n, jax, nt, args)


def _peer_one(n: int, jax: ModuleType, nt: ModuleType, args: argparse.Namespace) -> None:
    import jax.numpy as jnp

    sd = nt.NtkImplementation.STRUCTURED_DERIVATIVES
    model, x = build("mlp", n)
    f, params = peer_mlp_fn(model, jnp, jax)
    xj = jnp.asarray(x.numpy())
    nt_full = jax.jit(nt.empirical_ntk_fn(f, trace_axes=(), vmap_axes=0, implementation=sd))
    nt_trace = jax.jit(nt.empirical_ntk_fn(f, trace_axes=(-1,), vmap_axes=0, implementation=sd))
    t0 = time.perf_counter()
    k_nt = {
        "full": np.asarray(nt_full(xj, None, params)),
        "trace": np.asarray(nt_trace(xj, None, params)),
    }
    compile_s = time.perf_counter() - t0
    k_us = {
        "full": empirical_ntk(model, x).numpy(),
        "trace": empirical_ntk(model, x, mode="trace", average=True).numpy(),
    }
    diff = {m: float(np.abs(k_nt[m] - k_us[m]).max() / np.abs(k_us[m]).max()) for m in k_nt}
    fns: dict[str, Callable[[], object]] = {
        "ours full": lambda: empirical_ntk(model, x),
        "neural-tangents full": lambda: nt_full(xj, None, params).block_until_ready(),
        "ours trace": lambda: empirical_ntk(model, x, mode="trace", average=True),
        "neural-tangents trace": lambda: nt_trace(xj, None, params).block_until_ready(),
    }
    t = timed(fns, args.rounds, lambda: None)
    print(
        f"N={n}: kernels equal to max rel. diff {diff['full']:.1e} (full), {diff['trace']:.1e} "
        f"(trace); neural-tangents jit compile + first call {compile_s:.2f} s (not timed)"
    )
    for k in fns:
        print(f"  {k:22s} {text(t[k])}")
    for mode in ("full", "trace"):
        base, ours = t[f"neural-tangents {mode}"], t[f"ours {mode}"]
        print(f"  ratio neural-tangents / ours {mode:5s} {ratio(base, ours)}   (target >= 1.5)")
        record("ntk-peer-mlp", ours, n, base, device="cpu", mode=mode, max_rel_diff=diff[mode])
        record("ntk-peer-mlp", base, n, device="cpu", mode=mode)


def run_scaling(args: argparse.Namespace) -> None:
    """Our full and traced kernels of the MLP 784-512-512-10 at N = 100, 200, 400 (one set of
    interleaved rounds): the full kernel's cost should grow like N^2 (16x from 100 to 400),
    the traced one's like its N backward-pass columns plus its N^2 contraction."""
    sizes = PEER_SIZES[0] if not args.quick else (25, 50)
    model, x_all = build("mlp", max(sizes), args.device)
    sync = synchronize(args.device)
    fns: dict[str, Callable[[], object]] = {}
    for n in sizes:
        x = x_all[:n]
        fns[f"ours full, N={n}"] = lambda x=x: empirical_ntk(model, x)
        fns[f"ours trace, N={n}"] = lambda x=x: empirical_ntk(model, x, mode="trace")
    empirical_ntk(model, x_all[:2])  # plan and kernels warm
    t = timed(fns, args.rounds, sync)
    print(f"\n== scaling: MLP 784-512-512-10, N = {', '.join(map(str, sizes))}")
    for mode in ("full", "trace"):
        t0 = t[f"ours {mode}, N={sizes[0]}"]
        for n in sizes:
            tn = t[f"ours {mode}, N={n}"]
            grow = tn.median / t0.median
            exponent = np.log(grow) / np.log(n / sizes[0]) if n > sizes[0] else float("nan")
            print(
                f"  ours {mode:5s} N={n:4d} {text(tn)}   {grow:6.2f}x the N={sizes[0]} time, "
                f"growth exponent {exponent:.2f}"
            )
            record("ntk-scaling", Timing(f"ours {mode}", tn.times, tn.clock), n, device=args.device)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small N (about a minute)")
    ap.add_argument("--memory", action="store_true", help="measure peak RSS in subprocesses")
    ap.add_argument("--cases", default="peer,scaling,mlp,usercnn,cnn,resnet")
    ap.add_argument("--rounds", type=int, default=5, help="interleaved rounds per timing")
    ap.add_argument("--device", default="cpu", help="cpu or cuda[:k]")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="what is timed")
    ap.add_argument("--mlp-baseline", action="store_true", help="also run the MLP's slow baseline")
    ap.add_argument(
        "--skip-generic",
        action="store_true",
        help="skip the method='jacobian' timings (slow at full size)",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--baseline-max-gb", type=float, default=16.0)
    ap.add_argument("--json", metavar="PATH", help="write the records of results() to PATH")
    ap.add_argument("--child", nargs=3, metavar=("CASE", "N", "WHAT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure_memory(args.child[0], int(args.child[1]), args.child[2])
        return
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)  # NumPy's BLAS too: the Gram floor's ssyrk runs in it
    CLOCK["name"] = args.clock
    print(f"clock: {args.clock} time; load average {os.getloadavg()[0]:.1f}")
    if args.quick:
        args.rounds = min(args.rounds, 3)
    for case in args.cases.split(","):
        if case == "peer":
            run_peer(args)
        elif case == "scaling":
            run_scaling(args)
        else:
            run_case(case, SIZES[case][1 if args.quick else 0], args)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(results(), fh, indent=1)
        print(f"\nrecords written to {args.json}")


if __name__ == "__main__":
    main()
