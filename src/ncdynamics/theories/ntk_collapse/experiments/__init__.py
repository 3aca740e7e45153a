"""Experiments of [1], one module per figure or result, registered as ``ntk_collapse.<name>``.

Theory demos (seconds, :class:`~._theory_demos.TheoryConfig`):

=========================  ===================================  ============================
name                       result                               module
=========================  ===================================  ============================
``phases``                 residual phases, eqs. (13)-(15)      ``sec41_residual_phases``
``invariant``              Theorem 5.1, E (26) conserved        ``thm51_invariant``
``zero-invariant``         Theorem 5.2, E = 0 gives NC          ``thm52_zero_invariant``
``negative-invariant``     App. B.3, E negative: no NC1         ``appb3_negative_invariant``
``equal-bias``             App. B.4, NC2 without NC3            ``appb4_equal_bias``
=========================  ===================================  ============================

Training experiments (:class:`~ncdynamics.theories.ntk_collapse.training_recipe.TrainConfig`):
``fig1`` (``fig1_kernel_blocks``), ``fig2`` (``fig2_invariant_vs_collapse``) and ``fig12``
(``fig12_cross_entropy``, Fig. 2 with cross-entropy).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

from ...experiment import ExperimentFn, ExperimentSpec  # noqa: E402
from ..training_recipe import TRAIN_PRESETS, TrainConfig  # noqa: E402
from ._theory_demos import THEORY_PRESETS, TheoryConfig  # noqa: E402
from .appb3_negative_invariant import run_negative_invariant  # noqa: E402
from .appb4_equal_bias import run_equal_bias  # noqa: E402
from .fig1_kernel_blocks import run_fig1  # noqa: E402
from .fig2_invariant_vs_collapse import run_fig2  # noqa: E402
from .fig12_cross_entropy import FIG12_PRESETS, run_fig12  # noqa: E402
from .sec41_residual_phases import run_phases  # noqa: E402
from .thm51_invariant import run_invariant  # noqa: E402
from .thm52_zero_invariant import run_zero_invariant  # noqa: E402

__all__ = ["EXPERIMENTS"]


_DEMOS: tuple[tuple[str, str, ExperimentFn], ...] = (
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

EXPERIMENTS: tuple[ExperimentSpec, ...] = tuple(
    ExperimentSpec(
        name=f"ntk_collapse.{short}",
        theory="ntk_collapse",
        summary=summary,
        config=TheoryConfig,
        presets=THEORY_PRESETS,
        run=fn,
        uses_device=False,  # the block flow and its closed forms, in NumPy
    )
    for short, summary, fn in _DEMOS
) + (
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
        resumable=True,  # each finished training of the sweep is kept
    ),
    ExperimentSpec(
        name="ntk_collapse.fig12",
        theory="ntk_collapse",
        summary="Fig. 12: Fig. 2 with cross-entropy loss",
        config=TrainConfig,
        presets=FIG12_PRESETS,
        run=run_fig12,
        resumable=True,
    ),
)
