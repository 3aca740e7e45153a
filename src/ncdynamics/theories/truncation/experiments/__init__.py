"""Registered experiments of the truncation theory ([1] has no experiments).

The designs and their settings are listed in docs/theories/truncation.md, Experiments.

One module per experiment, named after what it shows:

=================  ===============================  =======================================
name               module                           what it checks
=================  ===============================  =======================================
truncation.e1      ``e1_gradient_formulas``         Thm. 3.2, Cor. 3.5, Thm. 5.1 vs FD and
                                                    autograd
truncation.e2      ``e2_truncation_staircase``      fixed-R staircase: event times (4.49),
                                                    rates n/N, edge cases, Q-D
truncation.e3      ``e3_coupled_flow_vs_network``   coupled effective flow vs gradient
                                                    descent on the layered network
truncation.e4      ``e4_finite_time_truncation``    constants and bounds of Prop. 4.2 from a
                                                    mostly truncated start
truncation.e5      ``e5_paper_vs_corrected_omega``  paper-literal Omega (3.22) vs corrected
                                                    Omega on a marginal design
truncation.e6      ``e6_conserved_quantity``        Sec. 8: conserved B B^T - W^T W, cost
                                                    bound, network-level check
truncation.e7      ``e7_output_layer_closed_form``  Sec. 9: closed form (9.10), limit (9.12),
                                                    network GD on W^(Q+1)
truncation.e8      ``e8_layer_weight_descent``      exploratory: plain GD on (W_l, b_l) from
                                                    an adapted start
=================  ===============================  =======================================

Shared by several of them: :mod:`.panels` (rows of line-plot panels). Every experiment writes
its ``summary["claims"]`` with :func:`ncdynamics.theories.claims.claim`, one record per
statement of [1] (or of a correction to it, numbered as in docs/theories/truncation.md) and
one part per condition, built by a pure function of the measurements (``gradient_claims``,
``staircase_claims``, ...) so that tests can feed it a measurement where one condition fails.

Presets: ``smoke`` runs in seconds, ``cpu`` in minutes, ``paper`` uses the designs' full
settings (the paper itself gives none; docs/theories/truncation.md compares them).
"""

from __future__ import annotations

from dataclasses import replace

from ...experiment import ExperimentSpec
from .e1_gradient_formulas import GradientCheckConfig, run_gradient_check
from .e2_truncation_staircase import StaircaseConfig, run_staircase
from .e3_coupled_flow_vs_network import CoupledFlowConfig, run_coupled_flow
from .e4_finite_time_truncation import Prop42Config, run_prop42
from .e5_paper_vs_corrected_omega import PaperOmegaConfig, run_paper_omega
from .e6_conserved_quantity import CollapsedConfig, run_collapsed
from .e7_output_layer_closed_form import UntruncatedConfig, run_untruncated
from .e8_layer_weight_descent import LayerGDConfig, run_layer_gd

__all__ = [
    "EXPERIMENTS",
    "CollapsedConfig",
    "CoupledFlowConfig",
    "GradientCheckConfig",
    "LayerGDConfig",
    "PaperOmegaConfig",
    "Prop42Config",
    "StaircaseConfig",
    "UntruncatedConfig",
]

EXPERIMENTS: tuple[ExperimentSpec, ...] = (
    ExperimentSpec(
        name="truncation.e1",
        theory="truncation",
        summary="Gradient formulas (Thm 3.2/5.1, corrected Omega) vs finite differences",
        config=GradientCheckConfig,
        presets={
            "smoke": {
                "qs": (2, 3),
                "n_seeds": 2,
                "n_max": 8,
                "separated_qs": (3,),
                "separated_seeds": 1,
            },
            "cpu": {},
            "paper": {},
        },
        run=run_gradient_check,
    ),
    ExperimentSpec(
        name="truncation.e2",
        theory="truncation",
        summary="Fixed-R truncation staircase: event times (4.49) and GD",
        config=StaircaseConfig,
        presets={
            "smoke": {"etas": (1e-3,), "n_points_qd": 20, "horizon_qd": 2.0, "eta_qd": 2e-3},
            "cpu": {},
            "paper": {},
        },
        run=run_staircase,
    ),
    ExperimentSpec(
        name="truncation.e3",
        theory="truncation",
        summary="Coupled effective flow vs GD on the layered ReLU network; collapse",
        config=CoupledFlowConfig,
        presets={
            "smoke": {
                "qs": (2,),
                "n_per": 5,
                "etas": (8e-3, 4e-3),
                "eta_reference": 2e-3,
                "eta_network": 8e-3,
                "horizon": 0.3,
                "network_horizon": 0.16,
            },
            "cpu": {"network_horizon": 4.0},
            "paper": {"eta_reference": 1e-4},
        },
        run=run_coupled_flow,
    ),
    ExperimentSpec(
        name="truncation.e4",
        theory="truncation",
        summary="Prop 4.2: finite-time full truncation and its bounds",
        config=Prop42Config,
        presets={
            "smoke": {"n_per": 10, "n_designs": 1, "eta": 1e-3, "horizon": 0.5},
            "cpu": {"eta": 2e-4},
            "paper": {},
        },
        run=run_prop42,
    ),
    ExperimentSpec(
        name="truncation.e5",
        theory="truncation",
        summary="Paper Omega (3.22) vs corrected Omega on a marginal design",
        config=PaperOmegaConfig,
        presets={
            "smoke": {"n_designs": 1, "horizon": 0.5, "n_per": 8},
            "cpu": {},
            "paper": {},
        },
        run=run_paper_omega,
    ),
    ExperimentSpec(
        name="truncation.e6",
        theory="truncation",
        summary="Sec 8: conserved quantity and exponential cost bound (collapsed data)",
        config=CollapsedConfig,
        presets={
            "smoke": {"horizon": 1.0, "n_times": 11, "n_per": 5, "network_horizon": 0.2},
            "cpu": {},
            "paper": {},
        },
        run=run_collapsed,
    ),
    ExperimentSpec(
        name="truncation.e7",
        theory="truncation",
        summary="Sec 9: closed-form output-layer flow (untruncated data)",
        config=UntruncatedConfig,
        presets={
            "smoke": {"horizon": 1.0, "n_times": 11},
            "cpu": {"horizon": 10.0},
            "paper": {},
        },
        run=run_untruncated,
    ),
    ExperimentSpec(
        name="truncation.e8",
        theory="truncation",
        summary="Exploratory: plain GD on layer weights from an adapted start",
        config=LayerGDConfig,
        presets={
            "smoke": {"n_per": 5, "horizon": 0.1, "eta": 1e-2},
            "cpu": {},
            "paper": {"horizon": 10.0},
        },
        run=run_layer_gd,
    ),
)

#: Every experiment here computes in NumPy (and CPU float64 tensors): the run's device does
#: not apply, and the run records ``cpu``.
EXPERIMENTS = tuple(replace(spec, uses_device=False) for spec in EXPERIMENTS)
