"""Benchmarks of the hadamard theory, each against its naive baseline in the same process.

1. Reduced ODE (9) for K = 8 from the Figure 1 start to t = 1e9: our LSODA solve in
   log-variables with the analytic Jacobian vs a plain RK45 solve in ``a`` (target < 0.5 s).
2. Batched gradient descent on the UFM (the fast path ``hadamard.fast_batched_gd.run_gd``),
   K = 16, d = 16, 10 realisations, 1e5 iterations: one batched run vs looping the
   realisations one at a time (target < 30 s, >= 5x), vs the plain reference
   ``theories.ufm.run_gd_reference``, and vs a loop over the public ``ce_descent`` per step
   (input checks and label matrix on every call: the baseline of the first docs).

Variants are timed in interleaved rounds (median and range printed).

Usage: ``.venv/bin/python benchmarks/bench_hadamard.py [--quick] [--threads N]`` (quick: 1e4
iterations).
"""

from __future__ import annotations

import argparse
import timeit

import numpy as np
from _timing import emit, emit_all, interleaved, print_timings, ratio
from scipy.integrate import solve_ivp
from threadpoolctl import threadpool_limits

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.hadamard.counterexamples import COUNTEREXAMPLES
from ncdynamics.theories.hadamard.fast_batched_gd import run_gd
from ncdynamics.theories.hadamard.model import payoffs
from ncdynamics.theories.ufm import ce_descent, run_gd_reference, state_matrices


def bench_ode(t_max: float, rounds: int) -> None:
    a0 = COUNTEREXAMPLES["fig1"]
    ts = np.concatenate([[0.0], np.geomspace(1e-3, t_max, 200)])
    p = hd.ReducedParams(8)

    def naive_rhs(t, a):
        b, D = payoffs(a, p)
        return a * b / D

    def ours():
        return hd.solve_reduced(a0, ts, n_classes=8)

    def naive():
        return solve_ivp(
            naive_rhs, (0, t_max), a0, method="RK45", t_eval=ts, rtol=1e-10, atol=1e-12
        )

    size = f"K=8, t={t_max:.0e}"
    timings = interleaved({"ours": ours, "naive": naive}, rounds=rounds, warmup=0)
    print_timings(
        f"reduced ODE {size}: ours (LSODA, log a, Jacobian), naive (RK45 in a)",
        timings,
        baseline="naive",
    )
    emit_all("hadamard_ode", timings, baseline="naive", size=size)
    o, n = ours(), naive()
    agree = np.abs(n.y.T[-1] / o.ys[-1] - 1).max() if n.success else np.nan
    print(
        f"  ours {o.n_evals} evals; naive success={n.success}, {n.nfev} evals; "
        f"final rel. diff {agree:.1e}"
    )


def bench_gd(n_iter: int, rounds: int, ref_iter: int = 2000) -> None:
    """Batched ``run_gd`` against the same looped over realisations, and against the plain
    reference ``run_gd_reference`` (each realisation in turn, each step
    ``W, H = W + η dW, H + η dH`` from the descent direction of Eq. (2) of [1]), the latter
    timed on ``ref_iter`` iterations and scaled."""
    K, d, R, eta = 16, 16, 10, 0.01
    W, H = hd.random_init(K, d, n_realizations=R, rng=np.random.default_rng(0))
    steps = [0, n_iter]

    def ours():
        return run_gd(W, H, steps=steps, learning_rate=eta)

    def loop():
        return [run_gd(W[r], H[r], steps=steps, learning_rate=eta) for r in range(R)]

    def reference():
        return [
            run_gd_reference(W[r], H[r], steps=[0, ref_iter], learning_rate=eta) for r in range(R)
        ]

    def public_api():  # what a user writes with the public descent direction (the old baseline)
        for r in range(R):
            w, h = W[r], H[r]
            for _ in range(ref_iter):
                dw, dh = ce_descent(w, h)
                w, h = w + eta * dw, h + eta * dh

    size = f"K={K}, d={d}, R={R}, {n_iter:.0e} iterations"
    timings = interleaved(
        {"ours": ours, "loop": loop, "reference": reference, "ce_descent loop": public_api},
        rounds=rounds,
        warmup=0,
        scale={
            "ours": 1.0,
            "loop": 1.0,
            "reference": n_iter / ref_iter,
            "ce_descent loop": n_iter / ref_iter,
        },
    )
    print_timings(
        f"batched GD {size} (reference timed on {ref_iter} iterations and scaled)",
        timings,
        baseline="loop",
    )
    for base in ("reference", "ce_descent loop"):
        r, lo, hi = ratio(timings[base], timings["ours"])
        print(f"  {base} / ours {r:.2f}x (rounds {lo:.2f}-{hi:.2f}x)")
    for base in ("loop", "reference", "ce_descent loop"):
        emit("hadamard_gd", timings["ours"], size=size, baseline=timings[base])
    emit_all("hadamard_gd", timings, size=size, skip=("ours",))
    z_ours = state_matrices(ours().ys[:, -1], K)[0]  # (R, K, K)
    looped = loop()
    same = max(np.abs(z_ours[r] - state_matrices(looped[r].ys[-1], K)[0]).max() for r in range(R))
    print(f"  max |ΔZ| batched vs looped {same:.1e}")
    bench_gd_ceiling(K, d, R)


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
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    args = parser.parse_args()
    threadpool_limits(args.threads)
    rounds = 3 if args.quick else 5
    bench_ode(1e9, rounds)
    bench_gd(10_000 if args.quick else 100_000, rounds)


if __name__ == "__main__":
    main()
