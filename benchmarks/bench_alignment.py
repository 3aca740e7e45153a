"""Rate fit of the alignment ODE: ours against the straightforward approach, same process.

Ours: ``fit_rates`` (odeint/LSODA with the analytic Jacobian, Levenberg--Marquardt on the
log-rates from 6 starts on a thinned grid, then polished on the full grid).
Baseline: a grid search over the log-rates followed by ``scipy.optimize.minimize``
(Nelder--Mead) with ``solve_ivp`` (LSODA, same tolerances) on the raw system.

The two are timed in interleaved rounds (median and range printed).

Usage: ``.venv/bin/python benchmarks/bench_alignment.py [--quick]``
"""

from __future__ import annotations

import argparse

import numpy as np
from _timing import emit_all, interleaved, print_timings
from scipy.integrate import solve_ivp
from scipy.optimize import minimize

from ncdynamics.theories.alignment import AlignmentParams, drift
from ncdynamics.theories.alignment.estimate import fit_rates, simulate


def naive_fit(ts, obs, X, Y, *, grid, rtol, atol):
    """Grid search, then Nelder--Mead, each objective a ``solve_ivp`` solve of eq. (7)."""

    def objective(theta):
        p = AlignmentParams(float(np.exp(theta[0])), float(np.exp(theta[1])), X, Y)
        sol = solve_ivp(
            drift,
            (ts[0], ts[-1]),
            obs[0],
            method="LSODA",
            t_eval=ts,
            args=(p,),
            rtol=rtol,
            atol=atol,
        )
        if not sol.success or sol.y.shape[1] != ts.size:
            return 1e6
        return float(np.sum((sol.y.T - obs) ** 2))

    best = min(((objective(np.array(g)), g) for g in grid), key=lambda r: r[0])
    res = minimize(
        objective,
        np.array(best[1]),
        method="Nelder-Mead",
        options={"xatol": 1e-6, "fatol": 1e-14, "maxfev": 400},
    )
    return np.exp(res.x), res.fun


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="fewer repeats and a coarser grid")
    args = ap.parse_args()
    true = AlignmentParams(1e-3, 1e-2, 0.25, 1.0)
    s0 = 9e-5
    ts = np.arange(6001.0)
    obs = simulate([6e-4, s0**2, s0**2 - s0], ts, true).ys
    rounds = 2 if args.quick else 3
    n_grid = 4 if args.quick else 6
    grid = [(u, v) for u in np.linspace(-9, -3, n_grid) for v in np.linspace(-8, -3, n_grid)]

    results = {}

    def ours():
        results["ours"] = fit_rates(ts, obs, X=true.X, Y=true.Y)

    def naive():
        results["naive"] = naive_fit(ts, obs, true.X, true.Y, grid=grid, rtol=1e-8, atol=1e-13)

    fit_rates(ts, obs, X=true.X, Y=true.Y)  # warm up imports
    timings = interleaved({"ours": ours, "naive": naive}, rounds=rounds, warmup=0)
    fit, (rates, _) = results["ours"], results["naive"]
    want = np.array([true.inv_tau_h, true.inv_tau_y])
    err_ours = np.max(np.abs(np.array([fit.params.inv_tau_h, fit.params.inv_tau_y]) / want - 1))
    err_naive = np.max(np.abs(rates / want - 1))
    print_timings("rate fit, 6001-epoch two-point trajectory", timings, baseline="naive")
    print(
        f"  ours: odeint+Jacobian, LM on log-rates, 6 starts; max rel. error {err_ours:.1e}\n"
        f"  naive: {len(grid)}-point grid + Nelder-Mead, solve_ivp; max rel. error "
        f"{err_naive:.1e}"
    )
    emit_all("alignment_fit", timings, baseline="naive", size="6001 epochs")


if __name__ == "__main__":
    main()
