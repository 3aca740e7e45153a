"""Figures of the empirical NTK recorded by the ``ntk_alignment`` and ``ntk_blocks`` probes.

Drawn from a run's stored arrays and metrics (names written by
:mod:`ncdynamics.probes.ntk_probes`; a Recorder prefix such as ``mse/`` or ``mse.`` is
allowed, names are matched by suffix):

- ``ntk_kernel_heatmaps``: the latest traced logit and feature kernels ([1], Fig. 1a,b), each
  shown as a fraction of its maximum, with lines at the class boundaries;
- ``ntk_block_norms``: the latest Frobenius norms of the logit-pair and feature-pair blocks
  divided by their maximum ([1], Fig. 1c,d);
- ``ntk_alignment``: kernel-label alignment against the step ([1], Fig. 1e), plain lines for
  the uncentred and dashed for the centred alignment;
- ``ntk_block_values``: gamma and kappa (same sample, same class, different class) against
  the step.

The time figures share the run report's x-axis (:func:`ncdynamics.report.figures.time_axis`)
and learning-rate lines; names come from :mod:`ncdynamics.report.labels`.

References
----------
.. [1] E. Seleznova et al. "Neural (Tangent Kernel) Collapse". NeurIPS 2023.
"""

from __future__ import annotations

from typing import Any

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ..runs import Run  # noqa: E402
from .figures import _LINESTYLES, _MARKERS, TimeAxis, lr_changes, time_axis  # noqa: E402
from .labels import label  # noqa: E402

__all__ = ["kernel_figures"]

_OUTPUTS = ("logits", "features")


def _find(names: list[str], key: str) -> str | None:
    """The stored name equal to ``key`` or ending with it after a separator."""
    hits = [n for n in names if n == key or n.endswith(("/" + key, "." + key, "_" + key))]
    return min(hits, key=len) if hits else None


def _latest(run: Run, key: str) -> tuple[int, np.ndarray] | None:
    name = _find(run.array_names(), key)
    if name is None:
        return None
    series = run.arrays(name)
    if not series:
        return None
    step = max(series)
    return step, series[step]


def _class_lines(ax: Any, labels: np.ndarray | None, n: int) -> None:
    if labels is None or len(labels) != n:
        return
    edges = np.flatnonzero(np.diff(labels)) + 0.5
    for e in edges:
        ax.axhline(e, color="white", lw=0.6)
        ax.axvline(e, color="white", lw=0.6)


def _heatmaps(run: Run) -> Figure | None:
    latest = {o: _latest(run, f"ntk_traced_{o}") for o in _OUTPUTS}
    kernels = {o: v for o, v in latest.items() if v is not None}
    if not kernels:
        return None
    lab = _latest(run, "ntk_labels")
    labels = lab[1] if lab is not None else None
    fig, axes = plt.subplots(1, len(kernels), figsize=(4.6 * len(kernels), 4.0), squeeze=False)
    for ax, (o, (step, k)) in zip(axes[0], kernels.items(), strict=True):
        scale = float(np.abs(k).max()) or 1.0
        im = ax.imshow(k / scale, cmap="viridis", interpolation="nearest")
        _class_lines(ax, labels, k.shape[0])
        ax.set_title(f"traced {o} kernel / max, step {step}")
        ax.set_xlabel("sample j (class-ordered)")
        ax.set_ylabel("sample i")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def _block_norms(run: Run) -> Figure | None:
    latest = {o: _latest(run, f"ntk_block_norms_{o}") for o in _OUTPUTS}
    norms = {o: v for o, v in latest.items() if v is not None}
    if not norms:
        return None
    fig, axes = plt.subplots(1, len(norms), figsize=(4.4 * len(norms), 4.0), squeeze=False)
    for ax, (o, (step, b)) in zip(axes[0], norms.items(), strict=True):
        im = ax.imshow(
            b / (float(b.max()) or 1.0), cmap="magma", interpolation="nearest", vmin=0.0, vmax=1.0
        )
        what = "logit" if o == "logits" else "feature"
        ax.set_title(f"{what}-pair block norms / max, step {step}")
        ax.set_xlabel(f"{what} b")
        ax.set_ylabel(f"{what} a")
        fig.colorbar(im, ax=ax, fraction=0.046)
    fig.tight_layout()
    return fig


def _series(metrics: Any, key: str) -> tuple[np.ndarray, np.ndarray] | None:
    if metrics is None or metrics.empty:
        return None
    names = [str(n) for n in metrics["name"].unique()]
    name = _find(names, key)
    if name is None:
        return None
    rows = metrics[metrics["name"] == name].sort_values("step")
    return rows["step"].to_numpy(dtype=float), rows["value"].to_numpy(dtype=float)


def _axis_and_lr(metrics: Any) -> tuple[TimeAxis, list[int]]:
    """The report's time axis and learning-rate changes, from all of the run's metrics."""
    if metrics is None or metrics.empty:
        return time_axis([]), []
    steps = metrics["step"].to_numpy(dtype=float)
    return time_axis([steps]), [c[0] for c in lr_changes(metrics)]


def _style_axes(ax: Any, axis: TimeAxis, lr: list[int]) -> None:
    if axis.scale == "log":
        ax.set_xscale("log")
    for step in lr:
        if axis.scale == "linear" or step > 0:
            ax.axvline(step, color="0.45", ls=":", lw=1.2, zorder=1)
    ax.set_xlabel(axis.label)
    ax.grid(alpha=0.3)


def _plot(ax: Any, i: int, steps: np.ndarray, vals: np.ndarray, axis: TimeAxis, **kw: Any) -> None:
    keep = steps > 0 if axis.scale == "log" else np.ones(steps.shape, dtype=bool)
    ax.plot(
        steps[keep],
        vals[keep],
        marker=_MARKERS[i % len(_MARKERS)],
        markevery=max(1, int(keep.sum()) // 8),
        lw=max(1.0, 2.4 - 0.5 * i),
        zorder=3 + i,
        **kw,
    )


def _alignment(metrics: Any) -> Figure | None:
    lines = []
    for o in _OUTPUTS:
        for centred in (False, True):
            key = f"ntk_alignment_{o}" + ("_centered" if centred else "")
            s = _series(metrics, key)
            if s is not None:
                lines.append((key, o, centred, s))
    if not lines:
        return None
    axis, lr = _axis_and_lr(metrics)
    fig, ax = plt.subplots(figsize=(6.0, 3.8))
    colours = {"logits": "C0", "features": "C1"}
    for i, (key, o, centred, (steps, vals)) in enumerate(lines):
        _plot(
            ax,
            i,
            steps,
            vals,
            axis,
            ls="--" if centred else "-",
            color=colours[o],
            label=label(key).short,
        )
    ax.set_title("Kernel-label alignment (dashed: centred)", fontsize=10)
    ax.set_ylabel(label("ntk_alignment_logits").axis)
    _style_axes(ax, axis, lr)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def _block_values(metrics: Any) -> Figure | None:
    panels = []
    for sym in ("gamma", "kappa"):
        s = {k: _series(metrics, f"ntk_{sym}_{k}") for k in ("d", "c", "n")}
        if any(v is not None for v in s.values()):
            panels.append((sym, s))
    if not panels:
        return None
    axis, lr = _axis_and_lr(metrics)
    fig, axes = plt.subplots(1, len(panels), figsize=(5.0 * len(panels), 3.8), squeeze=False)
    names = {"d": "same sample", "c": "same class", "n": "different class"}
    for ax, (sym, s) in zip(axes[0], panels, strict=True):
        for i, (k, v) in enumerate(s.items()):
            if v is not None:
                lab = label(f"ntk_{sym}_{k}")
                _plot(
                    ax,
                    i,
                    v[0],
                    v[1],
                    axis,
                    ls=_LINESTYLES[i % len(_LINESTYLES)],
                    label=f"{lab.short} ({names[k]})",
                )
        ax.set_title(
            "Logit kernel blocks γ" if sym == "gamma" else "Feature kernel blocks κ", fontsize=10
        )
        ax.set_ylabel("mean kernel entry")
        _style_axes(ax, axis, lr)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def kernel_figures(run: Run) -> list[tuple[str, Figure]]:
    """Figures of the NTK probes recorded in ``run``; ``[]`` when it recorded none.

    Parameters
    ----------
    run : ncdynamics.runs.Run
        An open run (``array_names``, ``arrays``, ``metrics``).

    Returns
    -------
    list of (name, Figure)
        The caller saves and closes them (``run.save_figure``).
    """
    try:
        metrics = run.metrics
    except FileNotFoundError:
        metrics = None
    out = []
    for name, fig in (
        ("ntk_kernel_heatmaps", _heatmaps(run)),
        ("ntk_block_norms", _block_norms(run)),
        ("ntk_alignment", _alignment(metrics)),
        ("ntk_block_values", _block_values(metrics)),
    ):
        if fig is not None:
            out.append((name, fig))
    return out
