"""The experiments of [1], registered as ``alignment.*``: one module per paper figure.

=============================  ==========================  ===================================
``alignment.universality``     :mod:`.fig02_universality`    Figs. 2, 12: Table 1 architectures
``alignment.init-sweep``       :mod:`.fig03_init_sweep`      Fig. 3: initial-weight sweep
``alignment.digits``           :mod:`.fig04_digits`          Figs. 4, 9, 14 on MNIST / mnist-5k
``alignment.final-distance``   :mod:`.fig05_final_distance`  Fig. 5: final distance vs eq. (10)
``alignment.xor``              :mod:`.fig06_xor`             Fig. 6 (16 with Adam)
``alignment.blobs``            :mod:`.fig07_blobs`           Figs. 7, 8, 13 (17 with Adam)
``alignment.depth``            :mod:`.fig10_depth`           Fig. 10: a fit per hidden layer
``alignment.alternatives``     :mod:`.fig11_alternatives`    Fig. 11: eq. (7) vs eq. (51)
``alignment.adam``             :mod:`.fig15_adam`            Fig. 15: the theory on Adam
``alignment.readings``         :mod:`.readings_sweep`        Figs. 2, 11 under unstated readings
=============================  ==========================  ===================================

Shared recipe: :mod:`.trials` (one trained network per call, for the process pool),
:mod:`.history_fit` (eq. (7) fitted to a recorded history), :mod:`.two_point` (the two-point
recipe of Figs. 2, 3, 5, 10, 11, 15) and :mod:`.plotting` (figures drawn by several
experiments).

Presets: ``smoke`` (a few seconds, tiny nets), ``cpu`` (the paper's networks where they fit
the budget, fewer seeds), ``paper`` (the paper's settings) and, for Figs. 2/12, 4/9, 10 and
the readings, ``gpu`` (the ``paper`` settings on a device machine: ``mnist-5k`` for MNIST,
8 trial processes). Trials run in parallel
processes through :func:`ncdynamics.training.run_trials` (1 thread each).
"""

from __future__ import annotations

from typing import Any

from ...experiment import ExperimentSpec
from .fig02_universality import UniversalityConfig, run_universality
from .fig03_init_sweep import InitSweepConfig, run_init_sweep
from .fig04_digits import DigitsConfig, run_digits
from .fig05_final_distance import FinalDistanceConfig, run_final_distance
from .fig06_xor import XorConfig, run_xor
from .fig07_blobs import BlobsConfig, run_blobs
from .fig10_depth import DepthConfig, run_depth
from .fig11_alternatives import AlternativesConfig, run_alternatives
from .fig15_adam import AdamConfig, run_adam
from .readings_sweep import ReadingsConfig, run_readings
from .trials import ALL_TABLE1

__all__ = ["EXPERIMENTS"]

#: Reduced networks of the two-point smoke presets.
_SMALL_TWO_POINT: dict[str, Any] = {"width": 16, "depth": 2, "epochs": 200, "workers": 1}
#: Reduced networks of the XOR, blob and digit smoke presets.
_SMALL_DATA: dict[str, Any] = {"width": 16, "epochs": 200, "workers": 1}

EXPERIMENTS: tuple[ExperimentSpec, ...] = (
    ExperimentSpec(
        "alignment.universality",
        "alignment",
        "Fig. 2/12: the fitted two-point theory across the Table 1 architectures",
        UniversalityConfig,
        {
            "smoke": {**_SMALL_TWO_POINT, "archs": ("shallow",)},
            "cpu": {},
            "paper": {},
            "gpu": {"workers": 8},
        },
        run_universality,
    ),
    ExperimentSpec(
        "alignment.init-sweep",
        "alignment",
        "Fig. 3: plateau at small initial weights, lazy decay at large ones",
        InitSweepConfig,
        {
            "smoke": {**_SMALL_TWO_POINT, "archs": ("low-init", "high-init")},
            "cpu": {},
            "paper": {},
        },
        run_init_sweep,
    ),
    ExperimentSpec(
        "alignment.final-distance",
        "alignment",
        "Fig. 5: final representational distance against eq. (10)",
        FinalDistanceConfig,
        {
            "smoke": {**_SMALL_TWO_POINT, "archs": ("shallow",), "n_fit_seeds": 1, "grid": 2},
            "cpu": {"n_fit_seeds": 5},
            "paper": {"archs": ALL_TABLE1},
        },
        run_final_distance,
    ),
    ExperimentSpec(
        "alignment.alternatives",
        "alignment",
        "Fig. 11: eq. (7) against the alternative dynamics (51)",
        AlternativesConfig,
        {
            "smoke": {**_SMALL_TWO_POINT, "archs": ("shallow",)},
            "cpu": {"archs": ("default", "shallow")},
            "paper": {},
        },
        run_alternatives,
    ),
    ExperimentSpec(
        "alignment.readings",
        "alignment",
        "Figs. 2/11 under the readings the paper leaves unstated (MSE, pre/post, layer, slope, lr)",
        ReadingsConfig,
        {
            "smoke": {
                **_SMALL_TWO_POINT,
                "archs": ("shallow",),
                "losses": ("sum-mse",),
                "lr_scales": (),
                "slopes": (0.2,),
                "layer_fractions": (0.5,),
            },
            # Every reading of the paper preset: the two-point nets are small enough (about
            # 13 min on two cores per seed, 7 trainings per architecture).
            "cpu": {},
            "paper": {},
            "gpu": {"workers": 8},
        },
        run_readings,
    ),
    ExperimentSpec(
        "alignment.depth",
        "alignment",
        "Fig. 10: fit quality and rates per hidden layer",
        DepthConfig,
        {
            "smoke": {"width": 16, "depth": 4, "epochs": 300},
            "cpu": {},
            "paper": {},
            "gpu": {},
        },
        run_depth,
    ),
    ExperimentSpec(
        "alignment.adam",
        "alignment",
        "Fig. 15: the theory fitted to Adam training",
        AdamConfig,
        {
            "smoke": {**_SMALL_TWO_POINT, "arch": "shallow", "adam_lr": 1e-3},
            "cpu": {},
            "paper": {},
        },
        run_adam,
    ),
    ExperimentSpec(
        "alignment.xor",
        "alignment",
        "Fig. 6: XOR representational structure vs eq. (10)",
        XorConfig,
        {
            "smoke": {
                **_SMALL_DATA,
                "depth": 2,
                "configs": ("xor-low",),
                "rho_arch": "shallow",
                "rho_epochs": 200,
            },
            "cpu": {},
            "paper": {},
        },
        run_xor,
    ),
    ExperimentSpec(
        "alignment.blobs",
        "alignment",
        "Figs. 7/8/13: feature collapse on orthogonal blobs",
        BlobsConfig,
        {
            "smoke": {
                **_SMALL_DATA,
                "n_positions": 6,
                "configs": ("blobs-low", "blobs-high"),
                "n_mds": 72,
            },
            "cpu": {},
            "paper": {},
        },
        run_blobs,
    ),
    ExperimentSpec(
        "alignment.digits",
        "alignment",
        "Figs. 4/9/14: digit pair trajectory, representational structure, Taylor terms",
        DigitsConfig,
        {
            # smoke on the embedded 8x8 digits: it needs no optional package (the cpu
            # preset reads mnist-5k, the paper preset MNIST's files)
            "smoke": {
                **_SMALL_DATA,
                "dataset": "digits",
                "epochs": 3,
                "n_seeds": 1,
                "n_probe": 30,
                "n_taylor_pairs": 50,
            },
            "cpu": {"n_seeds": 5},
            # the paper's data: all of MNIST from `root` (no quiet fall-back to mnist-5k)
            "paper": {"dataset": "mnist"},
            # the paper's nets, seeds and epochs on the MNIST images a device machine holds
            "gpu": {"dataset": "mnist-5k", "workers": 8},
        },
        run_digits,
    ),
)
