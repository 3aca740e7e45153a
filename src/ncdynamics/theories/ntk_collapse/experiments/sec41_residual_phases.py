"""Residual phases of [1], Sec. 4.1, eqs. (13)-(15): ``ntk_collapse.phases``.

GD on the residual of one output under a block-structured kernel: the global, class and
single (within-class) phases each shrink by ``1 - eta lambda`` per step, at the three
eigenvalues of Table 1, so the global phase goes first, then the class phase, then the
single phase.
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray

from ...claims import Part, claim
from ...experiment import RunWriter
from ..blocks import BlockEigenvalues, block_eigenvalues
from ..residuals import residual_gd, residual_phases
from ._theory_demos import TheoryConfig

__all__ = ["phases_claim", "run_phases"]


def run_phases(config: TheoryConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """GD on the residual with a block kernel: three phases at rates 1 - eta lambda."""
    rng = np.random.default_rng(seed)
    C, m = config.n_classes, config.n_per_class
    vals = dict(diag=config.kappa_d, intra=config.kappa_c, inter=config.kappa_n)
    lam = block_eigenvalues(C, m, **vals)
    eta = 0.5 / lam.global_
    n_steps = int(np.ceil(8.0 / (eta * lam.single)))
    r0 = rng.standard_normal(C * m)
    traj = residual_gd(r0, C, **vals, learning_rate=eta, n_steps=n_steps)
    ph = residual_phases(traj.ys, C)
    norms = {k: np.linalg.norm(getattr(ph, k), axis=-1) for k in ("global_", "class_", "single")}
    steps = np.arange(n_steps + 1)
    for k in range(0, n_steps + 1, max(1, n_steps // 200)):
        run.log(k, {f"phase/{name.strip('_')}": float(v[k]) for name, v in norms.items()})
    run.flush()
    rates = {}
    for name, val in (("global_", lam.global_), ("class_", lam.class_), ("single", lam.single)):
        v = norms[name]
        ok = np.flatnonzero(v > 1e-9 * v[0])  # above round-off from the other phases
        k_last = max(int(ok[-1]), 1)
        measured = (v[k_last] / v[0]) ** (1.0 / k_last)
        rates[name.strip("_")] = {
            "measured_factor": float(measured),
            "predicted_factor": float(abs(1 - eta * val)),
        }
    _plot(run, steps, norms, lam, eta)
    run.save_summary(
        {
            "eigenvalues": {"single": lam.single, "class": lam.class_, "global": lam.global_},
            "learning_rate": eta,
            "rates": rates,
            "claims": [phases_claim(rates)],
        }
    )


def phases_claim(rates: dict[str, dict[str, float]]) -> dict[str, Any]:
    """The claim of Sec. 4.1, eqs. (13)-(15) of [1] from the measured and predicted per-step
    factors of the ``global``, ``class`` and ``single`` phases."""
    parts = [
        Part(
            f"{name} phase shrinks by |1 - eta lambda_{name}|",
            "|measured - predicted per-step factor| < 1e-6",
            [r["measured_factor"], r["predicted_factor"]],
            abs(r["measured_factor"] - r["predicted_factor"]) < 1e-6,
        )
        for name, r in rates.items()
    ]
    order = [rates[k]["measured_factor"] for k in ("global", "class", "single")]
    parts.append(
        Part(
            "global first, then class, then single",
            "measured factors: global < class < single",
            order,
            order[0] < order[1] < order[2],
        )
    )
    return claim(
        "Under gradient descent on the residual of an output with a class-block-structured "
        "kernel, the residual splits into a global, a class and a single (within-class) "
        "phase; each shrinks by the factor |1 - eta lambda| per step at its own eigenvalue of "
        "Table 1, and since lambda_global > lambda_class > lambda_single the global phase "
        "vanishes first, then the class phase, then the single phase.",
        "Eqs. (13)-(15), Table 1, Sec. 4.1",
        parts,
    )


def _plot(
    run: RunWriter,
    steps: NDArray[np.int_],
    norms: dict[str, NDArray[np.float64]],
    lam: BlockEigenvalues,
    eta: float,
) -> None:
    """Norm of each phase against the GD step, dotted: ``(1 - eta lambda)^t``."""
    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    for (name, v), val in zip(norms.items(), (lam.global_, lam.class_, lam.single), strict=True):
        (line,) = ax.semilogy(steps, np.maximum(v, 1e-300), label=f"{name.strip('_')}")
        ax.semilogy(steps, v[0] * np.abs(1 - eta * val) ** steps, ls=":", color=line.get_color())
    ax.set_ylim(1e-16, None)
    ax.set_xlabel("GD step")
    ax.set_ylabel("norm of residual phase")
    ax.set_title("Residual phases (dotted: (1 - eta lambda)^t)")
    ax.legend()
    run.save_figure(fig, "residual_phases")
