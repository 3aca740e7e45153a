"""Figures 1--10 of [1] as registered experiments (``hadamard.fig1`` ... ``hadamard.thm8``).

One module per recipe: ``fig1_reduced_flow``, ``fig3_max_min_margin``,
``fig10_normalized_flow``, ``thm8_small_init``, and ``random_vs_hadamard`` for Figures 2 and
4--9, which are one experiment, "Random vs Hadamard vs ODE", at seven settings. Those seven are
registered here under their own figure names with their settings (``K``, ``d``, ``δ``,
iterations) baked into all three presets, so ``ncdyn run hadamard.fig5 --preset cpu``
reproduces Figure 5 and ``K``/``d``/``delta`` can still be overridden. Presets: ``smoke``
(seconds), ``cpu`` (the claims at reduced horizons), ``paper`` (10 realisations, 10^6 GD
iterations, the paper's settings where stated).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from ...experiment import ExperimentSpec
from .fig1_reduced_flow import ReducedConfig, run_fig1
from .fig3_max_min_margin import MarginConfig, run_fig3
from .fig10_normalized_flow import NormalizedConfig, run_fig10
from .random_vs_hadamard import CompareConfig, run_compare
from .thm8_small_init import Thm8Config, run_thm8

__all__ = ["EXPERIMENTS"]


def _random_vs_hadamard(
    fig: int, K: int, d: int, delta: float, cpu_iterations: int
) -> ExperimentSpec:
    """Figure ``fig``: the Random vs Hadamard vs ODE recipe at ``K``, ``d``, ``δ``."""
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


_SAME: Mapping[str, Mapping[str, Any]] = {"smoke": {}, "cpu": {}, "paper": {}}

EXPERIMENTS: tuple[ExperimentSpec, ...] = (
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
    _random_vs_hadamard(2, 4, 4, 6.0, 1_000_000),
    ExperimentSpec(
        name="hadamard.fig3",
        theory="hadamard",
        summary="Fig. 3: normalised logit matrices, uniform-on-support vs max-min margin",
        config=MarginConfig,
        presets=_SAME,
        run=run_fig3,
    ),
    _random_vs_hadamard(4, 8, 8, 6.0, 300_000),
    _random_vs_hadamard(5, 16, 16, 6.0, 100_000),
    _random_vs_hadamard(6, 4, 4, 0.0, 1_000_000),
    _random_vs_hadamard(7, 8, 8, 0.0, 300_000),
    _random_vs_hadamard(8, 4, 20, 6.0, 1_000_000),
    _random_vs_hadamard(9, 8, 80, 6.0, 300_000),
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

#: Every experiment here computes in NumPy (and CPU float64 tensors): the run's device does
#: not apply, and the run records ``cpu``.
EXPERIMENTS = tuple(replace(spec, uses_device=False) for spec in EXPERIMENTS)
