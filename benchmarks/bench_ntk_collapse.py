"""Benchmarks of the ntk_collapse theory and measurement (docs/theories/ntk_collapse.md).

1. Gradient flow to t_end: the decomposed system (25) with the vectorised Jacobian (ours)
   against the full system (19) with the solver's own finite-difference Jacobian (naive).
2. Invariant metrics (the paper's eqs. (26), (28)): the basis-free formula (ours) against
   E (26) built from an explicit orthogonal basis Q (naive).
3. The kernel on a class-ordered probe subset against training time for one run of the
   ``cpu`` preset of ``ntk_collapse.fig2`` at its default probe schedule (the split).

1 and 2 are timed in interleaved rounds (median and range printed); 3 is one run.

Run: ``.venv/bin/python benchmarks/bench_ntk_collapse.py [--quick]``.
"""

from __future__ import annotations

import argparse
import dataclasses

import numpy as np
from _timing import Timing, emit, emit_all, interleaved, print_timings

from ncdynamics.probes import invariant_metrics
from ncdynamics.theories.ntk_collapse.initial import init_zero_invariant
from ncdynamics.theories.ntk_collapse.model import BlockParams, State
from ncdynamics.theories.ntk_collapse.simulate import simulate_flow
from ncdynamics.theories.ntk_collapse.training_recipe import TrainConfig, train_one


def bench_flow(quick: bool) -> None:
    p = BlockParams(4, 5, 12, 3.0, 1.0, 0.2)
    s0 = init_zero_invariant(p, rng=np.random.default_rng(0))
    ts = np.array([0.0, 50.0 if quick else 2e3])
    out = {}

    def run(system: str):
        def fn() -> None:
            out[system] = simulate_flow(s0, ts, p, system=system)

        return fn

    timings = interleaved(
        {"decomposed": run("decomposed"), "full": run("full")}, rounds=2 if quick else 3, warmup=0
    )
    diff = np.abs(
        State.unpack(out["decomposed"].ys[-1], p).H - State.unpack(out["full"].ys[-1], p).H
    ).max()
    size = f"C=4, m=5, t={ts[-1]:g}"
    print_timings(f"flow {size} (max |dH| {diff:.1e})", timings, baseline="full")
    emit_all("ntk_collapse_flow", timings, baseline="full", size=size)


def _basis(C, m):
    N = C * m
    Q1 = np.kron(np.eye(C), np.ones((m, 1))) / np.sqrt(m)
    Q, _ = np.linalg.qr(np.hstack([Q1, np.random.default_rng(0).standard_normal((N, N - C))]))
    return Q


def _slow_norm(H, W, kap, C, m, Q):
    kd, kc, kn = kap
    mu_s = kd - kc
    mu_c = mu_s + m * (kc - kn)
    alpha = kn * m / (mu_c + C * kn * m)
    H1, H2 = H @ Q[:, :C] / np.sqrt(m), H @ Q[:, C:] / np.sqrt(m)
    one = np.ones((C, 1))
    E = W.T @ W / m - H1 @ (np.eye(C) - alpha * one @ one.T) @ H1.T / mu_c - H2 @ H2.T / mu_s
    return m * np.linalg.norm(E)


def bench_invariant(quick: bool) -> None:
    C, m, n = 10, 12, 64
    rng = np.random.default_rng(0)
    H = rng.standard_normal((n, C * m))
    W = rng.standard_normal((C, n))
    y = np.repeat(np.arange(C), m)
    kap = (3.0, 1.0, 0.2)
    Q = _basis(C, m)  # the basis is built once, outside the timing
    reps = 20  # calls per round (each call is well under a millisecond)

    def ours():
        for _ in range(reps):
            invariant_metrics(H.T, y, W, kap)

    def naive():
        for _ in range(reps):
            _slow_norm(H, W, kap, C, m, Q)

    timings = interleaved(
        {"ours": ours, "explicit basis": naive}, rounds=3 if quick else 7, scale=1.0 / reps
    )
    met, slow = invariant_metrics(H.T, y, W, kap), _slow_norm(H, W, kap, C, m, Q)
    size = f"n={n}, N={C * m}"
    print_timings(
        f"invariant metrics {size} (rel diff {abs(met.invariant_norm - slow) / slow:.1e})",
        timings,
        baseline="explicit basis",
    )
    emit_all("ntk_collapse_invariant", timings, baseline="explicit basis", size=size)


def bench_kernel_split(quick: bool) -> None:
    cfg = TrainConfig()
    if quick:
        cfg = dataclasses.replace(cfg, epochs=10)
    res = train_one(dataclasses.asdict(cfg), cfg.inits[0], cfg.lrs[1], 0)
    total, kern, probes = res["seconds_total"], res["seconds_kernel"], res["seconds_probes"]
    train_s = total - probes
    print(
        f"cpu fig2 run ({cfg.epochs} epochs, kernel every {cfg.kernel_every}): training "
        f"{train_s:.1f} s, kernel probe {kern:.1f} s, other probes {probes - kern:.1f} s; "
        f"kernel / training = {kern / train_s:.0%} (one run: a split, not a comparison)"
    )
    size = f"cpu fig2 run, {cfg.epochs} epochs"
    training = Timing("training (probes excluded)", (train_s,))
    emit("ntk_collapse_kernel_split", Timing("kernel probe", (kern,)), size=size, baseline=training)
    emit("ntk_collapse_kernel_split", training, size=size)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (under a minute)")
    args = ap.parse_args()
    bench_flow(args.quick)
    bench_invariant(args.quick)
    bench_kernel_split(args.quick)


if __name__ == "__main__":
    main()
