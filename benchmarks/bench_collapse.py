"""Collapse metrics on 60,000 x 512 float32 features, 10 classes.

Compares, in one process:
- the streaming CollapseAccumulator (batches of 4096; NC1-NC3 in one pass, NC4 in a second);
- computing X^T X once on the same array (the floor of any one-pass method that needs the
  within-class covariance);
- a straightforward implementation: a Python loop over classes with np.cov per class,
  trace(Sw @ pinv(Sb)), and NC4 from broadcast (N, C, d) distances (the recipe of the
  package's readable reference, ``probes/collapse_reference.py``, cut to NC1-NC4).

The fast path timed here is ``probes/_fast_collapse_stream.py``.

The machine is shared, so the functions are timed in interleaved rounds (each round runs
every function once, in rotating order) and each gets its minimum over the rounds; the
per-round ratios (ours / X^T X in the same round) are printed as median [min, max] to show the
spread, and each function's median [min, max] (``_timing.interleaved``).

Every function gets the same threads: ``--threads`` (default 1, the CLI's default) for torch
and for NumPy's BLAS. The accumulator runs its BLAS calls on one thread whatever the setting
(``probes/_fast_syrk.py``), so with ``--threads 2`` the X^T X it is compared with runs on two
cores and it does not (``docs/performance.md`` has both figures).

Usage: python benchmarks/bench_collapse.py [--quick] [--threads N]
"""

from __future__ import annotations

import argparse
import sys

import numpy as np
import torch
from _timing import Timing, emit, emit_all, interleaved, print_timings, report
from threadpoolctl import threadpool_limits

from ncdynamics.probes import CollapseAccumulator, collapse_metrics


def naive_metrics(h: np.ndarray, y: np.ndarray, w: np.ndarray, b: np.ndarray) -> dict:
    C = w.shape[0]
    mu_g = h.mean(0)
    means, sw = [], np.zeros((h.shape[1], h.shape[1]))
    for c in range(C):
        hc = h[y == c].astype(np.float64)
        means.append(hc.mean(0))
        sw += np.cov(hc, rowvar=False, bias=True) * len(hc)
    mu = np.array(means)
    sw /= len(h)
    m = mu - mu_g
    sb = m.T @ m / C
    nc1 = np.trace(sw @ np.linalg.pinv(sb, rcond=1e-10)) / C
    norms = np.linalg.norm(m, axis=1)
    dist = ((h[:, None, :] - mu[None].astype(np.float32)) ** 2).sum(-1)  # (N, C)
    nc4 = float(np.mean((h @ w.T + b).argmax(1) != dist.argmin(1)))
    return {"nc1": nc1, "nc2_equinorm": norms.std() / norms.mean(), "nc4": nc4}


def spread(num: list[float], den: list[float]) -> str:
    """Median [min, max] of the per-round ratios num / den."""
    r = np.array(num) / np.array(den)
    return f"per-round {np.median(r):.2f}x [{r.min():.2f}, {r.max():.2f}]"


_PAUSE = 0.5  # seconds before each timed call: lets the BLAS worker threads of the call
# before go idle (after a multi-threaded call they keep spinning, and the next call pays)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true", help="20,000 samples, 3 rounds")
    parser.add_argument("--threads", type=int, default=1, help="torch and BLAS threads")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    threadpool_limits(args.threads)
    n, d, C = (20_000 if args.quick else 60_000), 512, 10
    rng = np.random.default_rng(0)
    y = rng.integers(0, C, n)
    mu = 3 * rng.standard_normal((C, d))
    h = (mu[y] + rng.standard_normal((n, d))).astype(np.float32)
    w = rng.standard_normal((C, d))
    b = rng.standard_normal(C)
    print(
        f"collapse metrics, N={n}, d={d}, C={C}, float32; torch and BLAS threads "
        f"{torch.get_num_threads()}"
    )

    def streamed(with_nc4: bool, rows: int = n) -> dict:
        acc = CollapseAccumulator(C, weight=w, bias=b)
        for s in range(0, rows, 4096):
            acc.update(h[s : min(s + 4096, rows)], y[s : min(s + 4096, rows)])
        if with_nc4:
            for s in range(0, rows, 4096):
                acc.update_nc4(h[s : min(s + 4096, rows)], y[s : min(s + 4096, rows)])
        return acc.compute()

    rounds = 3 if args.quick else 7
    timings = interleaved(
        {
            "gram": lambda: h.T @ h,
            "ours": lambda: streamed(False),
            "ours4": lambda: streamed(True),
            "naive": lambda: naive_metrics(h, y, w, b),
        },
        rounds=rounds,
        pause=_PAUSE,
    )
    times = {k: list(t.times) for k, t in timings.items()}
    t_gram, t_ours, t_ours4, t_naive = (min(times[k]) for k in ("gram", "ours", "ours4", "naive"))
    report("streamed NC1-NC3 (one pass) vs X^T X once", t_ours, t_gram, "X^T X")
    print(f"    ours / X^T X: {spread(times['ours'], times['gram'])}")
    report("streamed NC1-NC4 (two passes) vs X^T X once", t_ours4, t_gram, "X^T X")
    report("streamed NC1-NC4 vs straightforward class loop", t_ours4, t_naive, "naive")
    print(f"    naive / ours: {spread(times['naive'], times['ours4'])}")
    ours, naive = collapse_metrics(h, y, w, b), naive_metrics(h, y, w, b)
    print("agreement: " + ", ".join(f"{k} {ours[k]:.6g} vs {naive[k]:.6g}" for k in naive))
    r_one = np.median(np.array(times["ours"]) / np.array(times["gram"]))
    r_naive = np.median(np.array(times["naive"]) / np.array(times["ours4"]))
    print(
        f"targets: one pass <= 1.5x X^T X -> {t_ours / t_gram:.2f}x (best times), "
        f"{r_one:.2f}x (median round); >= 5x faster than naive -> {t_naive / t_ours4:.1f}x "
        f"(best times), {r_naive:.1f}x (median round)"
    )
    size = f"N={n}, d={d}, C={C}"
    print_timings(f"collapse metrics, {size}", timings)
    emit("collapse", timings["ours"], size=size, baseline=timings["gram"])
    emit("collapse", timings["ours4"], size=size, baseline=timings["naive"])
    emit_all("collapse", timings, size=size, skip=("ours", "ours4"))
    scaling(streamed, n, d, C, rounds)
    sys.stdout.flush()


def scaling(streamed, n: int, d: int, C: int, rounds: int) -> None:
    """Streamed NC1-NC4 on the first n/4, n/2 and n rows, interleaved: the cost should grow
    linearly in n (growth exponent log(t / t0) / log(n / n0) near 1)."""
    sizes = (n // 4, n // 2, n)
    timings = interleaved(
        {f"n={m}": (lambda m=m: streamed(True, m)) for m in sizes}, rounds=rounds, pause=_PAUSE
    )
    print_timings(f"streamed NC1-NC4 against the number of rows (d={d}, C={C})", timings)
    t0 = timings[f"n={sizes[0]}"].median
    for m in sizes[1:]:
        t = timings[f"n={m}"].median
        print(
            f"  n={m}: {t / t0:.2f}x the time at n={sizes[0]} for {m / sizes[0]:.0f}x the rows, "
            f"growth exponent {np.log(t / t0) / np.log(m / sizes[0]):.2f} (linear: 1)"
        )
    for m in sizes:
        t = timings[f"n={m}"]
        emit(
            "collapse-scaling",
            Timing("ours4", t.times, t.clock),
            size=f"N={m}, d={d}, C={C}",
            n=m,
        )


if __name__ == "__main__":
    main()
