"""Benchmarks of the LE-SDE part: Euler--Maruyama and batched training trials.

1. Euler--Maruyama on K = 10 classes, n = 1000 samples, p = 10 dims, 10^4 steps (l-model):
   ours (exact class-mean scheme), ours (brute-force particles in torch, float32 and
   float64), the NumPy particle reference, a plain torch float32 particle loop, and
   ``torchsde`` (Euler, the same SDE and step) side by side; the particle variants run
   2000 steps per round, scaled to 10^4. ``torchsde`` is optional (``pip install
   .[bench]``); without it that comparison is skipped with a message.
2. Training trials: R = 100 LeNets on 32x32 inputs, batch size 1, one SGD step: the two
   batched trainers of :mod:`ncdynamics.theories.lesde.trials` ("fused", the fast path of
   :mod:`~ncdynamics.theories.lesde.fast_lenet_step`, and "vmap", the torch.func reference
   of :mod:`~ncdynamics.theories.lesde.reference_lenet_step`) against a Python loop over
   the nets with torch.optim.SGD,
   timed in interleaved rounds, first with one torch thread for every variant (what one
   core does) and then with two (the machine's cores; the loop's ops are too small to
   use a second thread, the batched step's are not). ``--threads N`` times only N.
   A fourth variant, "GEMMs only", replays just the batched matrix products of the fused
   step (the same shapes, groups and number of calls, on tensors of the same sizes, the
   delayed linear-layer update included) and nothing else: loop / "GEMMs only" is the
   most the fused step can gain over the loop while its products run at the speed this
   machine's batched GEMM gives them. ``--clock cpu`` times process CPU time instead of
   wall time (leaves out the time spent waiting for a core on a shared machine).

``--device cuda`` runs the torch variants (particles, the torch loop, the trainers and the
loop over nets) on that device; the NumPy variants stay on the CPU.

Usage: ``.venv/bin/python benchmarks/bench_lesde.py [--quick] [--threads N] [--device D]``.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from _timing import emit, emit_all, interleaved, print_timings, ratio

from ncdynamics.theories.lesde.model import LEParams, h_isotropic
from ncdynamics.theories.lesde.simulate import simulate_sde

CPU = torch.device("cpu")


def _synced(fn, device: torch.device):
    """``fn`` followed by a CUDA synchronisation when timing on a GPU."""
    if device.type != "cuda":
        return fn

    def run():
        out = fn()
        torch.cuda.synchronize(device)
        return out

    return run


def _hand_loop(
    x0: np.ndarray, alpha: float, beta: float, h: float, n_steps: int, device: torch.device
):
    """The plain torch float32 particle loop a user would write (the target of issue 21)."""
    k = x0.shape[1]
    e = torch.tensor((alpha - beta) * np.eye(k) + beta, dtype=torch.float32, device=device) / k
    gen = torch.Generator(device=device).manual_seed(0)
    x = torch.tensor(x0[0], dtype=torch.float32, device=device)  # (K, n, p)
    for _ in range(n_steps):
        x = (
            x
            + h * (e @ x.mean(dim=1)).unsqueeze(1)
            + np.sqrt(h) * torch.randn(x.shape, generator=gen, device=device)
        )
    return x


def bench_sde(n_steps: int, rounds: int, particle_steps: int, device: torch.device = CPU) -> None:
    k, n, p, h, sigma = 10, 1000, 10, 1e-3, 1.0
    alpha, beta = 0.5, -0.1
    params = LEParams.make(alpha, beta, h_isotropic(k, p), sigma=sigma)
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((1, k, n, p))
    torch.set_num_threads(1)

    def ours(scheme: str, steps: int, dtype: str = "float64"):
        on = {"device": str(device)} if scheme == "particles" and device.type != "cpu" else {}
        return _synced(
            lambda: simulate_sde(
                params,
                x0,
                h=h,
                n_steps=steps,
                rng=rng,
                record_every=steps,
                scheme=scheme,
                dtype=dtype,
                **on,
            ),
            device,
        )

    variants = {
        "class-means": ours("class-means", n_steps),
        "particles float32": ours("particles", particle_steps, "float32"),
        "particles float64": ours("particles", particle_steps),
        "particles NumPy reference": ours("particles-reference", particle_steps),
        "torch float32 loop": _synced(
            lambda: _hand_loop(x0, alpha, beta, h, particle_steps, device), device
        ),
    }
    f = n_steps / particle_steps
    scale = {name: (1.0 if name == "class-means" else f) for name in variants}
    timings = interleaved(variants, rounds=rounds, warmup=0, scale=scale)
    size = f"K={k}, n={n}, p={p}, {n_steps} steps"
    print_timings(
        f"[SDE] {size}, one thread, torch variants on {device} (particle variants timed on "
        f"{particle_steps} steps, scaled)",
        timings,
        baseline="torch float32 loop",
    )
    for name in ("particles NumPy reference", "torch float32 loop"):
        r, lo, hi = ratio(timings[name], timings["class-means"])
        print(f"  {name} / class-means {r:.1f}x (rounds {lo:.1f}-{hi:.1f}x)")
    table = "lesde_sde" if device.type == "cpu" else f"lesde_sde_{device.type}"
    emit_all(table, timings, baseline="torch float32 loop", size=size, device=str(device))
    emit(
        table,
        timings["class-means"],
        size=size,
        baseline=timings["particles NumPy reference"],
        device=str(device),
    )
    if device.type != "cpu":
        return
    try:
        import torchsde
    except ImportError:
        print("  torchsde: skipped (not installed; pip install '.[bench]')")
        return

    class LESDE(torch.nn.Module):
        noise_type, sde_type = "diagonal", "ito"

        def __init__(self):
            super().__init__()
            self.e = torch.tensor((alpha - beta) * np.eye(k) + beta, dtype=torch.float64) / k

        def f(self, t, y):  # y: (1, K*n*p)
            x = y.view(k, n, p)
            return (self.e @ x.mean(dim=1)).unsqueeze(1).expand(k, n, p).reshape(1, -1)

        def g(self, t, y):
            return torch.full_like(y, sigma)

    sde = LESDE()
    y0 = torch.tensor(x0.reshape(1, -1))
    ts = torch.tensor([0.0, particle_steps * h], dtype=torch.float64)
    ref = interleaved(
        {
            "class-means": ours("class-means", n_steps),
            "torchsde Euler float64": lambda: torchsde.sdeint(sde, y0, ts, method="euler", dt=h),
        },
        rounds=1,
        warmup=0,
        scale={"class-means": 1.0, "torchsde Euler float64": f},
    )
    print_timings(
        f"[SDE] against torchsde ({particle_steps} steps, scaled)",
        ref,
        baseline="torchsde Euler float64",
    )
    emit_all("lesde_torchsde", ref, baseline="torchsde Euler float64", size=size)


def _gemm_replay(r: int, device: torch.device, delay: int = 16, group: int = 50):
    """The batched matrix products of one step of ``LeNetSGD`` on R LeNets (1 input
    channel, 32x32, 3 classes), alone: a callable running them for ``delay`` steps plus
    one flush of the delayed linear updates (call it and divide by ``delay``).

    Shapes, per group of nets (groups as ``LeNetSGD`` splits R): conv1 (24, 36) @ (36, 224)
    on the shifted parity planes, conv2 (16, 150) @ (150, 140) on the wide im2col, the three
    linear layers' forward and input-gradient products with their delayed-update
    corrections (``delay / 2`` pending updates, the mean), conv2's input gradient as five
    (30, 16) @ (16, 140) products, the two conv weight gradients, and every ``delay``
    steps the (120, 16) @ (16, 400)-style flush of each linear layer. Random values: the
    time of a GEMM does not depend on them.
    """
    gen = torch.Generator().manual_seed(1)
    n_groups = -(-r // group)
    sizes = [round((i + 1) * r / n_groups) - round(i * r / n_groups) for i in range(n_groups)]
    dims = ((400, 120), (120, 84), (84, 3))  # (in, out) of the linear layers
    t = delay // 2

    def rnd(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=gen).to(device)

    groups = [
        {
            "conv": [(rnd(g, 24, 1), rnd(g, 24, 36), rnd(g, 36, 224), rnd(g, 24, 224)),
                     (rnd(g, 16, 1), rnd(g, 16, 150), rnd(g, 150, 140), rnd(g, 16, 140))],
            "lin": [(rnd(g, o, i), rnd(g, 1, i), rnd(g, 1, o), rnd(g, delay, i), rnd(g, delay, o))
                    for i, o in dims],
            "wt": rnd(g, 5, 30, 16), "part": rnd(g, 30, 140), "gw1": rnd(g, 24, 36),
        }
        for g in sizes
    ]  # fmt: skip

    def step(b: dict) -> None:
        for bias, w, x, out in b["conv"]:  # forward convolutions
            torch.baddbmm(bias, w, x, out=out)
        for w, a, d, abuf, dbuf in b["lin"]:  # forward, with the pending-update correction
            torch.baddbmm(d, a, w.transpose(1, 2)).sub_(
                torch.bmm(torch.bmm(a, abuf[:, :t].transpose(1, 2)), dbuf[:, :t])
            )
        for w, _, d, abuf, dbuf in reversed(b["lin"]):  # input gradients
            corr = torch.bmm(torch.bmm(d, dbuf[:, :t].transpose(1, 2)), abuf[:, :t])
            torch.bmm(d, w).sub_(corr)
        (_, _, x1, c1), (_, w2, x2, c2) = b["conv"]
        for u in range(5):  # conv2's input gradient, one kernel row at a time
            torch.bmm(b["wt"][:, u], c2, out=b["part"])
        w2.baddbmm_(c2, x2.transpose(1, 2), alpha=-1e-12)  # conv2's weight update
        torch.bmm(c1, x1.transpose(1, 2), out=b["gw1"])  # conv1's weight gradient

    def run() -> None:
        for _ in range(delay):
            for b in groups:
                step(b)
        for b in groups:  # the flush of the delayed updates (over all nets in the step)
            for w, _, _, abuf, dbuf in b["lin"]:
                w.baddbmm_(dbuf.transpose(1, 2), abuf, alpha=-1e-12)

    return run


def bench_trials(
    n_iter: int,
    r: int,
    rounds: int,
    threads: int,
    device: torch.device = CPU,
    clock: str = "wall",
) -> None:
    """Per-step time of the batched trainers, of a loop over ``r`` separate LeNets and of
    the fused step's GEMMs alone (:func:`_gemm_replay`), in interleaved rounds of
    ``n_iter`` steps per variant (16 for the replay), in ``clock`` time."""
    from ncdynamics.models.lenet import LeNet
    from ncdynamics.theories.lesde.trials import BatchedTrainer

    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(200, 1, 32, 32, generator=gen).to(device)
    y = torch.randint(0, 3, (200,), generator=gen).to(device)
    idx = torch.randint(0, 200, (n_iter, r), generator=gen).to(device)
    trainers = {
        m: BatchedTrainer(
            r, in_channels=1, n_classes=3, lr=0.005, generator=gen, method=m, device=device
        )
        for m in ("fused", "vmap")
    }
    nets = [LeNet(1, 3, generator=gen).to(device) for _ in range(r)]
    opts = [torch.optim.SGD(net.parameters(), lr=0.005) for net in nets]

    def batched(trainer):
        for i in range(n_iter):
            trainer.step(x[idx[i]], y[idx[i]])

    def loop():
        for i in range(n_iter):
            for j, (net, opt) in enumerate(zip(nets, opts, strict=True)):
                opt.zero_grad()
                out = net(x[idx[i, j]][None])
                torch.nn.functional.cross_entropy(out, y[idx[i, j]][None]).backward()
                opt.step()

    variants = {
        **{m: _synced(lambda t=t: batched(t), device) for m, t in trainers.items()},
        "loop": _synced(loop, device),
        "GEMMs only": _synced(_gemm_replay(r, device), device),
    }
    scale = {name: 1.0 / (16 if name == "GEMMs only" else n_iter) for name in variants}
    timings = interleaved(variants, rounds=rounds, warmup=1, scale=scale, clock=clock)
    size = f"R={r} LeNets, 32x32, batch 1"
    print_timings(
        f"[trials] {size}, one SGD step, {threads} torch thread(s), {device}, {n_iter} steps "
        "per round (GEMMs only: 16)",
        timings,
        baseline="loop",
    )
    r_fused = ratio(timings["loop"], timings["fused"])[0]
    r_floor = ratio(timings["loop"], timings["GEMMs only"])[0]
    print(
        f"  fused / GEMMs only {timings['fused'].median / timings['GEMMs only'].median:.2f}x: "
        f"the products alone cap loop / fused at {r_floor:.2f}x (now {r_fused:.2f}x)"
    )
    table = "lesde_lenet" if device.type == "cpu" else f"lesde_lenet_{device.type}"
    emit_all(table, timings, baseline="loop", size=size, device=str(device))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (under a minute)")
    ap.add_argument("--skip-trials", action="store_true")
    ap.add_argument("--skip-sde", action="store_true")
    ap.add_argument("--threads", type=int, help="time the trials with this many threads only")
    ap.add_argument("--device", default="cpu", help="torch device of the torch variants")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall", help="trials' clock")
    args = ap.parse_args()
    device = torch.device(args.device)
    if not args.skip_sde:
        if args.quick:
            bench_sde(200, 3, 200, device)
        else:
            bench_sde(10_000, 3, 2_000, device)
    if not args.skip_trials:
        n_iter, rounds = (3, 3) if args.quick else (10, 7)
        for threads in [args.threads] if args.threads else [1, 2]:
            bench_trials(n_iter, 100, rounds, threads, device, clock=args.clock)


if __name__ == "__main__":
    main()
