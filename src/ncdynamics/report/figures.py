"""Figures of recorded metrics against time, for one run or several.

What the figures show, and how they decide it:

- **Panels** are named through :mod:`ncdynamics.report.labels` (title, y-axis label with
  its unit, preferred scale). Metrics are grouped by their key after the series prefix, so
  ``mse/nc/nc1`` and ``adam/nc/nc1`` share a panel, one line each; any Recorder
  ``prefix=`` works (see :func:`ncdynamics.report.labels.split_names`).
- **One time axis** for every panel of a report (:func:`time_axis`): linear, unless the
  records are log-spaced (gaps that grow by 10x or more over more than two decades), then
  logarithmic with step 0 left out; the axis label says which.
- **Learning-rate changes** (where a recorded ``lr`` changes value) are dotted vertical lines
  on every panel; the ``lr`` series itself is then not drawn (:func:`lr_changes`).
- **Constant and once-recorded metrics** are not drawn: :func:`static_metrics` lists them
  for a table, so a run recorded once gives a table instead of a page of single dots.
- **Overlapping lines** stay visible: each series has its own colour, line style and
  (sparse, offset) markers, and later series are drawn thinner on top of earlier ones.
- **Several runs** (:func:`comparison_figures`): runs whose configurations differ only in
  the seed form one group, drawn as the mean with a band from the minimum to the maximum.
- **Class means** (:func:`class_means_figures`): the recorded class means projected on
  their two principal directions over time, and the cosine Gram of the final centred means.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import matplotlib

matplotlib.use("Agg", force=False)
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from numpy.typing import NDArray  # noqa: E402

from ..runs import Run  # noqa: E402
from .labels import FAMILIES, MetricLabel, label, sort_key, split_names  # noqa: E402

__all__ = [
    "Series",
    "TimeAxis",
    "class_means_figures",
    "comparison_figures",
    "lr_changes",
    "metric_figures",
    "metric_groups",
    "overview_figure",
    "static_metrics",
    "time_axis",
]

_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2")
_LINESTYLES = ("-", "--", "-.", ":")
_MARKERS = ("o", "s", "^", "D", "v", "P", "X")
_OVERVIEW_KEYS = ("nc/nc1", "test/accuracy", "train/loss")


@dataclass(frozen=True)
class Series:
    """One line of a panel: values against steps, with an optional band.

    Attributes
    ----------
    label : str
        Legend entry (``""`` for a lone series).
    steps, values : ndarray of shape (n_records,)
    low, high : ndarray of shape (n_records,) or None
        The band drawn around ``values`` (several seeds: their minimum and maximum).
    """

    label: str
    steps: NDArray[np.float64]
    values: NDArray[np.float64]
    low: NDArray[np.float64] | None = None
    high: NDArray[np.float64] | None = None


@dataclass(frozen=True)
class TimeAxis:
    """The x-axis shared by the panels of one report: ``scale`` and its ``label``."""

    scale: Literal["linear", "log"]
    label: str


def _is_log_spaced(steps: NDArray[np.float64]) -> bool:
    pos = np.unique(steps[np.isfinite(steps) & (steps > 0)])
    if pos.size < 5 or pos[-1] / pos[0] <= 100:
        return False
    gaps = np.diff(pos)
    first, last = np.median(gaps[:3]), np.median(gaps[-3:])
    return bool(last >= 10 * first)


def time_axis(steps: Iterable[NDArray[np.float64]], *, unit: str = "step") -> TimeAxis:
    """The x-axis for records at ``steps``: linear, or log when they are log-spaced.

    Records are log-spaced when the gaps between them grow at least tenfold from the first
    to the last records over more than two decades of steps (a geometric schedule). Then
    the axis is logarithmic and step 0, when recorded, is left out (the label says so).

    >>> time_axis([np.arange(0.0, 201.0)], unit="epoch").label
    'epoch'
    >>> time_axis([np.array([0.0, 1, 2, 4, 8, 16, 32, 64, 128, 256, 512])]).label
    'step (log scale; step 0 not shown)'
    """
    arrays = [np.asarray(s, dtype=float).ravel() for s in steps]
    all_steps = np.concatenate(arrays) if arrays else np.zeros(0)
    if _is_log_spaced(all_steps):
        zero = bool(np.any(all_steps <= 0))
        extra = f"; {unit} 0 not shown" if zero else ""
        return TimeAxis("log", f"{unit} (log scale{extra})")
    return TimeAxis("linear", unit)


def _file_name(family: str) -> str:
    """A metric family as a figure file name: characters other than letters, digits, ``.``,
    ``_`` and ``-`` become ``-`` (metric names are free text; file names are not)."""
    return "".join(c if c.isascii() and (c.isalnum() or c in "._-") else "-" for c in family)


def metric_groups(metrics: pd.DataFrame) -> dict[str, list[str]]:
    """Map each metric key (series prefix removed) to the full names that carry it."""
    split = split_names(str(n) for n in metrics["name"].unique())
    groups: dict[str, list[str]] = defaultdict(list)
    for name, (_, key) in split.items():
        groups[key].append(name)
    return {k: sorted(v) for k, v in sorted(groups.items())}


def _by_name(metrics: pd.DataFrame) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    out = {}
    for name, df in metrics.groupby("name", sort=True):
        df = df.sort_values("step")
        out[str(name)] = (
            df["step"].to_numpy(dtype=float),
            pd.to_numeric(df["value"], errors="coerce").to_numpy(dtype=float),
        )
    return out


def _changes(
    steps: NDArray[np.float64], values: NDArray[np.float64]
) -> list[tuple[int, float, float]]:
    out = []
    for i in range(1, len(values)):
        a, b = values[i - 1], values[i]
        if np.isfinite(a) and np.isfinite(b) and not np.isclose(a, b, rtol=1e-9, atol=0.0):
            out.append((int(steps[i]), float(a), float(b)))
    return out


def lr_changes(metrics: pd.DataFrame) -> list[tuple[int, float, float]]:
    """Where a recorded learning rate (key ``lr``, any prefix) changes: ``(step, before,
    after)``, sorted by step, each step once (the first series that changes there)."""
    if metrics.empty:
        return []
    series = _by_name(metrics)
    found: dict[int, tuple[int, float, float]] = {}
    for key, names in metric_groups(metrics).items():
        if key != "lr":
            continue
        for name in names:
            for change in _changes(*series[name]):
                found.setdefault(change[0], change)
    return [found[s] for s in sorted(found)]


def _constant(values: NDArray[np.float64]) -> bool:
    v = values[np.isfinite(values)]
    return v.size >= 2 and bool(np.allclose(v, v[0], rtol=1e-9, atol=0.0))


def static_metrics(metrics: pd.DataFrame) -> pd.DataFrame:
    """The metrics not worth a panel: constant over the run, or recorded at one step only.

    A key is static when every series of it is (a learning rate that changes is not: it is
    drawn as :func:`lr_changes` lines). Returns a frame with columns ``key``, ``label``,
    ``series`` (the prefix, ``""`` for none), ``value`` (the last finite value), ``step``
    (the last record's step) and ``kind`` (``"constant"`` or ``"recorded once"``), ordered
    as the labels' families.
    """
    cols = ["key", "label", "series", "value", "step", "kind"]
    if metrics.empty:
        return pd.DataFrame(columns=cols)
    series = _by_name(metrics)
    split = split_names(series)
    rows = []
    for key, names in metric_groups(metrics).items():
        arrays = [series[n] for n in names]
        once = all(len(s) <= 1 for s, _ in arrays)
        if not once and not all(_constant(v) or len(v) <= 1 for _, v in arrays):
            continue
        for name, (s, v) in zip(names, arrays, strict=True):
            finite = np.flatnonzero(np.isfinite(v))
            last = int(finite[-1]) if finite.size else len(v) - 1
            rows.append(
                (
                    key,
                    label(key).title,
                    split[name][0],
                    float(v[last]) if len(v) else float("nan"),
                    int(s[last]) if len(s) else -1,
                    "recorded once" if once else "constant",
                )
            )
    order = list(FAMILIES)
    rows.sort(key=lambda r: (order.index(label(r[0]).family), r[0], r[2]))
    return pd.DataFrame(rows, columns=cols)


def _use_log(lab: MetricLabel, values: Sequence[NDArray[np.float64]]) -> bool:
    finite = [v[np.isfinite(v)] for v in values]
    v = np.concatenate(finite) if finite else np.zeros(0)
    if v.size < 2 or np.any(v <= 0) or lab.scale == "linear":
        return False
    if lab.scale == "log":
        return True
    return float(v.max() / v.min()) > 30.0


def _plain(text: str) -> str:
    """``text`` shown as is by matplotlib: a ``$`` (free text in metric names and prefixes)
    never starts mathtext."""
    return text.replace("$", r"\$")


def _y_label(lab: MetricLabel) -> str:
    if lab.unit and lab.unit not in lab.axis:
        return f"{lab.axis} ({lab.unit})"
    return lab.axis


def _draw_panel(
    ax: Axes,
    key: str,
    series: Sequence[Series],
    axis: TimeAxis,
    lr_steps: Sequence[int],
) -> None:
    """Draw the ``series`` of metric ``key`` on ``ax`` (title, labels, scales, LR lines)."""
    lab = label(key)
    n = len(series)
    for i, s in enumerate(series):
        x, y = s.steps, s.values
        keep = x > 0 if axis.scale == "log" else np.ones(x.shape, dtype=bool)
        x, y = x[keep], y[keep]
        every = max(1, len(x) // 8)
        colour = _COLOURS[i % len(_COLOURS)]
        ax.plot(
            x,
            y,
            color=colour,
            ls=_LINESTYLES[i % len(_LINESTYLES)],
            lw=max(1.0, 2.6 - 0.6 * i),
            marker=_MARKERS[i % len(_MARKERS)],
            ms=4.5 if len(x) > 1 else 6,
            markevery=((i * every) // max(n, 1), every) if len(x) > 1 else None,
            zorder=3 + i,
            label=_plain(s.label) or None,
        )
        if s.low is not None and s.high is not None:
            ax.fill_between(x, s.low[keep], s.high[keep], color=colour, alpha=0.18, lw=0, zorder=2)
    if _use_log(
        lab,
        [s.values for s in series] + [b for s in series for b in (s.low, s.high) if b is not None],
    ):
        ax.set_yscale("log")
    if axis.scale == "log":
        ax.set_xscale("log")
    for step in lr_steps:
        if axis.scale == "linear" or step > 0:
            ax.axvline(step, color="0.45", ls=":", lw=1.2, zorder=1)
    ax.set_title(_plain(lab.title), fontsize=10)
    ax.set_ylabel(_plain(_y_label(lab)), fontsize=9)
    ax.set_xlabel(axis.label, fontsize=9)
    ax.grid(alpha=0.3)
    if any(s.label for s in series):
        ax.legend(fontsize=8, framealpha=0.85)


def _family_figure(
    title: str,
    panels: Sequence[tuple[str, Sequence[Series]]],
    axis: TimeAxis,
    lr: Sequence[tuple[int, float, float]],
    *,
    shared_legend: bool = False,
) -> Figure:
    """Panels of one family; with ``shared_legend`` one legend below them all (the lines of
    a comparison are the same groups in every panel), outside every panel."""
    n = len(panels)
    cols = min(3, n)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.3 * cols, 3.2 * rows + 0.5), squeeze=False)
    lr_steps = [c[0] for c in lr]
    for ax, (key, series) in zip(axes.flat, panels, strict=False):
        _draw_panel(ax, key, series, axis, lr_steps)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    note = "  (dotted lines: learning-rate changes)" if lr_steps else ""
    fig.suptitle(title + note, fontsize=11)
    if not shared_legend:
        fig.tight_layout()
        return fig
    entries: dict[str, Any] = {}
    for ax in list(axes.flat)[:n]:
        legend = ax.get_legend()
        if legend is not None:
            legend.remove()
        for handle, text in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(text, handle)
    if not entries:
        fig.tight_layout()
        return fig
    ncol = max(1, min(len(entries), 3 if cols >= 3 else 2))
    legend_rows = -(-len(entries) // ncol)
    height = fig.get_figheight()
    bottom = min(0.45, (0.28 * legend_rows + 0.2) / height)
    fig.legend(
        list(entries.values()),
        list(entries),
        loc="lower center",
        ncol=ncol,
        fontsize=9,
        frameon=False,
    )
    fig.tight_layout(rect=(0, bottom, 1, 1))
    return fig


def _panels(
    series_by_key: Mapping[str, Sequence[Series]], static: set[str], skip_lr: bool
) -> dict[str, list[tuple[str, Sequence[Series]]]]:
    """Group drawable keys into families (in :data:`FAMILIES` order)."""
    families: dict[str, list[tuple[str, Sequence[Series]]]] = defaultdict(list)
    for key, series in series_by_key.items():
        if key in static or (key == "lr" and skip_lr):
            continue
        if not any(len(s.steps) > 1 for s in series):
            continue
        families[label(key).family].append((key, series))
    order = list(FAMILIES)
    return {f: sorted(families[f], key=_panel_order) for f in sorted(families, key=order.index)}


def _panel_order(item: tuple[str, Sequence[Series]]) -> tuple[int, int, int, str]:
    return sort_key(item[0])


def _run_series(metrics: pd.DataFrame) -> dict[str, list[Series]]:
    series = _by_name(metrics)
    split = split_names(series)
    out: dict[str, list[Series]] = {}
    for key, names in metric_groups(metrics).items():
        out[key] = [Series(split[n][0], *series[n]) for n in names]
    return out


def metric_figures(
    metrics: pd.DataFrame, *, max_panels: int = 12, unit: str = "step"
) -> list[tuple[str, Figure]]:
    """One figure per metric family (collapse, loss and accuracy, ...), a panel per metric.

    Constant and once-recorded metrics are left out (see :func:`static_metrics`), and so is
    a learning rate that changes (its changes are the dotted lines on every panel).

    Parameters
    ----------
    metrics : DataFrame
        A run's long table (``step``, ``name``, ``value``), e.g. ``run.metrics``.
    max_panels : int, default=12
        Panels per figure at most (further metrics of a family are left out).
    unit : str, default="step"
        What a step counts (``"epoch"`` for runs of :func:`ncdynamics.training.train`).

    Returns
    -------
    list of (name, Figure)
        Names ``metrics-<family>``; the caller saves and closes them.
    """
    if metrics.empty:
        return []
    lr = lr_changes(metrics)
    static = set(static_metrics(metrics)["key"])
    by_key = _run_series(metrics)
    axis = time_axis([s.steps for ss in by_key.values() for s in ss], unit=unit)
    out = []
    for family, panels in _panels(by_key, static, bool(lr)).items():
        fig = _family_figure(FAMILIES[family], panels[:max_panels], axis, lr)
        out.append((f"metrics-{_file_name(family)}", fig))
    return out


def overview_figure(metrics: pd.DataFrame, *, unit: str = "step") -> Figure | None:
    """One small panel for thumbnails: NC1 (else the first drawable collapse metric, else
    the first drawable metric), every series, with large text; ``None`` when nothing is
    drawable."""
    if metrics.empty:
        return None
    by_key = _run_series(metrics)
    static = set(static_metrics(metrics)["key"])
    drawable = sorted(
        (k for k, ss in by_key.items() if k not in static and any(len(s.steps) > 1 for s in ss)),
        key=sort_key,
    )
    drawable = [k for k in drawable if k != "lr"] or drawable
    if not drawable:
        return None
    key = "nc/nc1" if "nc/nc1" in drawable else drawable[0]
    axis = time_axis([s.steps for s in by_key[key]], unit=unit)
    lr = [c[0] for c in lr_changes(metrics)]
    with plt.rc_context({"font.size": 12}):
        fig, ax = plt.subplots(figsize=(4.2, 3.0))
        _draw_panel(ax, key, by_key[key], axis, lr)
        ax.title.set_fontsize(12)
        fig.tight_layout()
    return fig


# ------------------------------------------------------------------ several runs
def _config_without_seed(config: Mapping[str, object]) -> str:
    import json

    return json.dumps({k: v for k, v in config.items() if k != "seed"}, sort_keys=True, default=str)


@dataclass(frozen=True)
class _Group:
    """Runs that differ only in the seed: their legend text, metrics and resolved paths."""

    label: str
    metrics: list[pd.DataFrame]
    paths: tuple[Path, ...] = ()


def _flat(config: Mapping[str, object], head: str = "") -> dict[str, object]:
    """A config's leaves under dotted keys (``streams.mse.lr``)."""
    out: dict[str, object] = {}
    for key, value in config.items():
        where = f"{head}.{key}" if head else str(key)
        if isinstance(value, Mapping) and value:
            out.update(_flat(value, where))
        else:
            out[where] = value
    return out


def differing_settings(configs: Sequence[Mapping[str, object]]) -> list[str]:
    """The settings that tell ``configs`` apart, derived ones left out, top level first.

    Nested settings are compared leaf by leaf (``streams.mse.lr``); the seed is not a
    setting. A nested setting is derived, and left out, when a setting already kept has the
    same value in every config, or the same name and splits the configs the same way
    (``streams.mse.lr`` follows ``lr`` in the demo).
    """
    flat = [_flat(c) for c in configs]
    keys = sorted({k for f in flat for k in f if k != "seed"}, key=lambda k: (k.count("."), k))
    differ = [k for k in keys if len({repr(f.get(k)) for f in flat}) > 1]
    kept: list[str] = []
    for k in differ:
        values = [repr(f.get(k)) for f in flat]

        def follows(j: str, values: list[str] = values, k: str = k) -> bool:
            other = [repr(f.get(j)) for f in flat]
            if other == values:
                return True
            pairs = set(zip(values, other, strict=True))
            same_split = len(pairs) == len(set(values)) == len(set(other))
            return same_split and j.rpartition(".")[2] == k.rpartition(".")[2]

        if "." not in k or not any(follows(j) for j in kept):
            kept.append(k)
    return kept


def _setting_text(key: str, value: object, keys: Sequence[str]) -> str:
    """``lr=0.05``: the last part of a dotted key when no other shown key ends the same."""
    short = key.rpartition(".")[2]
    name = short if sum(k.rpartition(".")[2] == short for k in keys) == 1 else key
    text = f"{value:.4g}" if isinstance(value, float) else str(value)
    return f"{name}={text if len(text) <= 24 else text[:21] + '...'}"


def _groups(runs: Sequence[Run]) -> list[_Group]:
    """Runs grouped by their config without the seed; labels name the settings that differ
    (:func:`differing_settings`, three at most)."""
    keyed: dict[str, list[Run]] = {}
    for run in runs:
        keyed.setdefault(_config_without_seed(run.config), []).append(run)
    configs = [members[0].config for members in keyed.values()]
    differ = differing_settings(configs)[:3]
    out = []
    for members, config in zip(keyed.values(), configs, strict=True):
        if differ:
            flat = _flat(config)
            text = ", ".join(_setting_text(k, flat.get(k), differ) for k in differ)
        else:
            text = members[0].path.name
        if len(members) > 1:
            seeds = {repr(m.status.get("seed")) for m in members}
            what = "seeds" if len(seeds) == len(members) else "runs"
            text += f" ({len(members)} {what})"
        paths = tuple(m.path.resolve() for m in members)
        out.append(_Group(text, [m.metrics for m in members], paths))
    if len(out) > 1 and len({g.label for g in out}) < len(out):  # same text: use folder names
        out = [
            _Group(f"{g.label} [{runs_[0].path.name}]", g.metrics, g.paths)
            for g, runs_ in zip(out, keyed.values(), strict=True)
        ]
    return out


def _mean_band(frames: Sequence[pd.DataFrame], name: str) -> Series | None:
    """Mean and min-max band of metric ``name`` over runs, at the steps all runs recorded."""
    parts = []
    for df in frames:
        rows = df[df["name"] == name]
        if rows.empty:
            return None
        parts.append(rows.groupby("step")["value"].last())
    joined = pd.concat(parts, axis=1, join="inner").sort_index()
    if joined.empty:
        return None
    v = joined.to_numpy(dtype=float)
    steps = joined.index.to_numpy(dtype=float)
    if len(frames) == 1:
        return Series("", steps, v[:, 0])
    return Series("", steps, v.mean(axis=1), v.min(axis=1), v.max(axis=1))


def comparison_figures(
    runs: Sequence[Run], *, keys: Sequence[str] | None = None, max_panels: int = 12
) -> list[tuple[str, Figure]]:
    """Overlay several runs, a panel per metric key and a line per group and series prefix.

    Runs whose configurations differ only in ``seed`` form one group, drawn as the mean over
    its runs with a band from their minimum to their maximum (at the steps every run of the
    group recorded). Legend entries name the configuration values that differ between
    groups (or the run folders when none does).

    Parameters
    ----------
    runs : sequence of Run
    keys : sequence of str, optional
        Metric keys (prefix removed, e.g. ``"nc/nc1"``) to draw; default every drawable one.
    max_panels : int, default=12

    Returns
    -------
    list of (name, Figure)
    """
    groups = _groups(runs)
    frames = [df for g in groups for df in g.metrics]
    everything = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    if everything.empty:
        return []
    wanted = None if keys is None else set(keys)
    all_groups = metric_groups(everything)
    static = set(static_metrics(everything)["key"]) if wanted is None else set()
    split = split_names(everything["name"].unique())
    by_key = _comparison_lines(groups, all_groups, wanted, split)
    lr = lr_changes(everything) if len(groups) == 1 else []
    unit = "epoch" if all(_counts_epochs(r) for r in runs) else "step"
    axis = time_axis([s.steps for ss in by_key.values() for s in ss], unit=unit)
    out = []
    for family, panels in _panels(by_key, static, False).items():
        for start in range(0, len(panels), max_panels):
            chunk = panels[start : start + max_panels]
            name = f"compare-{_file_name(family)}" + (
                f"-{start // max_panels + 1}" if start else ""
            )
            out.append(
                (name, _family_figure(FAMILIES[family], chunk, axis, lr, shared_legend=True))
            )
    return out


def _comparison_lines(
    groups: Sequence[_Group],
    all_groups: dict[str, list[str]],
    wanted: set[str] | None,
    split: dict[str, tuple[str, str]],
) -> dict[str, list[Series]]:
    """The lines of each wanted metric key: one per group and series prefix that recorded it
    (keys no group recorded are left out)."""
    by_key: dict[str, list[Series]] = {}
    for key, names in all_groups.items():
        if wanted is not None and key not in wanted:
            continue
        lines = []
        for g in groups:
            for name in names:
                s = _mean_band(g.metrics, name)
                if s is None:
                    continue
                prefix = split[name][0]
                text = g.label + (f" · {prefix}" if prefix else "")
                lines.append(Series(text, s.steps, s.values, s.low, s.high))
        if lines:
            by_key[key] = lines
    return by_key


def _counts_epochs(run: Run) -> bool:
    """Whether a run's steps are epochs: its config has ``epochs`` (its own, or a stream's
    under ``streams``, such as the demo's two-point stretch) and no record beyond the most."""
    config = run.config if isinstance(run.config, dict) else {}
    declared = [config.get("epochs")]
    streams = config.get("streams")
    if isinstance(streams, dict):
        declared += [v.get("epochs") for v in streams.values() if isinstance(v, dict)]
    counts = [e for e in declared if isinstance(e, int) and not isinstance(e, bool)]
    if not counts:
        return False
    metrics = run.metrics
    return metrics.empty or int(metrics["step"].max()) <= max(counts)


# ------------------------------------------------------------------ class means
def _pca2(means: NDArray[np.float64]) -> NDArray[np.float64]:
    """Two principal directions (columns) of centred class means ``(C, d)``."""
    centred = means - means.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    basis = vt[:2].T
    if basis.shape[1] < 2:
        basis = np.hstack([basis, np.zeros((basis.shape[0], 2 - basis.shape[1]))])
    return basis


def class_means_figures(run: Run, *, unit: str = "step") -> list[tuple[str, Figure]]:
    """Recorded class means (``class_means_features``, else ``class_means_logits``; any
    prefix) drawn as two panels per series: the centred means projected on the two
    principal directions of the last record, as paths from the first record (small) to the
    last (large, numbered by class), and the cosine Gram of the last centred means beside
    the simplex-ETF value ``-1/(C-1)``.
    """
    out = []
    for prefix, name in sorted(_class_means_arrays(run.array_names()).items()):
        series = run.arrays(name)
        steps = sorted(series)
        if not steps:
            continue
        last = np.asarray(series[steps[-1]], dtype=float)
        if last.ndim != 2 or last.shape[0] < 2:
            continue
        fig, (ax, ax2) = plt.subplots(1, 2, figsize=(10.5, 4.4))
        what = "features" if name.endswith("features") else "logits"
        _class_means_paths(ax, series, steps, last, what, unit)
        _class_means_cosines(fig, ax2, last, steps[-1], unit)
        title = f"Class means ({prefix})" if prefix else "Class means"
        fig.suptitle(_plain(title), fontsize=11)
        fig.tight_layout()
        out.append((f"class-means-{_file_name(prefix)}" if prefix else "class-means", fig))
    return out


def _class_means_arrays(names: Iterable[str]) -> dict[str, str]:
    """Prefix -> the class-means array to draw for it: ``class_means_features`` where
    recorded, else ``class_means_logits``."""
    chosen: dict[str, str] = {}
    for suffix in ("class_means_logits", "class_means_features"):  # features win
        for n in names:
            head, sep, tail = n.rpartition(".")
            base = tail if sep else n
            if base == suffix:
                chosen[head] = n
    return chosen


def _class_means_paths(
    ax: Axes, series: Mapping[int, Any], steps: list[int], last: NDArray[Any], what: str, unit: str
) -> None:
    """The centred class means of at most 60 records projected on the two principal
    directions of the last record, one path per class from small start to numbered end."""
    basis = _pca2(last)
    take = (
        steps
        if len(steps) <= 60
        else [steps[i] for i in np.linspace(0, len(steps) - 1, 60).astype(int)]
    )
    paths = np.stack(
        [
            (np.asarray(series[s], dtype=float) - np.asarray(series[s], dtype=float).mean(axis=0))
            @ basis
            for s in take
        ]
    )  # (n_times, C, 2)
    n_classes = last.shape[0]
    cmap = plt.get_cmap("tab10" if n_classes <= 10 else "tab20")
    for c in range(n_classes):
        colour = cmap(c % cmap.N)
        ax.plot(paths[:, c, 0], paths[:, c, 1], color=colour, lw=1.0, alpha=0.7)
        ax.scatter(paths[0, c, 0], paths[0, c, 1], color=colour, s=12, marker="o", alpha=0.6)
        ax.scatter(
            paths[-1, c, 0],
            paths[-1, c, 1],
            color=colour,
            s=70,
            marker="o",
            edgecolor="k",
            zorder=3,
        )
        ax.annotate(
            str(c),
            (paths[-1, c, 0], paths[-1, c, 1]),
            fontsize=8,
            ha="center",
            va="center",
            zorder=4,
        )
    ax.set_title(f"Class means of the {what}: PCA-2 path, {unit} {take[0]}→{take[-1]}", fontsize=10)
    ax.set_xlabel("principal direction 1 (of the last record)", fontsize=9)
    ax.set_ylabel("principal direction 2", fontsize=9)
    ax.set_aspect("equal", adjustable="datalim")
    ax.grid(alpha=0.3)


def _class_means_cosines(fig: Figure, ax2: Axes, last: NDArray[Any], step: int, unit: str) -> None:
    """The cosine Gram of the last centred class means, titled with its off-diagonal mean
    beside the simplex-ETF value ``-1/(C-1)``."""
    n_classes = last.shape[0]
    centred = last - last.mean(axis=0, keepdims=True)
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    cos = (centred / np.where(norms > 0, norms, 1.0)) @ (
        centred / np.where(norms > 0, norms, 1.0)
    ).T
    im = ax2.imshow(cos, cmap="RdBu_r", vmin=-1, vmax=1, interpolation="nearest")
    off = cos[~np.eye(n_classes, dtype=bool)]
    ax2.set_title(
        f"Cosines of centred class means, {unit} {step}\n"
        f"off-diagonal mean {off.mean():.3f} (ETF: {-1 / (n_classes - 1):.3f}), "
        f"std {off.std():.3f}",
        fontsize=10,
    )
    ax2.set_xlabel("class", fontsize=9)
    ax2.set_ylabel("class", fontsize=9)
    fig.colorbar(im, ax=ax2, fraction=0.046, label="cosine")
