"""Benchmark: Lie-Euler steps of the cluster-separated effective flow ([1] Thm. 3.2).

Ours: ``separated_flow`` (all layers at once, O(L N Q^2) einsums, eigh-based exponential of
the antisymmetric generators). Baseline: the textbook loop, layer by layer and point by
point, building each commutator [H, M - z z^T/2] and calling ``scipy.linalg.expm`` on every
layer at every step. Both run in this process on the same simplex design (Q = 3, three
clusters of 20 points); the final states are compared.

The two are timed in interleaved rounds (median and range printed); the naive loop runs
1000 steps per round and its time is scaled to the flow's 10^4 steps.

Usage: .venv/bin/python benchmarks/bench_truncation.py [--quick] [--rounds R] [--threads N]
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import emit_all, interleaved, print_timings
from scipy.linalg import expm
from threadpoolctl import threadpool_limits

from ncdynamics.theories.truncation import separated_flow, simplex_design


def naive_flow(
    R: np.ndarray,
    beta: np.ndarray,
    clusters: list[np.ndarray],
    ytilde: np.ndarray,
    eta: float,
    n_steps: int,
) -> tuple[np.ndarray, np.ndarray]:
    R, beta = R.copy(), beta.copy()
    q = beta.shape[1]
    for _ in range(n_steps):
        new_R, new_beta = R.copy(), beta.copy()
        for l, x in enumerate(clusters):  # noqa: E741
            bt = R[l] @ (beta[l] + ytilde[l])
            omega = np.zeros((q, q))
            j0perp = np.zeros(q)
            for xi in x:
                z = R[l] @ (xi + beta[l])
                H = np.diag((z > 0).astype(float))
                M = 0.5 * (np.outer(z, bt) + np.outer(bt, z)) - 0.5 * np.outer(z, z)
                omega += (H @ M - M @ H) / x.shape[0]
                j0perp += (z <= 0) / x.shape[0]
            new_beta[l] = beta[l] - eta * R[l].T @ (j0perp * bt)
            new_R[l] = expm(eta * omega) @ R[l]
        R, beta = new_R, new_beta
    return R, beta


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1000 steps instead of 10^4")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds")
    parser.add_argument("--threads", type=int, default=1, help="BLAS threads (default 1)")
    args = parser.parse_args()
    threadpool_limits(args.threads)
    n_steps = 1_000 if args.quick else 10_000
    naive_steps = 200 if args.quick else 1_000
    rounds = args.rounds or (3 if args.quick else 5)
    eta = 1e-3
    d = simplex_design(3, n_per=20, rng=np.random.default_rng(0))
    clusters = [d.data.cluster(l) for l in range(3)]

    def ours() -> object:
        return separated_flow(d.params, d.data, eta=eta, n_steps=n_steps, record_every=n_steps)

    def naive() -> object:
        return naive_flow(d.params.R, d.params.beta, clusters, d.data.ytilde, eta, naive_steps)

    timings = interleaved(
        {"ours": ours, "naive": naive},
        rounds=rounds,
        warmup=0,
        scale={"ours": 1.0, "naive": n_steps / naive_steps},  # naive: extrapolated per step
    )
    size = f"Q=3, 3x20 points, {n_steps} steps"
    print_timings(
        f"coupled flow, {size}, BLAS threads {args.threads} (naive timed on {naive_steps} "
        "steps and scaled)",
        timings,
        baseline="naive",
    )
    emit_all("truncation_flow", timings, baseline="naive", size=size)
    R_n, beta_n = naive_flow(d.params.R, d.params.beta, clusters, d.data.ytilde, eta, naive_steps)
    check = separated_flow(
        d.params, d.data, eta=eta, n_steps=naive_steps, record_every=naive_steps
    ).final
    diff = max(np.abs(check.R - R_n).max(), np.abs(check.beta - beta_n).max())
    final = ours()
    print(f"  max |state difference| after {naive_steps} steps: {diff:.2e}")
    print(
        f"  final cost {final.cost[-1]:.3e}, orthogonality error "
        f"{final.final.orthogonality_error():.1e}"
    )


if __name__ == "__main__":
    main()
