"""Benchmarks of the hadamard theory, each against its naive baseline in the same process.

1. Reduced ODE (9) for K = 8 from the Figure 1 start to t = 1e9: our LSODA solve in
   log-variables with the analytic Jacobian vs a plain RK45 solve in ``a`` (target < 0.5 s).
2. Batched gradient descent on the UFM, K = 16, d = 16, 10 realisations, 1e5 iterations:
   one batched run vs looping the realisations one at a time (target < 30 s, >= 5x).

Usage: ``.venv/bin/python benchmarks/bench_hadamard.py [--quick]`` (quick: 1e4 iterations).
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from scipy.integrate import solve_ivp

from ncdynamics.theories import hadamard as hd


def timed(fn, repeat: int = 1) -> tuple[float, object]:
    best, out = np.inf, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def bench_ode(t_max: float) -> None:
    a0 = hd.COUNTEREXAMPLES["fig1"]
    ts = np.concatenate([[0.0], np.geomspace(1e-3, t_max, 200)])
    ours_t, ours = timed(lambda: hd.solve_reduced(a0, ts, K=8), repeat=3)
    p = hd.ReducedParams(8)

    def naive_rhs(t, a):
        b, D = hd.payoffs(a, p)
        return a * b / D

    naive_t, naive = timed(
        lambda: solve_ivp(
            naive_rhs, (0, t_max), a0, method="RK45", t_eval=ts, rtol=1e-10, atol=1e-12
        )
    )
    agree = np.abs(naive.y.T[-1] / ours.ys[-1] - 1).max() if naive.success else np.nan
    print(
        f"reduced ODE K=8 to t={t_max:.0e}: ours (LSODA, log a, Jacobian) {ours_t:.3f} s "
        f"[{ours.n_evals} evals]; naive (RK45 in a) {naive_t:.3f} s "
        f"[success={naive.success}, {naive.nfev} evals]; ratio {naive_t / ours_t:.1f}x; "
        f"final rel. diff {agree:.1e}"
    )


def bench_gd(n_iter: int) -> None:
    K, d, R, eta = 16, 16, 10, 0.01
    W, H = hd.random_init(K, d, n_realizations=R, rng=np.random.default_rng(0))
    steps = [0, n_iter]
    ours_t, ours = timed(lambda: hd.run_gd(W, H, steps=steps, learning_rate=eta))

    def loop():
        return [hd.run_gd(W[r], H[r], steps=steps, learning_rate=eta) for r in range(R)]

    loop_t, looped = timed(loop)
    same = max(np.abs(ours.Z[-1, r] - looped[r].Z[-1, 0]).max() for r in range(R))
    print(
        f"batched GD K={K} d={d} R={R} {n_iter:.0e} iterations: ours {ours_t:.2f} s; "
        f"loop over realisations {loop_t:.2f} s; ratio {loop_t / ours_t:.1f}x; "
        f"max |ΔZ| {same:.1e}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short GD run (under a minute)")
    args = parser.parse_args()
    bench_ode(1e9)
    bench_gd(10_000 if args.quick else 100_000)


if __name__ == "__main__":
    main()
