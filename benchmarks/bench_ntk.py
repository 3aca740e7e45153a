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
import resource
import subprocess
import sys
import time

import torch
from torch.func import functional_call, jacrev, vmap

from ncdynamics.models import MLP, ResNet20, SmallCNN
from ncdynamics.probes import empirical_ntk

SIZES = {"mlp": (500, 50), "cnn": (200, 50), "resnet": (120, 20)}
BUDGET = 4 * 2**30  # the 4 GB budget of the issue
GEMM_CPU = [0.0]  # CPU seconds of the baseline's last einsum


def build(case: str, n: int) -> tuple[torch.nn.Module, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    if case == "mlp":
        model = MLP(784, 10, depth=2, width=512, generator=g)
        x = torch.randn(n, 784, generator=g)
    elif case == "cnn":
        model = SmallCNN(1, 10, generator=g)
        x = torch.rand(n, 1, 28, 28, generator=g)
    else:
        model = ResNet20(1, 10, width=16, generator=g)
        with torch.no_grad():  # non-trivial running statistics, as after training
            for m in model.modules():
                if isinstance(m, torch.nn.BatchNorm2d):
                    m.running_var.uniform_(0.5, 2.0, generator=g)
        x = torch.rand(n, 1, 28, 28, generator=g)
    return model.eval(), x


def baseline(
    model: torch.nn.Module, x: torch.Tensor, chunk: int = 25
) -> tuple[torch.Tensor, float, float]:
    """The common recipe; returns (kernel (N, N, O, O), jacobian seconds, einsum seconds)."""
    params = {k: v.detach() for k, v in model.named_parameters()}
    buffers = dict(model.named_buffers())

    def f(p, xi):
        return functional_call(model, {**p, **buffers}, (xi[None],))[0]  # (O,)

    t0 = time.perf_counter()
    jmat = None  # (N, O, P), filled chunk by chunk (a concatenation would double the peak)
    for s in range(0, len(x), chunk):
        jac = vmap(jacrev(f), in_dims=(None, 0))(params, x[s : s + chunk])
        piece = torch.cat([j.reshape(j.shape[0], j.shape[1], -1) for j in jac.values()], dim=2)
        del jac
        if jmat is None:
            jmat = torch.empty((len(x), piece.shape[1], piece.shape[2]), dtype=piece.dtype)
        jmat[s : s + chunk] = piece
        del piece
    t1, c1 = time.perf_counter(), time.process_time()
    k = torch.einsum("iap,jbp->ijab", jmat, jmat)
    t2, c2 = time.perf_counter(), time.process_time()
    GEMM_CPU[0] = c2 - c1
    return k, t1 - t0, t2 - t1


def reverse_floor(model: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    """One forward pass and one reverse pass per output, to the input only (the floor)."""
    xg = x.clone().requires_grad_(True)
    f = model(xg)  # (N, O)
    for k in range(f.shape[1]):
        cot = torch.zeros_like(f)
        cot[:, k] = 1.0
        (gx,) = torch.autograd.grad(f, xg, grad_outputs=cot, retain_graph=k < f.shape[1] - 1)
    return gx


def n_params(model: torch.nn.Module) -> int:
    return sum(p.numel() for p in model.parameters())


def baseline_bytes(model: torch.nn.Module, n: int, n_out: int = 10) -> int:
    return 4 * (n * n_out * n_params(model) + n * n * n_out * n_out)


class Timing:
    """Best wall-clock and process-CPU seconds of repeated runs (CPU time is the steadier
    measure on a shared machine: it does not count time spent waiting for a core)."""

    def __init__(self, fn, repeat: int) -> None:
        self.wall, self.cpu, self.out = float("inf"), float("inf"), None
        for _ in range(repeat):
            t, c = time.perf_counter(), time.process_time()
            self.out = fn()
            self.wall = min(self.wall, time.perf_counter() - t)
            self.cpu = min(self.cpu, time.process_time() - c)

    def __str__(self) -> str:
        return f"{self.wall:8.3f} s wall {self.cpu:8.3f} s cpu"


def ratio(a: Timing, b: Timing) -> str:
    return f"{a.wall / b.wall:6.1f}x wall {a.cpu / b.cpu:6.1f}x cpu"


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
    model, x = build(case, n)
    print(
        f"\n== ({'abc'[list(SIZES).index(case)]}) {case}: N={n}, P={n_params(model):,}, "
        f"{torch.get_num_threads()} threads"
    )
    empirical_ntk(model, x[:2])  # warm-up of ours (and of the shared conv/GEMM kernels)
    baseline(model, x[:2])
    full = Timing(lambda: empirical_ntk(model, x, memory_budget=BUDGET), args.repeat)
    trace = Timing(lambda: empirical_ntk(model, x, mode="trace", memory_budget=BUDGET), args.repeat)
    diag = Timing(
        lambda: empirical_ntk(model, x, mode="diagonal", memory_budget=BUDGET), args.repeat
    )
    then = Timing(
        lambda: torch.einsum("ijaa->ij", empirical_ntk(model, x, memory_budget=BUDGET)),
        args.repeat,
    )
    floor = Timing(lambda: reverse_floor(model, x), args.repeat)
    print(f"ours full              {full}")
    print(f"ours trace             {trace}   full-then-trace {then}")
    print(f"ours diagonal          {diag}")
    print(f"reverse-pass floor     {floor}   (forward + O reverse passes to the input)")
    print(f"  ratio full-then-trace / trace     {ratio(then, trace)}")
    print(f"  ratio full-then-trace / diagonal  {ratio(then, diag)}")
    print(f"  ratio full-then-trace / floor     {ratio(then, floor)}   (ceiling of the two above)")
    if not args.skip_generic:
        _generic(model, x)
    est = baseline_bytes(model, n)
    if est > args.baseline_max_gb * 1e9:
        print(
            f"baseline               skipped: estimated {est / 1e9:.1f} GB > "
            f"--baseline-max-gb {args.baseline_max_gb}"
        )
    else:
        parts: dict[str, float] = {}

        def run_base():
            k, parts["jac"], parts["gemm"] = baseline(model, x)
            return k

        base = Timing(run_base, 1)
        err = float((full.out - base.out).abs().max() / base.out.abs().max())
        base.out = None
        print(
            f"baseline full          {base}   (jacobian {parts['jac']:.3f} s, einsum "
            f"{parts['gemm']:.3f} s wall)"
        )
        print(
            f"  GEMM floor of the Jacobian-contraction method (the einsum alone): "
            f"{parts['gemm']:.3f} s wall {GEMM_CPU[0]:.3f} s cpu"
        )
        print(
            f"  ratio baseline / ours full        {ratio(base, full)}   max rel. "
            f"difference {err:.1e}"
        )
        print(f"  ratio baseline / ours trace       {ratio(base, trace)}")
    print(f"memory (4 GB budget): baseline estimated {est / 1e9:.2f} GB")
    if args.memory:
        measure_base = est <= min(args.baseline_max_gb, 8.0) * 1e9
        for what in ("full", "trace", "diagonal") + (("baseline",) if measure_base else ()):
            print(f"  measured peak extra RSS, {what:9s} {child_memory(case, n, what):6.2f} GB")
        if not measure_base:
            print(f"  baseline not measured again (estimated {est / 1e9:.1f} GB > 8 GB)")


def _generic(model: torch.nn.Module, x: torch.Tensor) -> None:
    """Trace and diagonal against full with the generic ``jacobian`` method (same Jacobian,
    only the contraction differs: the comparison of the planning notes)."""
    jfull = Timing(lambda: empirical_ntk(model, x, method="jacobian", memory_budget=BUDGET), 1)
    jtrace = Timing(
        lambda: empirical_ntk(model, x, method="jacobian", mode="trace", memory_budget=BUDGET), 1
    )
    jdiag = Timing(
        lambda: empirical_ntk(model, x, method="jacobian", mode="diagonal", memory_budget=BUDGET), 1
    )
    print(f"generic method='jacobian': full {jfull}   trace {jtrace}   diagonal {jdiag}")
    print(
        f"  ratio full / trace (jacobian)     {ratio(jfull, jtrace)}   full / diagonal "
        f"{ratio(jfull, jdiag)}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small N (under a minute)")
    ap.add_argument("--memory", action="store_true", help="measure peak RSS in subprocesses")
    ap.add_argument("--cases", default="mlp,cnn,resnet")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument(
        "--skip-generic",
        action="store_true",
        help="skip the method='jacobian' timings (slow at full size)",
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--baseline-max-gb", type=float, default=16.0)
    ap.add_argument("--child", nargs=3, metavar=("CASE", "N", "WHAT"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        measure_memory(args.child[0], int(args.child[1]), args.child[2])
        return
    torch.set_num_threads(args.threads)
    for case in args.cases.split(","):
        run_case(case, SIZES[case][1 if args.quick else 0], args)


if __name__ == "__main__":
    main()
