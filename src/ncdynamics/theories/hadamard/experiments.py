"""Figures 1--10 of [1] as registered experiments (``hadamard.fig1`` ... ``hadamard.thm8``).

Figures 2 and 4--9 are one experiment, "Random vs Hadamard vs ODE", at different settings;
each figure is registered under its own name with its settings baked into all three presets,
so ``ncdyn run hadamard.fig5 --preset cpu`` reproduces Figure 5 and ``K``/``d``/``delta`` can
still be overridden. Presets: ``smoke`` (seconds), ``cpu`` (the claims at reduced horizons),
``paper`` (10 realisations, 10^6 GD iterations, the paper's settings where stated).
"""

from __future__ import annotations

from ..experiment import ExperimentSpec
from ._exp_compare import SCALARS as SCALARS
from ._exp_compare import CompareConfig, run_compare
from ._exp_theory import (
    MarginConfig,
    NormalizedConfig,
    ReducedConfig,
    Thm8Config,
    run_fig1,
    run_fig3,
    run_fig10,
    run_thm8,
)

__all__ = ["EXPERIMENTS"]


def _compare_spec(fig: int, K: int, d: int, delta: float, cpu_iterations: int) -> ExperimentSpec:
    base = {"K": K, "d": d, "delta": delta}
    scale = "infinitesimal" if delta > 0 else "standard"
    return ExperimentSpec(
        name=f"hadamard.fig{fig}",
        theory="hadamard",
        summary=(
            f"Fig. {fig}: Random vs Hadamard vs ODE, K={K}, d={d}, {scale} init (δ={delta:g})"
        ),
        config=CompareConfig,
        presets={
            "smoke": {
                **base,
                "n_iterations": 300,
                "n_realizations": 2,
                "n_log": 20,
                "fit_ode": False,
            },
            "cpu": {**base, "n_iterations": cpu_iterations},
            "paper": {**base, "n_iterations": 1_000_000},
        },
        run=run_compare,
    )


# ----------------------------------------------------------------------------- registry
_SAME = {"smoke": {}, "cpu": {}, "paper": {}}

EXPERIMENTS = (
    ExperimentSpec(
        name="hadamard.fig1",
        theory="hadamard",
        summary="Fig. 1: reduced ODE for K=8, M rises while the KL falls",
        config=ReducedConfig,
        presets={
            "smoke": {"t_max": 1e4, "n_times": 100},
            "cpu": {},
            "paper": {"t_max": 1e9, "n_times": 600},
        },
        run=run_fig1,
    ),
    _compare_spec(2, 4, 4, 6.0, 1_000_000),
    ExperimentSpec(
        name="hadamard.fig3",
        theory="hadamard",
        summary="Fig. 3: normalised logit matrices, uniform-on-support vs max-min margin",
        config=MarginConfig,
        presets=_SAME,
        run=run_fig3,
    ),
    _compare_spec(4, 8, 8, 6.0, 300_000),
    _compare_spec(5, 16, 16, 6.0, 100_000),
    _compare_spec(6, 4, 4, 0.0, 1_000_000),
    _compare_spec(7, 8, 8, 0.0, 300_000),
    _compare_spec(8, 4, 20, 6.0, 1_000_000),
    _compare_spec(9, 8, 80, 6.0, 300_000),
    ExperimentSpec(
        name="hadamard.fig10",
        theory="hadamard",
        summary="Fig. 10: normalised vs regular reduced flow from the Fig. 1 start",
        config=NormalizedConfig,
        presets={
            "smoke": {"tau_max": 1e3, "t_max": 1e4, "n_times": 100},
            "cpu": {},
            "paper": {"t_max": 1e9, "n_times": 600},
        },
        run=run_fig10,
    ),
    ExperimentSpec(
        name="hadamard.thm8",
        theory="hadamard",
        summary="Thm 8: small Gaussian init drives Z(t*) toward the simplex ETF",
        config=Thm8Config,
        presets={
            "smoke": {"widths": (8, 32), "eps_values": (1e-2, 1e-4), "n_realizations": 2},
            "cpu": {},
            "paper": {"widths": (8, 80, 800, 8000), "n_realizations": 10},
        },
        run=run_thm8,
    ),
)
