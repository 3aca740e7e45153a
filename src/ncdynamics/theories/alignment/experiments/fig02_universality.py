"""Figs. 2 and 12 of [1]: the fitted two-point theory across the Table 1 architectures.

Each network is trained once on two points (``setting``: the authors' code by default,
``two_point.TWO_POINT_SETTINGS``) and eq. (7) is fitted to its
recorded ``(a, b, w)`` (App. B); the claim is that two fitted rates match all three curves
for every architecture.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...claims import Part, claim
from ...experiment import RunWriter
from ..training import PairHistory
from .history_fit import HistoryFit
from .plotting import plot_trajectories
from .trials import ALL_TABLE1
from .two_point import arch_summary, log_history, train_and_fit

__all__ = ["UniversalityConfig", "loss_r2", "run_universality", "universality_claims"]


@dataclass(frozen=True)
class UniversalityConfig:
    """Table 1 networks on two points (``setting``); eq. (7) fitted to each (App. B)."""

    archs: tuple[str, ...] = ALL_TABLE1
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2
    r2_threshold: float = 0.9
    #: Two-point setting (``two_point.TWO_POINT_SETTINGS``): the authors' code, or
    #: ``"paper-text"`` (``--set setting=paper-text``).
    setting: str = "authors-code"


def run_universality(
    config: UniversalityConfig, run: RunWriter, *, seed: int, progress: bool
) -> None:
    """Train and fit every architecture; figure ``fig2_fig12_trajectories``."""
    t0 = time.perf_counter()
    hists, fits, train_s = train_and_fit(config, config.archs, seed, progress)
    per = {}
    for a in config.archs:
        log_history(run, a, hists[a], fits[a])
        per[a] = arch_summary(hists[a], fits[a])
    run.save_figure(
        plot_trajectories({a: (hists[a], fits[a]) for a in config.archs}),
        "fig2_fig12_trajectories",
    )
    r2 = {a: (*fits[a].r2, loss_r2(hists[a], fits[a])) for a in config.archs}
    for a in config.archs:
        per[a]["r2_loss"] = r2[a][3]
    run.save_summary(
        {
            "architectures": per,
            "train_seconds": train_s,
            "total_seconds": time.perf_counter() - t0,
            "claims": universality_claims(r2, threshold=config.r2_threshold),
        }
    )


def loss_r2(h: PairHistory, fit: HistoryFit) -> float:
    """R^2 of the pair's eq. (1) loss against the theory's loss curve (eq. 9, Fig. 12)."""
    obs = np.asarray(h.pair_loss, dtype=np.float64)
    sst = float(np.sum((obs - obs.mean()) ** 2))
    sse = float(np.sum((obs - fit.loss_theory) ** 2))
    return 1.0 - sse / sst if sst > 0 else float("nan")


def universality_claims(
    r2: Mapping[str, Sequence[float]], *, threshold: float = 0.9
) -> list[dict[str, Any]]:
    """The claim record of Figs. 2 and 12 of [1]: one part per curve, graded over nets.

    Parameters
    ----------
    r2 : mapping
        ``{architecture: (r2_a, r2_b, r2_w, r2_loss)}``.
    threshold : float
        A curve is matched when its R^2 is at least this.

    Each part's ``ours`` is the fraction of architectures whose curve is matched, and it
    holds only when every architecture's is (the paper says "for all networks").
    """
    parts = []
    for k, name in enumerate(("a = |dh|^2", "b = |dy|^2", "w", "loss (Fig. 12, eq. 9)")):
        ok = [arch for arch, v in r2.items() if v[k] >= threshold]
        frac = len(ok) / len(r2) if r2 else float("nan")
        parts.append(
            Part(
                f"{name} matched for every network",
                f"fraction of architectures with R^2 >= {threshold} == 1",
                frac,
                bool(frac == 1.0),
            )
        )
    return [
        claim(
            "Figs. 2 and 12: for every architecture of Table 1 (different nonlinearities, "
            "depths, widths, convolution, skip connections, dropout) trained on two points, "
            "the two-point theory with two fitted effective rates matches the "
            "representational distance a, the output distance b and the alignment w quite "
            "well, and with a third fitted rate (eq. 9) the training loss.",
            "Figs. 2, 12, Sec. 4.2, App. B.1",
            parts,
        )
    ]
