"""Benchmarks of the hadamard theory, each against its naive baseline in the same process.

1. Reduced ODE (9) for K = 8 from the Figure 1 start to t = 1e9: our LSODA solve in
   log-variables with the analytic Jacobian vs a plain RK45 solve in ``a`` (target < 0.5 s).
2. Batched gradient descent on the UFM (the fast path ``hadamard.fast_batched_gd.run_gd``),
   K = 16, d = 16, 10 realisations, 1e5 iterations: one batched run vs looping the
   realisations one at a time (target < 30 s, >= 5x), and vs the plain reference
   ``hadamard.ufm.run_gd_reference``.

Usage: ``.venv/bin/python benchmarks/bench_hadamard.py [--quick]`` (quick: 1e4 iterations).
"""

from __future__ import annotations

import argparse
import time
import timeit

import numpy as np
from scipy.integrate import solve_ivp

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.hadamard.fast_batched_gd import run_gd
from ncdynamics.theories.hadamard.ufm import run_gd_reference


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
    ours_t, ours = timed(lambda: hd.solve_reduced(a0, ts, n_classes=8), repeat=3)
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
    ours_t, ours = timed(lambda: run_gd(W, H, steps=steps, learning_rate=eta), repeat=2)

    def loop():
        return [run_gd(W[r], H[r], steps=steps, learning_rate=eta) for r in range(R)]

    loop_t, looped = timed(loop, repeat=2)
    z_ours = hd.state_matrices(ours.ys[:, -1], K)[0]  # (R, K, K)
    same = max(
        np.abs(z_ours[r] - hd.state_matrices(looped[r].ys[-1], K)[0]).max() for r in range(R)
    )
    print(
        f"batched GD K={K} d={d} R={R} {n_iter:.0e} iterations: ours {ours_t:.2f} s "
        f"({1e6 * ours_t / n_iter:.1f} us/iteration); loop over realisations {loop_t:.2f} s; "
        f"ratio {loop_t / ours_t:.1f}x; max |ΔZ| {same:.1e}"
    )
    bench_gd_straightforward(W, H, eta, ours_t / n_iter)
    bench_gd_ceiling(K, d, R)


def bench_gd_straightforward(W, H, eta: float, ours_per_iteration: float, n_iter: int = 2000):
    """The plain reference ``run_gd_reference`` (each realisation in turn, each step
    ``W, H = W + η dW, H + η dH`` from the descent direction of Eq. (2) of [1])."""

    def loop():
        return [
            run_gd_reference(W[r], H[r], steps=[0, n_iter], learning_rate=eta)
            for r in range(W.shape[0])
        ]

    t, _ = timed(loop)
    per_iteration = t / n_iter
    print(
        f"  reference run_gd_reference (plain loop, one realisation at a time, {n_iter} steps): "
        f"{1e6 * per_iteration:.1f} us/iteration for {W.shape[0]} realisations; batched "
        f"run_gd is {per_iteration / ours_per_iteration:.1f}x faster"
    )


def bench_gd_ceiling(K: int, d: int, R: int, number: int = 20_000) -> None:
    """Time each array operation of one CE iteration of the fast ``run_gd`` on R stacked
    realisations and on one (the looped case). Batching removes per-call overhead only, so
    ``R * t(one) / t(R)`` of the whole sequence bounds the batched/looped ratio."""
    rng = np.random.default_rng(1)

    def ops(r: int) -> dict[str, object]:
        # the operations of run_gd's loop (transposed-logit layout) on fixed, moderate
        # inputs with separate outputs, so repeats never overflow
        W, H = rng.normal(size=(r, K, d)), rng.normal(size=(r, d, K))
        ZT, out_z = rng.normal(size=(r, K, K)), np.empty((r, K, K))
        out_w, out_h = np.empty((r, K, d)), np.empty((r, d, K))
        s, out_s = rng.uniform(1, 2, size=(r, K, 1)), np.empty((r, K, 1))
        ones = np.ones((K, 1))
        label_entries = out_z.reshape(r, K * K)[:, :: K + 1]  # where Y^T = I is 1 (n = 1)
        T = lambda a: a.transpose(0, 2, 1)
        return {
            "Z^T = H^T W^T": lambda: np.matmul(T(H), T(W), out=out_z),
            "exp": lambda: np.exp(ZT, out=out_z),
            "column sums": lambda: np.matmul(ZT.reshape(-1, K), ones, out=out_s.reshape(-1, 1)),
            "η / sums": lambda: np.divide(1.0, s, out=out_s),
            "scale": lambda: np.multiply(ZT, s, out=out_z),
            "subtract η Y": lambda: np.subtract(label_entries, 1e-3, out=label_entries),
            "G H^T": lambda: np.matmul(T(ZT), T(H), out=out_w),
            "W^T G": lambda: np.matmul(T(W), T(ZT), out=out_h),
            "W -= dW": lambda: np.subtract(W, W, out=out_w),
            "H -= dH": lambda: np.subtract(H, H, out=out_h),
        }

    batched, single = ops(R), ops(1)
    rows, tot_b, tot_1 = [], 0.0, 0.0
    for name in batched:
        tb = min(timeit.repeat(batched[name], number=number, repeat=3)) / number
        t1 = min(timeit.repeat(single[name], number=number, repeat=3)) / number
        tot_b, tot_1 = tot_b + tb, tot_1 + t1
        rows.append(f"{name} {1e6 * tb:.2f}/{1e6 * t1:.2f} ({R * t1 / tb:.1f}x)")
    print(f"  per-operation us, {R} stacked / one realisation (ratio): " + "; ".join(rows))
    print(
        f"  ceiling of the batched/looped ratio from these operations: {R * tot_1 / tot_b:.1f}x "
        f"({1e6 * tot_b:.1f} us vs {R} x {1e6 * tot_1:.1f} us per iteration)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short GD run (under a minute)")
    args = parser.parse_args()
    bench_ode(1e9)
    bench_gd(10_000 if args.quick else 100_000)


if __name__ == "__main__":
    main()
