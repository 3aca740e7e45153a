"""Figure 12 of [1] (App. C): Figure 2 with the cross-entropy loss: ``ntk_collapse.fig12``.

The experiment is :func:`~.fig2_invariant_vs_collapse.run_fig2` itself; only the loss of
every preset changes (``loss="cross-entropy"``). The invariant E and its theory assume MSE,
so this is the paper's check of how far the picture carries over.
"""

from __future__ import annotations

from typing import Any

from ..training_recipe import TRAIN_PRESETS
from .fig2_invariant_vs_collapse import run_fig2

__all__ = ["FIG12_PRESETS", "run_fig12"]

#: The presets of Fig. 2 with ``loss="cross-entropy"``.
FIG12_PRESETS: dict[str, dict[str, Any]] = {
    k: {**v, "loss": "cross-entropy"} for k, v in TRAIN_PRESETS.items()
}

#: Figure 12 runs Figure 2's experiment (the loss comes from the config).
run_fig12 = run_fig2
