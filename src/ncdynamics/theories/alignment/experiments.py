"""The experiments of [1] on the two-point data, registered as ``alignment.*``.

=============================  =======================================================
``alignment.universality``     Fig. 2 and 12: Table 1 architectures, fitted theory
``alignment.init-sweep``       Fig. 3: initial-weight sweep (plateau vs lazy decay)
``alignment.final-distance``   Fig. 5: final distance against eq. (10) on a dx x dy grid
``alignment.alternatives``     Fig. 11: eq. (7) against the alternatives (51)
``alignment.depth``            Fig. 10: fit quality and rates per hidden layer
``alignment.adam``             Fig. 15: the theory fitted to Adam training
``alignment.xor``              Fig. 6 (and 16 with Adam)
``alignment.blobs``            Figs. 7, 8, 13 (and 17 with Adam)
``alignment.digits``           Figs. 4, 9, 14 on scikit-learn digits (MNIST stand-in)
=============================  =======================================================

Presets: ``smoke`` (a few seconds, tiny nets), ``cpu`` (the paper's networks where they fit
the budget, fewer seeds), ``paper`` (the paper's settings). Trials run in parallel
processes through :func:`ncdynamics.training.run_trials` (1 thread each).
"""

from __future__ import annotations

from ..experiment import ExperimentSpec
from ._exp_ablations import PAPER_ALT_LOSS as PAPER_ALT_LOSS
from ._exp_ablations import (
    AdamConfig,
    AlternativesConfig,
    DepthConfig,
    _run_adam,
    _run_alternatives,
    _run_depth,
)
from ._exp_data import DATA_EXPERIMENTS
from ._exp_two_point import (
    ALL_TABLE1,
    FinalDistanceConfig,
    InitSweepConfig,
    UniversalityConfig,
    _run_final_distance,
    _run_init_sweep,
    _run_universality,
)
from ._exp_two_point import INIT_SWEEP as INIT_SWEEP
from ._exp_two_point import Y1 as Y1

__all__ = ["EXPERIMENTS"]

_SMALL = {"width": 16, "depth": 2, "epochs": 200, "workers": 1}

EXPERIMENTS: tuple[ExperimentSpec, ...] = (
    ExperimentSpec(
        "alignment.universality",
        "alignment",
        "Fig. 2/12: the fitted two-point theory across the Table 1 architectures",
        UniversalityConfig,
        {"smoke": {**_SMALL, "archs": ("shallow",)}, "cpu": {}, "paper": {}},
        _run_universality,
    ),
    ExperimentSpec(
        "alignment.init-sweep",
        "alignment",
        "Fig. 3: plateau at small initial weights, lazy decay at large ones",
        InitSweepConfig,
        {"smoke": {**_SMALL, "archs": ("low-init", "high-init")}, "cpu": {}, "paper": {}},
        _run_init_sweep,
    ),
    ExperimentSpec(
        "alignment.final-distance",
        "alignment",
        "Fig. 5: final representational distance against eq. (10)",
        FinalDistanceConfig,
        {
            "smoke": {**_SMALL, "archs": ("shallow",), "n_fit_seeds": 1, "grid": 2},
            "cpu": {"n_fit_seeds": 5},
            "paper": {"archs": ALL_TABLE1},
        },
        _run_final_distance,
    ),
    ExperimentSpec(
        "alignment.alternatives",
        "alignment",
        "Fig. 11: eq. (7) against the alternative dynamics (51)",
        AlternativesConfig,
        {
            "smoke": {**_SMALL, "archs": ("shallow",)},
            "cpu": {"archs": ("default", "shallow")},
            "paper": {},
        },
        _run_alternatives,
    ),
    ExperimentSpec(
        "alignment.depth",
        "alignment",
        "Fig. 10: fit quality and rates per hidden layer",
        DepthConfig,
        {"smoke": {"width": 16, "depth": 4, "epochs": 300}, "cpu": {}, "paper": {}},
        _run_depth,
    ),
    ExperimentSpec(
        "alignment.adam",
        "alignment",
        "Fig. 15: the theory fitted to Adam training",
        AdamConfig,
        {"smoke": {**_SMALL, "arch": "shallow", "adam_lr": 1e-3}, "cpu": {}, "paper": {}},
        _run_adam,
    ),
    *DATA_EXPERIMENTS,
)
