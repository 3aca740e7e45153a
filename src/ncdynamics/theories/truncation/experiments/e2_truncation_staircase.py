"""E2: the fixed-R truncation staircase, exactly and under gradient descent (spec §3 E2).

With ``R`` frozen the bias flow decouples by rotated coordinate ([1] Sec. 4.3): each
coordinate relaxes at rate ``n/N``, the fraction of truncated points, which grows by one
point at each event time (4.49). The exact event-driven solution is checked against (4.49),
against plain gradient descent (crossing times, log-slopes), on the cases [1] leaves out
(label inside or below the cluster, spec §1.8), and in ``Q`` dimensions against Lie-Euler with
``Omega = 0``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ...experiment import RunWriter
from ..integrators import lie_euler, staircase, staircase_gd
from ..model import SeparatedRates, pack_clusters, separated_rates
from ..network import AdaptedParams, ClusterData, random_orthogonal
from .claims import claim
from .panels import Line, panels

__all__ = ["StaircaseConfig", "run_staircase"]


@dataclass(frozen=True)
class StaircaseConfig:
    """E2: fixed-R bias flow, event times (4.49) and gradient descent (spec §3 E2)."""

    n_points: int = 8
    label: float = 1.5
    etas: tuple[float, ...] = (1e-3, 1e-4, 1e-5)
    q: int = 3
    n_points_qd: int = 50
    eta_qd: float = 1e-3
    horizon_qd: float = 6.0


def run_staircase(config: StaircaseConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Run E2: the exact staircase against (4.49) and GD, its edge cases, and Q-D fixed R."""
    rng = np.random.default_rng(seed)
    n, y = config.n_points, config.label
    x = np.sort(rng.uniform(0.0, 1.0, n))
    cont = staircase(x, y, x[0])
    s_formula = [0.0]
    for k in range(1, n):  # [1] (4.49)
        s_formula.append(s_formula[-1] + n / k * np.log((y - x[k - 1]) / (y - x[k])))
    err_formula = float(np.abs(cont.starts - np.asarray(s_formula)).max())
    horizon = float(cont.starts[-1] + 2.0)
    summary: dict[str, Any] = {"event_times": cont.starts.tolist(), "x": x.tolist()}
    lines: list[Line] = [
        (np.linspace(0, horizon, 400), np.abs(y - cont(np.linspace(0, horizon, 400))), "exact flow")
    ]
    gd_errs: dict[float, float] = {}
    slope_errs: dict[float, float] = {}
    closed_vs_steps: dict[float, float] = {}
    for eta in config.etas:
        disc = staircase(x, y, x[0], eta=eta)
        n_steps = int(np.ceil(horizon / eta))
        gd_traj = staircase_gd(x, y, x[0], eta=eta, n_steps=n_steps)
        s, gd = gd_traj.ts, gd_traj.ys
        closed_vs_steps[eta] = float(np.abs(disc(s) - gd).max())
        gd_errs[eta] = float(np.abs(disc.starts - cont.starts).max())
        slopes = []
        for k in range(n):
            lo = disc.starts[k]
            hi = disc.starts[k + 1] if k + 1 < n else horizon
            sel = (s > lo + 0.1 * (hi - lo)) & (s < hi - 0.1 * (hi - lo))
            if sel.sum() >= 2:
                slope = -np.polyfit(s[sel], np.log(np.abs(y - gd[sel])), 1)[0]
                slopes.append(abs(slope - (k + 1) / n))
        slope_errs[eta] = float(max(slopes))
        lines.append(
            (
                s[:: max(1, n_steps // 400)],
                np.abs(y - gd[:: max(1, n_steps // 400)]),
                f"GD eta={eta:g}",
                "--",
            )
        )
        run.log(
            0,
            {
                f"gd.event_error.eta={eta:g}": gd_errs[eta],
                f"gd.slope_error.eta={eta:g}": slope_errs[eta],
                f"gd.closed_vs_steps.eta={eta:g}": closed_vs_steps[eta],
            },
        )
    edge = _edge_cases(x)
    qd = _staircase_qd(config, rng)
    run.log(
        0,
        {
            "event_formula_error": err_formula,
            "qd.max_rate_violation": qd["violation"],
            "qd.gd_vs_exact": qd["gd_vs_exact"],
        },
    )
    run.flush()
    panels(
        run,
        "e2_staircase",
        [
            {
                "lines": lines,
                "logy": True,
                "vlines": cont.starts[1:],
                "xlabel": "s",
                "ylabel": "|y - b(s)|",
                "title": f"1-D, N={n}: slopes -n/N, events (4.49)",
            },
            {
                "lines": qd["lines"],
                "logy": True,
                "xlabel": "s",
                "ylabel": "|btilde(s)|",
                "title": f"Q={config.q}, N={config.n_points_qd}, fixed R",
            },
        ],
    )
    eta_min = min(config.etas)
    summary.update(
        {
            "event_formula_error": err_formula,
            "gd_event_error": gd_errs,
            "gd_slope_error": slope_errs,
            "closed_form_gd_vs_steps": closed_vs_steps,
            "edge_cases": edge,
            "qd": {k: v for k, v in qd.items() if k != "lines"},
            "claims": [
                claim(
                    "event times (4.49) equal the exact event-driven solution (1e-9)",
                    err_formula,
                    err_formula < 1e-9,
                ),
                claim(
                    "GD crossing times within 10 eta (1 + s_n) of (4.49)",
                    gd_errs,
                    all(v <= 10 * e * (1 + cont.starts[-1]) for e, v in gd_errs.items()),
                ),
                claim(
                    f"log-slopes -n/N between events (GD, eta={eta_min:g}, error < 1e-2)",
                    slope_errs[eta_min],
                    slope_errs[eta_min] < 1e-2,
                ),
                claim(
                    "label inside the cluster: final rate m/N, no collapse (spec §1.8)",
                    edge["mid_final_rate"],
                    edge["mid_final_rate"] == edge["mid_expected"],
                ),
                claim(
                    "label below the cluster: motion stops at x_1 (Filippov stop)",
                    edge["down_limit_minus_x1"],
                    edge["down_stopped"],
                ),
                claim(
                    "Q-D fixed R: -dlog|btilde|/ds within [min_r n_r/N, max_r n_r/N]",
                    qd["violation"],
                    qd["violation"] < 1e-6,
                ),
            ],
        }
    )
    run.save_summary(summary)


def _edge_cases(x: NDArray[np.float64]) -> dict[str, Any]:
    mid_y = 0.5 * (x[3] + x[4])
    mid = staircase(x, mid_y, x[0])
    static = staircase(x, 1.5, x[0] - 0.1)
    down = staircase(x, -1.0, x[-1] + 0.2)
    return {
        "mid_final_rate": mid.final_rate,
        "mid_expected": 4 / x.size,
        "static_final_rate": static.final_rate,
        "down_stopped": down.stopped,
        "down_limit_minus_x1": float(down.limit - x[0]),
    }


def _staircase_qd(config: StaircaseConfig, rng: np.random.Generator) -> dict[str, Any]:
    """Fixed R, Q-D: coordinates decouple ([1] (4.40)); compare Lie-Euler with Omega = 0."""
    q, n = config.q, config.n_points_qd
    x = rng.standard_normal((n, q))
    R = random_orthogonal(q, rng=rng)
    ytilde = x.mean(0) + R.T @ np.full(q, 2.5)  # label above the cluster in every coordinate
    beta0 = -(x.mean(0))
    data = ClusterData(x, np.zeros(n, dtype=np.int64), ytilde[None])
    params = AdaptedParams(R[None], beta0[None])
    packed = pack_clusters(data)

    def rates(Rm: NDArray[np.float64], beta: NDArray[np.float64]) -> SeparatedRates:
        r = separated_rates(AdaptedParams(Rm, beta), packed)
        return SeparatedRates(r.dbeta, np.zeros_like(r.omega), r.j0perp, r.btilde, r.cost)

    eta = config.eta_qd
    n_steps = int(round(config.horizon_qd / eta))
    flow = lie_euler(params, rates, eta=eta, n_steps=n_steps)
    xr, yr, b0 = x @ R.T, R @ ytilde, -(R @ beta0)
    stairs = [staircase(xr[:, r], yr[r], b0[r], eta=eta) for r in range(q)]
    exact_gd = np.stack([st(flow.s) for st in stairs], axis=1)  # b per coordinate
    b_flow = -np.einsum("ab,tb->ta", R, flow.beta[:, 0])
    gd_vs_exact = float(np.abs(exact_gd - b_flow).max())
    cont = [staircase(xr[:, r], yr[r], b0[r]) for r in range(q)]
    s = np.linspace(0, config.horizon_qd, 3001)
    b = np.stack([st(s) for st in cont], axis=1)
    norm = np.linalg.norm(yr - b, axis=1)
    rate = -np.diff(np.log(norm)) / np.diff(s)
    counts = np.stack([(xr[:, r][None, :] <= b[:, r][:, None]).sum(1) for r in range(q)], 1)
    lo, hi = counts[:-1].min(1) / n, counts[:-1].max(1) / n
    # rates change inside a grid cell at events; skip those cells
    ok = np.all(np.diff(counts, axis=0) == 0, axis=1)
    viol = float(np.max(np.maximum(lo - rate, rate - hi)[ok], initial=0.0))
    lines: list[Line] = [
        (s, norm, "exact (per-coordinate staircase)"),
        (flow.s[::10], flow.btilde_norm[::10, 0], f"Lie-Euler eta={eta:g}", "--"),
    ]
    return {"violation": max(viol, 0.0), "gd_vs_exact": gd_vs_exact, "lines": lines}
