"""Fig. 3 of [1]: the default 20 x 500 network at five initial weight scales.

Small initial weights give a long loss plateau (rich regime), large ones an immediate decay
(lazy regime); at very high weights the two-point theory no longer fits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...claims import Part, claim
from ...experiment import RunWriter
from .plotting import plot_trajectories
from .two_point import arch_summary, log_history, train_and_fit

__all__ = ["INIT_SWEEP", "InitSweepConfig", "init_sweep_claims", "run_init_sweep"]

#: The initial-weight rows of Table 1 of [1], from the smallest gain to the largest.
INIT_SWEEP = ("low-init", "default", "intermediate-init", "high-init", "very-high-init")


@dataclass(frozen=True)
class InitSweepConfig:
    """Default 20 x 500 net at five initial weight scales (Table 1, bottom rows)."""

    archs: tuple[str, ...] = INIT_SWEEP
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2
    #: Two-point setting (``two_point.TWO_POINT_SETTINGS``): the authors' code, or
    #: ``"paper-text"`` (``--set setting=paper-text``).
    setting: str = "authors-code"


def run_init_sweep(config: InitSweepConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Train and fit every gain; figure ``fig3_init_sweep``."""
    hists, fits, train_s = train_and_fit(config, config.archs, seed, progress)
    per = {a: arch_summary(hists[a], fits[a]) for a in config.archs}
    for a in config.archs:
        log_history(run, a, hists[a], fits[a])
    run.save_figure(
        plot_trajectories({a: (hists[a], fits[a]) for a in config.archs}), "fig3_init_sweep"
    )
    a_growth = {a: float(hists[a].a[-1] / hists[a].a[0]) for a in config.archs}
    run.save_summary(
        {
            "architectures": per,
            "train_seconds": train_s,
            "a_final_over_a0": a_growth,
            "claims": init_sweep_claims(
                {a: per[a]["plateau_epochs"] for a in config.archs},
                {a: min(fits[a].r2) for a in config.archs},
            ),
        }
    )


def init_sweep_claims(
    plateau: Mapping[str, int], min_r2: Mapping[str, float], *, r2_threshold: float = 0.9
) -> list[dict[str, Any]]:
    """The claim record of Fig. 3 of [1].

    Parameters
    ----------
    plateau : mapping
        ``{config: epochs until the loss falls below half its plateau Y/8}``, ordered from
        the smallest initial gain to the largest (``INIT_SWEEP``).
    min_r2 : mapping
        ``{config: min R^2 of the fitted theory over a, b, w}``, same order.
    r2_threshold : float
        The theory matches a net when its min R^2 is at least this (the Fig. 2 criterion).

    The plateau parts compare the smallest gain with the largest-but-one (the largest is
    the "very high" net, whose fit the claim expects to fail); "shortens" is graded as the
    fraction of steps up in gain over which the plateau does not lengthen.
    """
    names = list(plateau)
    first, last = names[0], names[-2] if len(names) > 2 else names[-1]
    p_small, p_large = plateau[first], plateau[last]
    steps = [plateau[b] <= plateau[a] for a, b in zip(names[:-1], names[1:], strict=True)]
    frac = sum(steps) / len(steps) if steps else float("nan")
    top = names[-1]
    parts = [
        Part(
            "small initial weights: a loss plateau",
            f"plateau epochs of {first} > 3 x those of {last}",
            {first: p_small, last: p_large},
            bool(p_small > 3 * max(p_large, 1)),
        ),
        Part(
            "the plateau shortens as the initial weights grow",
            "fraction of steps up in gain where the plateau does not lengthen == 1",
            frac,
            bool(frac == 1.0),
        ),
        Part(
            "very high initial weights: the theory no longer matches",
            f"min R^2 over a, b, w of {top} < {r2_threshold}",
            min_r2[top],
            bool(min_r2[top] < r2_threshold),
        ),
        Part(
            "very high initial weights: fitted worse than at small ones",
            f"min R^2 of {top} < min R^2 of {first}",
            {top: min_r2[top], first: min_r2[first]},
            bool(min_r2[top] < min_r2[first]),
        ),
    ]
    return [
        claim(
            "Fig. 3: trained on two points, the default 20-layer net shows a plateau in the "
            "representational distance and the loss at small initial weights, which "
            "disappears as the initial weights grow; at very high initial weights, where the "
            "representations start far apart, the two-point approximation breaks down.",
            "Fig. 3, Sec. 4.3, App. B.1",
            parts,
        )
    ]
