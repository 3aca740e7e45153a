"""Experiments of [1], one module per figure or theorem, and their registry ``EXPERIMENTS``.

=============================  ===============  =============================================
module                         experiment       what it reproduces
=============================  ===============  =============================================
``fig1_logit_separation``      ``lesde.fig1``   Fig. 1: GEOMNIST logits separate by class
``fig3_elasticity_estimates``  ``lesde.fig3``   Fig. 3: A, B, alpha, beta estimated, and E
                                                measured directly
``fig4_phase_transition``      ``lesde.fig4``   Fig. 4: phase transition in label noise
``fig5_leode_imitation``       ``lesde.fig5``   Fig. 5: the LE-ODE imitates real logits
``thm21_binary_separation``    ``lesde.thm21``  Theorem 2.1 by Monte Carlo
``thm31_decaying_elasticity``  ``lesde.thm31``  Theorem 3.1 by Monte Carlo
=============================  ===============  =============================================

Shared by the figures: :mod:`.geomnist_trials` (the GEOMNIST LeNet trials recipe),
:mod:`.claims` (the claim record of every summary) and :mod:`.plotting`.

Presets: ``smoke`` (seconds, plumbing only), ``cpu`` (R = 20 LeNets, T = 10^4 iterations,
n = 500 per class: the reference code's horizon), ``paper`` (R = 100, T = 10^5 as stated in
[1], Sec. 4.1) and, for Figs. 3-5 on GEOMNIST, ``gpu`` (the ``paper`` settings, run on a
device machine by ``make gpu-campaign``). Time is the SGD iteration index throughout.
"""

from __future__ import annotations

from typing import Any

from ...experiment import ExperimentSpec
from .fig1_logit_separation import Fig1Config, run_fig1
from .fig3_elasticity_estimates import Fig3Config, run_fig3
from .fig4_phase_transition import Fig4Config, run_fig4
from .fig5_leode_imitation import Fig5Config, run_fig5
from .thm21_binary_separation import Thm21Config, run_thm21
from .thm31_decaying_elasticity import Thm31Config, run_thm31

__all__ = ["EXPERIMENTS"]

_SMOKE_TRAIN: dict[str, Any] = {
    "n_train_per_class": 30,
    "n_test_per_class": 10,
    "n_trials": 3,
    "n_iter": 150,
    "eval_every": 50,
    "val_subset": 30,
}
_SMOKE_FIG3: dict[str, Any] = {
    **_SMOKE_TRAIN,
    "window": 21,
    "probe_per_class": 4,
    "sources_per_class": 2,
    "elasticity_nets": 1,
}
_PAPER_TRAIN: dict[str, Any] = {
    "dtype": "float64",  # the authors' LeNets are float64 (src/models.py line 49)
    "n_trials": 100,
    "n_iter": 100_000,
    "eval_every": 1000,
    "val_subset": 1500,
}
#: The GEOMNIST figures on a device machine: the paper's R = 100 LeNets and T = 10^5 (GEOMNIST
#: is generated, so nothing differs from ``paper``; the preset names what the campaign runs).
_GPU_TRAIN: dict[str, Any] = dict(_PAPER_TRAIN)
#: Where the CIFAR presets keep the CIFAR-10 files (fetched and checksummed on first use).
CIFAR_ROOT = "~/.cache/ncdynamics/cifar10"
_CIFAR: dict[str, Any] = {"dataset": "cifar10", "root": CIFAR_ROOT, "download": True}
#: CIFAR at cpu scale: the authors' code sizes (2,000 / 500 per class) and horizon (3 x 10^4).
_CPU_CIFAR: dict[str, Any] = {
    **_CIFAR,
    "n_train_per_class": 2000,
    "n_test_per_class": 500,
    "n_iter": 30_000,
    "eval_every": 1000,
    "val_subset": 300,
}
#: CIFAR as [1] states it: 5,000 / 1,000 per class, T = 3 x 10^5, lr 0.005, R = 100.
_PAPER_CIFAR: dict[str, Any] = {
    **_CIFAR,
    "dtype": "float64",
    "n_train_per_class": 5000,
    "n_test_per_class": 1000,
    "n_trials": 100,
    "n_iter": 300_000,
    "eval_every": 1000,
    "val_subset": 3000,
}

EXPERIMENTS = (
    ExperimentSpec(
        name="lesde.fig1",
        theory="lesde",
        summary="Fig. 1: logits of R GEOMNIST LeNets separate (1-D on nu, 3-D class means)",
        config=Fig1Config,
        run=run_fig1,
        presets={"smoke": {**_SMOKE_TRAIN, "n_snapshots": 10}, "cpu": {}, "paper": _PAPER_TRAIN},
    ),
    ExperimentSpec(
        name="lesde.fig3",
        theory="lesde",
        summary="Fig. 3: A, B, alpha, beta by the l/L/projection estimators and direct probes",
        config=Fig3Config,
        run=run_fig3,
        presets={
            "smoke": _SMOKE_FIG3,
            # the authors' notebook's window, 151 ("LE-SDE Data Analysis.ipynb" cells 21, 23;
            # Fig. D.3); the text's 191: --set window=191
            "cpu": {"window": 151},
            "paper": {**_PAPER_TRAIN, "n_trials": 100, "window": 151},
            "gpu": {**_GPU_TRAIN, "window": 151},
        },
    ),
    ExperimentSpec(
        name="lesde.fig4",
        theory="lesde",
        summary="Fig. 4: phase transition in label noise p_err (val curves, tail indices)",
        config=Fig4Config,
        run=run_fig4,
        presets={
            "smoke": {
                **_SMOKE_TRAIN,
                "n_trials": 2,
                "n_iter": 160,
                "p_errs": (0.0, 0.8),
                "workers": 1,
                "tail": 50,
            },
            "cpu": {},
            "paper": {
                **_PAPER_TRAIN,
                "p_errs": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 2.0 / 3.0, 0.7, 0.8),
            },
            "gpu": {
                **_GPU_TRAIN,
                "p_errs": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 2.0 / 3.0, 0.7, 0.8),
                "workers": 8,
            },
        },
    ),
    ExperimentSpec(
        name="lesde.fig5",
        theory="lesde",
        summary="Fig. 5: LE-ODE driven by estimated rates imitates real logits (RD)",
        config=Fig5Config,
        run=run_fig5,
        presets={
            "smoke": {**_SMOKE_TRAIN, "n_runs": 20, "tail": 50},
            "cpu": {},
            "paper": _PAPER_TRAIN,
            "gpu": _GPU_TRAIN,
        },
    ),
    ExperimentSpec(
        name="lesde.fig1_cifar",
        theory="lesde",
        summary="Fig. 1(c)-(d): logits of R CIFAR-10 LeNets (3 classes) separate",
        config=Fig1Config,
        run=run_fig1,
        presets={
            "smoke": {**_SMOKE_TRAIN, "n_snapshots": 10},
            "cpu": {**_CPU_CIFAR, "pair": (1, 2)},
            "paper": {**_PAPER_CIFAR, "pair": (1, 2)},
        },
    ),
    ExperimentSpec(
        name="lesde.fig3_cifar",
        theory="lesde",
        summary="Fig. 3 (CIFAR-10, 3 classes): A, B, alpha, beta estimated, E measured directly",
        config=Fig3Config,
        run=run_fig3,
        presets={
            "smoke": _SMOKE_FIG3,
            "cpu": {**_CPU_CIFAR, "window": 551},
            "paper": {**_PAPER_CIFAR, "window": 551},
        },
    ),
    ExperimentSpec(
        name="lesde.fig5_cifar",
        theory="lesde",
        summary="Fig. 5(c)-(d): LE-ODE imitates the logits of CIFAR-10 LeNets (3 classes)",
        config=Fig5Config,
        run=run_fig5,
        presets={
            "smoke": {**_SMOKE_TRAIN, "n_runs": 20, "tail": 50},
            "cpu": _CPU_CIFAR,
            "paper": _PAPER_CIFAR,
        },
    ),
    ExperimentSpec(
        name="lesde.thm21",
        theory="lesde",
        summary="Theorem 2.1: binary separation iff alpha > beta (Monte Carlo)",
        config=Thm21Config,
        run=run_thm21,
        uses_device=False,  # Monte Carlo of the SDE in NumPy
        presets={
            "smoke": {"n_reps": 10, "n": 50, "h": 0.05, "alphas": (-0.2, 0.4)},
            "cpu": {},
            "paper": {"n_reps": 1000},
        },
    ),
    ExperimentSpec(
        name="lesde.thm31",
        theory="lesde",
        summary="Theorem 3.1: separation iff gamma(t) decays slower than 1/t (Monte Carlo)",
        config=Thm31Config,
        run=run_thm31,
        uses_device=False,  # Monte Carlo of the SDE in NumPy
        presets={
            "smoke": {"n_reps": 4, "rs": (0.5, 1.5), "n": 30, "h": 0.2, "method": "meandiff"},
            "cpu": {},
            "paper": {"n_reps": 200, "t_end": 2000.0},
        },
    ),
)
