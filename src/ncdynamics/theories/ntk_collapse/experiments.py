"""Experiments of [1], registered as ``ntk_collapse.<name>``.

Theory demos (seconds): ``phases``, ``invariant``, ``zero-invariant``,
``negative-invariant``, ``equal-bias``. Training experiments (Figures 1, 2, 12) are added
below when the network measurement stack is available.
"""

from __future__ import annotations

from ..experiment import ExperimentSpec
from ._demos import (
    THEORY_PRESETS,
    TheoryConfig,
    run_equal_bias,
    run_invariant,
    run_negative_invariant,
    run_phases,
    run_zero_invariant,
)

__all__ = ["EXPERIMENTS"]

_THEORY = (
    (
        "phases",
        "Residual phases (13)-(15): global, class, single at rates 1 - eta lambda",
        run_phases,
    ),
    (
        "invariant",
        "Theorem 5.1: E (26) conserved by the flow (19), O(eta) drift under GD",
        run_invariant,
    ),
    (
        "zero-invariant",
        "Theorem 5.2: E = 0 and <h> = 0 give NC (NC1 like 1/(2mt))",
        run_zero_invariant,
    ),
    (
        "negative-invariant",
        "App. B.3: E negative gives zero loss without NC1",
        run_negative_invariant,
    ),
    ("equal-bias", "App. B.4: equal biases give NC2 without NC3; corrected theta", run_equal_bias),
)

EXPERIMENTS = tuple(
    ExperimentSpec(
        name=f"ntk_collapse.{short}",
        theory="ntk_collapse",
        summary=summary,
        config=TheoryConfig,
        presets=THEORY_PRESETS,
        run=fn,
    )
    for short, summary, fn in _THEORY
)

from ._train_exps import TRAIN_PRESETS, run_fig1, run_fig2  # noqa: E402
from ._training import TrainConfig  # noqa: E402

_CE = {"loss": "cross-entropy"}
EXPERIMENTS = EXPERIMENTS + (
    ExperimentSpec(
        name="ntk_collapse.fig1",
        theory="ntk_collapse",
        summary="Fig. 1: traced kernels, block norms, kernel-label alignment vs epoch",
        config=TrainConfig,
        presets=TRAIN_PRESETS,
        run=run_fig1,
    ),
    ExperimentSpec(
        name="ntk_collapse.fig2",
        theory="ntk_collapse",
        summary="Fig. 2: invariant norm/alignment and NC of NC vs non-NC models; "
        "LR sweep over three inits (MSE)",
        config=TrainConfig,
        presets=TRAIN_PRESETS,
        run=run_fig2,
    ),
    ExperimentSpec(
        name="ntk_collapse.fig12",
        theory="ntk_collapse",
        summary="Fig. 12: Fig. 2 with cross-entropy loss",
        config=TrainConfig,
        presets={k: {**v, **_CE} for k, v in TRAIN_PRESETS.items()},
        run=run_fig2,
    ),
)
