"""Benchmarks of the LE-SDE part: Euler--Maruyama and batched training trials.

1. Euler--Maruyama on K = 10 classes, n = 1000 samples, p = 10 dims, 10^4 steps (l-model):
   ours (exact class-mean scheme), ours (brute-force particles) and ``torchsde`` (Euler,
   the same SDE and step) side by side. ``torchsde`` is optional (``pip install
   .[bench]``); without it that comparison is skipped with a message.
2. Training trials: R = 100 LeNets on 32x32 inputs, batch size 1, one SGD step: the two
   batched trainers of :mod:`ncdynamics.theories.lesde.trials` ("fused", the fast path of
   :mod:`~ncdynamics.theories.lesde.fast_lenet_step`, and "vmap", the torch.func reference
   of :mod:`~ncdynamics.theories.lesde.reference_lenet_step`) against a Python loop over
   the nets with torch.optim.SGD,
   timed in alternating chunks, first with one torch thread for every variant (what one
   core does) and then with two (the machine's cores; the loop's ops are too small to
   use a second thread, the batched step's are not). ``--threads N`` times only N.

Usage: ``.venv/bin/python benchmarks/bench_lesde.py [--quick] [--threads N]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from ncdynamics.theories.lesde.model import LEParams, h_isotropic
from ncdynamics.theories.lesde.simulate import simulate_sde


def _time(fn, repeat=1):
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def bench_sde(n_steps: int) -> None:
    k, n, p, h, sigma = 10, 1000, 10, 1e-3, 1.0
    alpha, beta = 0.5, -0.1
    params = LEParams.make(alpha, beta, h_isotropic(k, p), sigma=sigma)
    rng = np.random.default_rng(0)
    x0 = rng.standard_normal((1, k, n, p))
    print(f"[SDE] K={k} n={n} p={p}, {n_steps} Euler-Maruyama steps, h={h}")
    t_fast = _time(
        lambda: simulate_sde(params, x0, h=h, n_steps=n_steps, rng=rng, record_every=n_steps),
        repeat=3,
    )
    print(f"  ours, class-mean scheme   : {t_fast:8.3f} s")
    t_part = _time(
        lambda: simulate_sde(
            params, x0, h=h, n_steps=n_steps, rng=rng, record_every=n_steps, scheme="particles"
        )
    )
    print(f"  ours, particles (numpy)   : {t_part:8.3f} s   ratio {t_part / t_fast:7.1f}x")
    try:
        import torchsde
    except ImportError:
        print("  torchsde                  : skipped (not installed; pip install '.[bench]')")
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
    ts = torch.tensor([0.0, n_steps * h], dtype=torch.float64)
    torch.set_num_threads(1)
    t_ref = _time(lambda: torchsde.sdeint(sde, y0, ts, method="euler", dt=h))
    print(
        f"  torchsde (Euler, fp64)    : {t_ref:8.3f} s   ratio {t_ref / t_fast:7.1f}x"
        " (torchsde / ours)"
    )


def bench_trials(n_iter: int, r: int, rounds: int, threads: int) -> None:
    """Per-step time of the batched trainers and of a loop over ``r`` separate LeNets.

    The timings alternate in short chunks (``rounds`` rounds of ``n_iter`` steps each), so
    that load from other processes hits all variants alike; we report the best chunk and
    the per-round ratios, in wall-clock time and in process CPU time (which leaves out the
    time the process waits for a core on a shared machine).
    """
    from ncdynamics.models.lenet import LeNet
    from ncdynamics.theories.lesde.trials import BatchedTrainer

    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(0)
    x = torch.rand(200, 1, 32, 32, generator=gen)
    y = torch.randint(0, 3, (200,), generator=gen)
    print(
        f"[trials] R={r} LeNets, 32x32, batch size 1, float32, {threads} torch thread(s) for "
        f"every variant; {rounds} rounds of {n_iter} SGD steps per variant"
    )
    idx = torch.randint(0, 200, (n_iter, r), generator=gen)
    trainers = {
        m: BatchedTrainer(r, in_channels=1, n_classes=3, lr=0.005, generator=gen, method=m)
        for m in ("fused", "vmap")
    }
    nets = [LeNet(1, 3, generator=gen) for _ in range(r)]
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

    for trainer in trainers.values():
        trainer.step(x[idx[0]], y[idx[0]])  # warm-up
    variants = {**{m: lambda t=t: batched(t) for m, t in trainers.items()}, "loop": loop}
    wall = {m: [] for m in variants}
    cpu = {m: [] for m in variants}
    for _ in range(rounds):
        for m, fn in variants.items():
            c0, w0 = time.process_time(), time.perf_counter()
            fn()
            wall[m].append((time.perf_counter() - w0) / n_iter)
            cpu[m].append((time.process_time() - c0) / n_iter)
    for clock, times in (("wall", wall), ("cpu", cpu)):
        t_l = np.array(times["loop"])
        print(f"  {clock} time (best of {rounds} chunks; per-round ratio range):")
        for m in trainers:
            t_b = np.array(times[m])
            ratios = t_l / t_b
            print(
                f"    ours, {m:5s} batch      : {1e3 * t_b.min():8.2f} ms/step   loop / ours "
                f"{t_l.min() / t_b.min():5.1f}x (rounds {ratios.min():.1f}-{ratios.max():.1f}x)"
            )
        print(f"    loop over nets          : {1e3 * t_l.min():8.2f} ms/step")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="fewer steps (under a minute)")
    ap.add_argument("--skip-trials", action="store_true")
    ap.add_argument("--skip-sde", action="store_true")
    ap.add_argument("--threads", type=int, help="time the trials with this many threads only")
    args = ap.parse_args()
    if not args.skip_sde:
        bench_sde(200 if args.quick else 10_000)
    if not args.skip_trials:
        n_iter, rounds = (3, 3) if args.quick else (10, 6)
        for threads in [args.threads] if args.threads else [1, 2]:
            bench_trials(n_iter, 100, rounds=rounds, threads=threads)


if __name__ == "__main__":
    main()
