"""Experiments E1 (gradient formulas) and E2 (fixed-R truncation staircase) of the spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from . import _figures
from .design import random_config, simplex_design
from .estimate import finite_difference_gradients, network_gradients
from .integrators import lie_euler, staircase, staircase_gd
from .model import (
    SeparatedRates,
    _separated,
    general_gradients,
    pack_clusters,
    separated_rates,
    theorem51_rates,
)
from .network import AdaptedParams, ClusterData, random_orthogonal


def claim(text: str, ours: Any, held: bool) -> dict[str, Any]:
    """One checked claim for ``summary.json``."""
    return {"claim": text, "ours": ours, "held": bool(held)}


# ============================================================================ E1
@dataclass(frozen=True)
class GradientCheckConfig:
    """E1: analytic gradients against finite differences and autograd (spec §3 E1).

    ``qs`` and ``n_seeds`` give the random (non-separated) configurations; ``separated_qs``
    the simplex designs on which the cluster-separated formulas are checked.
    """

    qs: tuple[int, ...] = (2, 3, 4, 5)
    n_seeds: int = 20
    n_min: int = 3
    n_max: int = 30
    fd_step: float = 1e-6
    separated_qs: tuple[int, ...] = (2, 3, 4)
    separated_seeds: int = 5


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(1.0, np.abs(b).max()))


def run_gradient_check(config: GradientCheckConfig, run: Any, *, seed: int, progress: bool) -> None:
    rng = np.random.default_rng(seed)
    errs: dict[str, list[tuple[int, float]]] = {
        k: [] for k in ("fd_beta", "fd_omega", "autograd", "thm51", "thm51_paper")
    }
    step = 0
    for q in config.qs:
        for _ in range(config.n_seeds):
            counts = rng.integers(config.n_min, config.n_max + 1, size=q)
            data, p = random_config(q, counts, rng=rng)
            params = AdaptedParams(p.R, p.beta, rng.uniform(0.5, 2.0, (q, q)))
            g = general_gradients(params, data)
            fd_b, fd_o = finite_difference_gradients(params, data, step=config.fd_step)
            net = network_gradients(params, data)
            t_b, t_o = theorem51_rates(params, data)
            lit_b, _ = theorem51_rates(params, data, variant="paper")
            row = {
                "fd_beta": _rel(g.grad_beta, fd_b),
                "fd_omega": _rel(g.omega, fd_o),
                "autograd": max(_rel(net.grad_beta, g.grad_beta), _rel(net.omega, g.omega)),
                "thm51": max(_rel(-t_b, g.grad_beta), _rel(t_o, g.omega)),
                "thm51_paper": _rel(lit_b, g.grad_beta),  # (5.4) printed = +gradient
            }
            for k, v in row.items():
                errs[k].append((q, v))
            run.log(step, {f"random.{k}": v for k, v in row.items()} | {"q": q})
            step += 1
    sep: dict[str, list[tuple[int, float]]] = {
        k: []
        for k in (
            "corrected_fd",
            "paper_fd",
            "paper_gap_predicted",
            "moments",
            "general_vs_separated",
        )
    }
    for q in config.separated_qs:
        for _ in range(config.separated_seeds):
            d = simplex_design(q, rng=rng)
            fd_b, fd_o = finite_difference_gradients(d.params, d.data, step=config.fd_step)
            cor = separated_rates(d.params, d.data)
            pap = separated_rates(d.params, d.data, variant="paper")
            mom = separated_rates(d.params, d.data, variant="moments")
            g = general_gradients(d.params, d.data)
            row = {
                "corrected_fd": max(_rel(cor.omega, fd_o), _rel(-cor.dbeta, fd_b)),
                "paper_fd": _rel(pap.omega, fd_o),
                "paper_gap_predicted": float(
                    np.abs((pap.omega - cor.omega) - _second_moment_gap(d.params, d.data)).max()
                ),
                "moments": float(np.abs(mom.omega - cor.omega).max()),
                "general_vs_separated": max(
                    _rel(-cor.dbeta, g.grad_beta), _rel(cor.omega, g.omega)
                ),
            }
            for k, v in row.items():
                sep[k].append((q, v))
            run.log(step, {f"separated.{k}": v for k, v in row.items()} | {"q": q})
            step += 1
    run.flush()
    mx = {k: max(v for _, v in vals) for k, vals in errs.items()}
    smx = {k: max(v for _, v in vals) for k, vals in sep.items()}
    smn_paper = min(v for _, v in sep["paper_fd"])
    _figures.scatter_errors(
        run,
        "e1_gradient_errors",
        {
            "corrected vs FD (beta)": _xy(errs["fd_beta"]),
            "corrected vs FD (Omega)": _xy(errs["fd_omega"]),
            "backprop vs autograd": _xy(errs["autograd"]),
            "(5.4) as printed vs +grad": _xy(errs["thm51_paper"]),
            "paper Omega (3.22) vs FD, separated": _xy(sep["paper_fd"]),
            "corrected Omega vs FD, separated": _xy(sep["corrected_fd"]),
        },
        xlabel="Q",
        ylabel="max relative error",
        title="E1: gradient formulas vs finite differences / autograd",
    )
    run.save_summary(
        {
            "random": mx,
            "separated": smx,
            "claims": [
                claim(
                    "Thm 5.1 (corrected) equals the FD gradient (tol 1e-6)",
                    max(mx["fd_beta"], mx["fd_omega"]),
                    max(mx["fd_beta"], mx["fd_omega"]) < 1e-6,
                ),
                claim(
                    "backprop equals autograd through the layered network (tol 1e-10)",
                    mx["autograd"],
                    mx["autograd"] < 1e-10,
                ),
                claim(
                    "(5.4) as printed is a descent flow (spec: it equals +grad, i.e. ascent); "
                    "ours = error of (5.4) against +grad",
                    mx["thm51_paper"],
                    mx["thm51_paper"] > 1e-6,
                ),
                claim(
                    "paper Omega (3.22) is the Riemannian gradient (relative error vs FD)",
                    smn_paper,
                    smn_paper < 1e-6,
                ),
                claim(
                    "corrected Omega equals the FD gradient on separated designs",
                    smx["corrected_fd"],
                    smx["corrected_fd"] < 1e-6,
                ),
                claim(
                    "moment form with the J2 term equals the per-point form (1e-13)",
                    smx["moments"],
                    smx["moments"] < 1e-13,
                ),
                claim(
                    "paper - corrected = (1/2N) sum [H, z z^T] exactly (1e-13)",
                    smx["paper_gap_predicted"],
                    smx["paper_gap_predicted"] < 1e-13,
                ),
            ],
        }
    )


def _xy(pairs: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    arr = np.asarray(pairs, dtype=float)
    return arr[:, 0], arr[:, 1]


def _second_moment_gap(params: AdaptedParams, data: ClusterData) -> np.ndarray:
    """``(1/2N_l) sum_i [H(z_i), z_i z_i^T]`` per layer, the term [1] (3.22) drops."""
    out = np.empty_like(params.R)
    for l in range(params.n_layers):  # noqa: E741
        z = (data.cluster(l) + params.beta[l]) @ params.R[l].T
        h = (z > 0).astype(float)
        zz = z[:, :, None] * z[:, None, :]
        out[l] = np.mean(h[:, :, None] * zz - zz * h[:, None, :], axis=0) / 2
    return out


# ============================================================================ E2
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


def run_staircase(config: StaircaseConfig, run: Any, *, seed: int, progress: bool) -> None:
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
    lines = [
        (np.linspace(0, horizon, 400), np.abs(y - cont(np.linspace(0, horizon, 400))), "exact flow")
    ]
    gd_errs, slope_errs, closed_vs_steps = {}, {}, {}
    for eta in config.etas:
        disc = staircase(x, y, x[0], eta=eta)
        n_steps = int(np.ceil(horizon / eta))
        gd = staircase_gd(x, y, x[0], eta=eta, n_steps=n_steps)
        s = np.arange(n_steps + 1) * eta
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
    _figures.panels(
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


def _edge_cases(x: np.ndarray) -> dict[str, Any]:
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

    def rates(Rm: np.ndarray, beta: np.ndarray) -> SeparatedRates:
        r = _separated(Rm, beta, packed, "corrected")
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
    lines = [
        (s, norm, "exact (per-coordinate staircase)"),
        (flow.s[::10], flow.btilde_norm[::10, 0], f"Lie-Euler eta={eta:g}", "--"),
    ]
    return {"violation": max(viol, 0.0), "gd_vs_exact": gd_vs_exact, "lines": lines}
