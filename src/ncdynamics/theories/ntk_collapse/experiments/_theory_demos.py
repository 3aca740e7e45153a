"""What the five theory demos of [1] share: their config and presets, the NC metrics along a
simulated flow, how a series is logged, and the collapse-panel figure.

The demos (``ntk_collapse.phases``, ``invariant``, ``zero-invariant``, ``negative-invariant``,
``equal-bias``) run in seconds on float64 NumPy; each lives in the module named after its
result.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray

from ....probes.collapse import collapse_metrics
from ...experiment import RunWriter
from ...integrate import Trajectory
from ...labels import class_major_labels
from ..decomposition import within_class_gram
from ..invariants import invariant
from ..model import BlockParams, State, loss

__all__ = [
    "THEORY_PRESETS",
    "TheoryConfig",
    "block_params",
    "collapse_series",
    "flow_times",
    "log_series",
    "plot_collapse_panels",
]


@dataclass(frozen=True)
class TheoryConfig:
    """Sizes, kernel values and time span of a theory demo (defaults: the ``cpu`` preset).

    ``n_classes`` is C, ``n_per_class`` m, ``n_features`` n; ``kappa_*`` the feature-kernel
    block values; the flow is sampled at 0 and ``n_times`` log-spaced times up to ``t_end``;
    ``beta`` is the common bias of the equal-bias demo and ``learning_rates`` the GD steps of
    the invariant demo.
    """

    n_classes: int = 4
    n_per_class: int = 5
    n_features: int = 12
    kappa_d: float = 3.0
    kappa_c: float = 1.0
    kappa_n: float = 0.2
    t_end: float = 2e4
    n_times: int = 40
    beta: float = 0.6
    learning_rates: tuple[float, ...] = (4e-3, 2e-3, 1e-3)


#: Presets of the theory demos: overrides of :class:`TheoryConfig`.
THEORY_PRESETS: dict[str, dict[str, Any]] = {
    "smoke": {
        "n_classes": 3,
        "n_per_class": 3,
        "n_features": 6,
        "t_end": 100.0,
        "n_times": 8,
        "learning_rates": (4e-3, 2e-3),
    },
    "cpu": {},
    "paper": {"n_classes": 10, "n_per_class": 12, "n_features": 64, "t_end": 1e4, "n_times": 30},
}


def block_params(cfg: TheoryConfig) -> BlockParams:
    """The :class:`BlockParams` of a demo config."""
    return BlockParams(
        cfg.n_classes, cfg.n_per_class, cfg.n_features, cfg.kappa_d, cfg.kappa_c, cfg.kappa_n
    )


def flow_times(cfg: TheoryConfig) -> NDArray[np.float64]:
    """``0`` and ``n_times`` log-spaced times from 0.01 to ``t_end``."""
    return np.concatenate([[0.0], np.logspace(-2, np.log10(cfg.t_end), cfg.n_times)])


def collapse_series(traj: Trajectory, p: BlockParams) -> dict[str, NDArray[np.float64]]:
    """NC metrics and theory norms along a flow of ``simulate.simulate_flow``.

    Returns time-first arrays ``loss`` (eq. (4)), ``nc1_std``, ``nc2_etf``, ``nc3``, ``nc4``
    (:func:`ncdynamics.probes.collapse_metrics`), ``h2_norm`` (``||H2 H2^T||_F``) and
    ``invariant_norm`` (``||E||_F``, eq. (26)).
    """
    labels = class_major_labels(p.n_classes, p.n_per_class)
    out: dict[str, list[float]] = {
        "loss": [],
        "nc1_std": [],
        "nc2_etf": [],
        "nc3": [],
        "nc4": [],
        "h2_norm": [],
        "invariant_norm": [],
    }
    for k in range(traj.ts.size):
        s = State.unpack(traj.ys[k], p)
        nc = collapse_metrics(s.H.T, labels, s.W, s.b)
        out["loss"].append(loss(s, p))
        for key in ("nc1_std", "nc2_etf", "nc3", "nc4"):
            out[key].append(nc[key])
        out["h2_norm"].append(float(np.linalg.norm(within_class_gram(s.H, p.n_classes))))
        out["invariant_norm"].append(float(np.linalg.norm(invariant(s, p))))
    return {k: np.array(v) for k, v in out.items()}


def log_series(
    run: RunWriter, ts: NDArray[np.float64], series: dict[str, NDArray[Any]], prefix: str
) -> None:
    """Log each series under ``prefix`` and the flow time as ``time``, one step per time."""
    for k in range(ts.size):
        run.log(k, {f"{prefix}{name}": float(v[k]) for name, v in series.items()})
        run.log(k, {"time": float(ts[k])})
    run.flush()


def plot_collapse_panels(
    run: RunWriter,
    ts: NDArray[np.float64],
    series: dict[str, dict[str, NDArray[np.float64]]],
    name: str,
    *,
    m: int,
) -> None:
    """Loss, NC1-NC3, ``||H2 H2^T||`` (with ``1/(2 m t)``) and ``||E||`` against flow time."""
    keys = ("loss", "nc1_std", "nc2_etf", "nc3", "h2_norm", "invariant_norm")
    fig, axes = plt.subplots(2, 3, figsize=(13, 7))
    t = np.maximum(ts, ts[1] / 2)
    for ax, key in zip(axes.ravel(), keys, strict=True):
        for label, ser in series.items():
            ax.loglog(t, np.maximum(ser[key], 1e-30), label=label)
        if key == "h2_norm":
            ax.loglog(t[1:], 1.0 / (2 * m * t[1:]), ls=":", color="k", label="1/(2mt)")
        ax.set_title(key)
        ax.set_xlabel("flow time")
        ax.legend(fontsize=8)
    run.save_figure(fig, name)
