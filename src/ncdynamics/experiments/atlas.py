"""The regime atlas: where each theory holds, over a grid of training settings.

:func:`atlas` runs a base experiment (the ``atlas`` cell of
:mod:`ncdynamics.experiments.atlas_cell`: a network trained with a chosen loss, optimiser,
learning rate, width, depth, initial scale, class count and dataset, recorded for every
theory) over the blocks of an :class:`AtlasPlan` as sweeps
(:func:`ncdynamics.experiments.sweep`), confronts every run with every theory
(:func:`ncdynamics.experiments.compare`), and aggregates per cell (one combination of
settings, over seeds):

* the share of the runs with each verdict (``share.<verdict>``), the most common verdict and
  its reason (a theory that could not be confronted says why: ``missing`` names the records
  it needs and the run's own note on why it does not record them);
* each theory's key parameters (:data:`KEY_PARAMS`) with a 95% interval over the seeds, and
  the value the theory predicts from the settings where it predicts one (Hadamard's ``c``);
* along each axis, the dependence of each key parameter on the setting against the theory's
  prediction (:data:`PREDICTED`, judged by :func:`ncdynamics.experiments.dependence
  .fit_dependence`).

Layout of an atlas directory::

    atlas.json           preset, plan (base, fixed settings, blocks, seeds), engine key
    sweeps/<block>/      one sweep directory per block (resumable, see docs/sweeps.md)
    runs.parquet|csv     one row per run and theory: settings, seed, verdict, reason, params
    cells.parquet|csv    one row per cell and theory (:func:`aggregate_cells`)
    dependence.csv       one row per theory, parameter, axis and line (:func:`dependence_table`)
    report.html          the atlas page (:func:`ncdynamics.report.write_atlas_report`)

**Resumable.** The sweeps skip their completed runs, and each run's confrontation is cached in
the run's own ``atlas/compare.json`` under the key of the verdict engine's sources
(:func:`engine_key`): a second call runs and confronts nothing that is already there, and a
changed engine confronts every run again. A plan that only adds blocks to the directory's plan
resumes it too (the new blocks run; ``atlas.json`` takes the new plan); any other change of
plan is refused.

**Cell intervals.** The seeds of a cell differ in their initialisation and batch order, so a
cell's value is the mean of the seeds' ``log`` estimates, with a ``t`` interval whose variance
adds the spread between seeds (``sd^2 / n``) and the mean of the seeds' own variances (from
their 95% intervals) divided by ``n``; one seed keeps its own interval. Estimates are taken from
the runs whose verdict rests on a fit that the data determined (``holds``, ``holds in a
window``, ``not distinguished``, ``fails``); ``degenerate`` fits (a parameter on its bound) and
unfitted runs are left out; a run whose verdict names a window (``holds in a window``, or a
stream out of regime as a whole judged on a window inside it) gives that window's parameters
(``params_from`` in the runs table). A dependence check uses only the runs
whose fit describes their records (``holds``, ``holds in a window``, ``not distinguished``):
the parameter of a failed fit is not the theory's parameter.

**Adding an axis** is adding an option to the base experiment's config (if it has none) and
an :class:`Axis` to :data:`AXES`; a plan then names it in a block. See ``docs/atlas.md``.
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
import time
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy.special import ndtri, stdtrit  # scipy.stats's quantiles, without its import cost

from .. import runs
from .._reasons import one_line_reason
from .._validation import check_int, check_option
from ..runs._io import atomic_write, read_json, write_json
from ..theories.verdict import VERDICTS
from .compare import CompareEntry
from .dependence import fit_dependence
from .executors import Executor, LocalExecutor, Task

__all__ = [
    "AXES",
    "ATLAS_PRESETS",
    "KEY_PARAMS",
    "PLANS",
    "PREDICTED",
    "AtlasPlan",
    "Axis",
    "Block",
    "PredictedDependence",
    "aggregate_cells",
    "atlas",
    "confront_run",
    "dependence_table",
    "engine_key",
    "probe_run",
    "read_atlas",
]

ATLAS_FORMAT_VERSION = 1
#: Version of the rows cached in ``RUN/atlas/compare.json`` (part of :func:`engine_key`).
CACHE_FORMAT_VERSION = 2
ATLAS_PRESETS = ("smoke", "cpu", "paper")


@dataclass(frozen=True)
class Axis:
    """One setting the atlas can vary: the base experiment's option ``name``.

    ``scale`` is how the page draws it and whether a dependence is fitted along it: ``log``
    and ``linear`` are numbers (a power law is fitted along ``log`` axes), ``category`` is
    not.
    """

    name: str
    label: str
    scale: str = "category"


#: Every axis of the atlas (module docstring: adding one).
AXES: dict[str, Axis] = {
    a.name: a
    for a in (
        Axis("loss", "loss"),
        Axis("optimizer", "optimiser"),
        Axis("lr", "learning rate", "log"),
        Axis("width", "width", "log"),
        Axis("depth", "depth", "linear"),
        Axis("init_scale", "initial scale", "log"),
        Axis("n_classes", "classes K", "linear"),
        Axis("dataset", "data"),
        Axis("model", "base model"),
    )
}


@dataclass(frozen=True)
class Block:
    """A full grid over some axes; every other setting at the plan's base point, except
    those the block fixes itself (``fixed``: Adam's block fixes ``optimizer="adam"`` and
    varies ``lr`` over Adam's own range)."""

    name: str
    axes: Mapping[str, tuple[Any, ...]]
    fixed: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class AtlasPlan:
    """What an atlas runs: the base experiment at a preset, the settings fixed for every run
    (the base point), the blocks of axes and the seeds."""

    experiment: str
    preset: str
    fixed: Mapping[str, Any]
    blocks: tuple[Block, ...]
    seeds: int

    def as_dict(self) -> dict[str, Any]:
        """The plan as JSON (``atlas.json``)."""
        out = asdict(self)
        out["blocks"] = [
            {
                "name": b.name,
                "axes": {k: list(v) for k, v in b.axes.items()},
                "fixed": dict(b.fixed),
            }
            for b in self.blocks
        ]
        out["fixed"] = dict(self.fixed)
        return out


_LOSSES = ("mse", "cross-entropy")
_OPTIMIZERS = ("gd", "sgd", "momentum", "adam")
#: The base point of the unconstrained-features blocks: the Hadamard theory's own model
#: (``model="ufm"``, docs/theories/hadamard.md) with K = 4 classes of n = 2 samples, d = 64
#: features and a small initial scale (entries ``0.001 N(0, 1/K)``): the logits start near
#: zero and, as the theory's small-initialisation result (Thm 8) has it, reach the Hadamard
#: subspace while the loss drops (at d = 8 or scale 0.01 some seeds arrive too late for any
#: window to hold); batches of 2 for ``sgd``.
_UFM: dict[str, Any] = {
    "dataset": "one-hot",
    "train_per_class": 2,
    "probe_per_class": 2,
    "width": 64,
    "init_scale": 0.001,
    "batch_size": 2,
    "epochs": 200,
    "record_every": 8,
}

#: The plans of the presets: ``smoke`` (a few minutes on two cores, in the test suite),
#: ``cpu`` (the published atlas of docs/atlas.md), ``paper`` (wider grids and longer training,
#: for a GPU or a Ray cluster).
PLANS: dict[str, AtlasPlan] = {
    "smoke": AtlasPlan(
        "atlas",
        "smoke",
        {},
        (
            Block("core", {"loss": _LOSSES, "lr": (0.2, 0.8)}),
            Block("ufm", {"model": ("ufm",), "loss": _LOSSES, "lr": (0.5, 1.0)}, _UFM),
        ),
        seeds=2,
    ),
    "cpu": AtlasPlan(
        "atlas",
        "cpu",
        {"record_ntk": True},
        (
            Block("lr", {"loss": _LOSSES, "lr": (0.05, 0.1, 0.2, 0.4)}),
            Block(
                "optimiser", {"loss": _LOSSES, "optimizer": ("sgd", "momentum"), "lr": (0.02, 0.1)}
            ),
            Block("adam", {"loss": _LOSSES, "lr": (0.001, 0.01)}, {"optimizer": "adam"}),
            Block("init", {"loss": _LOSSES, "init_scale": (0.25, 1.0, 4.0)}),
            Block("classes", {"loss": _LOSSES, "n_classes": (4, 6, 8)}),
            Block("width", {"loss": _LOSSES, "width": (16, 256)}),
            Block("data", {"loss": _LOSSES, "dataset": ("gaussian-clusters", "mnist-5k")}),
            Block("ufm", {"model": ("ufm",), "loss": _LOSSES, "lr": (0.5, 1.0, 2.0, 4.0)}, _UFM),
            Block(
                "ufm-optimiser",
                {
                    "model": ("ufm",),
                    "loss": _LOSSES,
                    "optimizer": ("sgd", "momentum"),
                    "lr": (0.5, 2.0),
                },
                _UFM,
            ),
            Block(
                "ufm-adam",
                {"model": ("ufm",), "loss": _LOSSES, "lr": (0.001, 0.01)},
                {**_UFM, "optimizer": "adam"},
            ),
            # the Hadamard theory's K-a-power-of-two boundary on its own model: the near side
            # (K = 4, 8) fitted, the far side (K = 6) where the Hadamard basis does not exist
            Block(
                "ufm-classes",
                {"model": ("ufm",), "loss": ("cross-entropy",), "n_classes": (4, 6, 8)},
                {**_UFM, "lr": 1.0},
            ),
        ),
        seeds=2,
    ),
    "paper": AtlasPlan(
        "atlas",
        "paper",
        {},
        (
            Block("lr", {"loss": _LOSSES, "lr": (0.01, 0.03, 0.1, 0.3, 1.0)}),
            Block(
                "optimiser",
                {"loss": _LOSSES, "optimizer": ("sgd", "momentum"), "lr": (0.003, 0.01, 0.03, 0.1)},
            ),
            Block("adam", {"loss": _LOSSES, "lr": (1e-4, 1e-3, 1e-2)}, {"optimizer": "adam"}),
            Block("init", {"loss": _LOSSES, "init_scale": (0.1, 0.3, 1.0, 3.0, 10.0)}),
            Block("classes", {"loss": _LOSSES, "n_classes": (2, 3, 4, 6, 8, 10)}),
            Block("width", {"loss": _LOSSES, "width": (32, 128, 512, 2048), "depth": (2, 4)}),
            Block(
                "data", {"loss": _LOSSES, "dataset": ("digits", "gaussian-clusters", "mnist-5k")}
            ),
            Block("model", {"loss": _LOSSES, "model": ("mlp", "cnn")}, {"dataset": "mnist-5k"}),
            Block(
                "ufm",
                {
                    "model": ("ufm",),
                    "loss": _LOSSES,
                    "optimizer": ("gd", "sgd", "momentum"),
                    "lr": (0.1, 0.3, 1.0, 3.0, 10.0),
                    "n_classes": (4, 8),
                },
                {**_UFM, "epochs": 1000},
            ),
            Block(
                "ufm-adam",
                {"model": ("ufm",), "loss": _LOSSES, "lr": (1e-4, 1e-3, 1e-2)},
                {**_UFM, "optimizer": "adam"},
            ),
            Block(
                "ufm-classes",
                {
                    "model": ("ufm",),
                    "loss": ("cross-entropy",),
                    "n_classes": (2, 3, 4, 5, 6, 8),
                    "lr": (0.3, 1.0, 3.0),
                },
                {**_UFM, "epochs": 1000},
            ),
        ),
        seeds=5,
    ),
}

#: The parameters the atlas reports per theory (absent where a theory's fit does not give
#: them; the LE-SDE reports ``alpha`` for its constant law and ``alpha_last`` for its power law).
KEY_PARAMS: dict[str, tuple[str, ...]] = {
    "alignment": ("inv_tau_h", "inv_tau_y"),
    "hadamard": ("time_scale",),
    "lesde": ("alpha", "alpha_last"),
    "ntk_collapse": ("flow_time_per_step",),
}


@dataclass(frozen=True)
class PredictedDependence:
    """A theory's prediction of how a parameter moves along an axis: ``p ~ x^exponent``."""

    theory: str
    param: str
    axis: str
    exponent: float
    why: str


#: The dependences the theories predict (each a failable check, :mod:`.dependence`).
PREDICTED: tuple[PredictedDependence, ...] = (
    PredictedDependence(
        "alignment",
        "inv_tau_h",
        "lr",
        1.0,
        "gradient descent at step eta follows the flow (4) at time eta k: rates per step ~ eta",
    ),
    PredictedDependence(
        "alignment",
        "inv_tau_y",
        "lr",
        1.0,
        "gradient descent at step eta follows the flow (4) at time eta k: rates per step ~ eta",
    ),
    PredictedDependence(
        "hadamard",
        "time_scale",
        "lr",
        1.0,
        "c = 2 sqrt(n) eta / (B (1 - momentum)) per epoch: proportional to eta",
    ),
    PredictedDependence(
        "ntk_collapse",
        "flow_time_per_step",
        "lr",
        1.0,
        "the flow time of one step at rate eta is proportional to eta",
    ),
)

_DEPENDENCE_COLUMNS = (
    "theory",
    "param",
    "axis",
    "line",
    "predicted",
    "slope",
    "low",
    "high",
    "verdict",
    "reason",
    "n_runs",
    "n_settings",
    "why",
)

#: Verdicts whose fit the data determined: their parameters enter a cell's value.
_DETERMINED = ("holds", "holds in a window", "not distinguished", "fails")
#: Verdicts whose fit describes the records: only their parameters enter a dependence check.
_DESCRIBED = ("holds", "holds in a window", "not distinguished")


# ---------------------------------------------------------------------------- engine key
_ENGINE_MODULES = (
    "ncdynamics.theories.verdict",
    "ncdynamics.theories.confrontation",
    "ncdynamics.theories.uncertainty",
    "ncdynamics.theories.regime",
    "ncdynamics.theories.alternatives",
    "ncdynamics.experiments.compare",
    "ncdynamics.experiments.streams",
    "ncdynamics.experiments.windows",
    "ncdynamics.experiments.forecast_scoring",
)


def engine_key() -> str:
    """A key of the verdict engine as installed: the package version, the format of the
    cached rows, and a hash of the sources of the engine and of every theory's confrontation
    (and its estimator). A cached
    confrontation made under another key is made again."""
    from .. import __version__, theories

    names = list(_ENGINE_MODULES)
    for t in theories.available():
        pkg = theories.get(t).package
        names += [f"{pkg}.confront", f"{pkg}.estimate"]
    digest = hashlib.sha256(f"{__version__} cache {CACHE_FORMAT_VERSION}".encode())
    for name in names:
        try:
            mod = importlib.import_module(name)
        except ImportError:
            continue
        source = getattr(mod, "__file__", None)
        if source:
            digest.update(name.encode())
            digest.update(Path(source).read_bytes())
    return digest.hexdigest()[:16]


# ---------------------------------------------------------------------------- confront
_CACHE = Path("atlas") / "compare.json"


def _jsonable_row(row: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in row.items():
        if isinstance(v, (str, bool, int)) or v is None:
            out[k] = v
        elif isinstance(v, (float, np.floating)):
            out[k] = float(v)
        elif isinstance(v, np.integer):
            out[k] = int(v)
    return out


def _entry_row(entry: CompareEntry) -> dict[str, Any]:
    """A compare entry as a cached row: :meth:`CompareEntry.row`, with the parameters of the
    window its verdict names (``holds in a window``, or the verdict of the window a stream out
    of regime as a whole was tested on): the whole stream's fit, if any, failed or was out of
    regime there; ``params_from`` says which."""
    row = _jsonable_row(entry.row())
    row["params_from"] = "whole stream" if entry.fit is not None else ""
    span = entry.verdict.window
    best = next((w for w in entry.windows if span and w.span == tuple(span)), None)
    if best is not None:
        for k in [k for k in row if k.startswith("params.")]:
            if not k.endswith((".unit", ".expected")):
                del row[k]
        for k, v in best.params.items():
            row[f"params.{k}"] = float(v)
        for k, (lo, hi) in best.intervals.items():
            row[f"params.{k}.low"], row[f"params.{k}.high"] = float(lo), float(hi)
        row["params_from"] = f"window {best.since:g}-{best.until:g}"
    return row


#: Key parameters a theory predicts from the run's settings alone: theory -> (parameter,
#: module, function of a :class:`~ncdynamics.theories.confrontation.Stream` returning
#: ``(value or None, how)``). A run whose parameters come from a window (the whole stream
#: was not fitted) gets its ``.expected`` from here.
_EXPECTED_FROM_SETTINGS: dict[str, tuple[str, str, str]] = {
    "hadamard": ("time_scale", "ncdynamics.theories.hadamard.confront", "expected_time_scale"),
}


def _fill_expected(row: dict[str, Any], path: Path) -> None:
    """Add ``params.<p>.expected`` to a row whose parameters come from a window, where the
    theory predicts ``p`` from the settings (:data:`_EXPECTED_FROM_SETTINGS`)."""
    spec = _EXPECTED_FROM_SETTINGS.get(str(row.get("theory")))
    if spec is None or not str(row.get("params_from", "")).startswith("window"):
        return
    param, module, name = spec
    if f"params.{param}" not in row or f"params.{param}.expected" in row:
        return
    from ..theories.confrontation import Stream

    try:
        value, _ = getattr(importlib.import_module(module), name)(
            Stream(runs.open_run(path), str(row.get("stream", "")))
        )
    except (OSError, KeyError, ValueError):  # the row keeps its verdict, without a prediction
        return
    if value is not None:
        row[f"params.{param}.expected"] = float(value)


def confront_run(run: runs.Run | str | os.PathLike[str], *, key: str | None = None) -> bool:
    """Confront one run with every theory, cached in ``RUN/atlas/compare.json``.

    Returns whether it confronted now (``False``: a cache under the current engine key was
    there). A run that cannot be compared gets one ``error`` row with the reason.
    """
    from .compare import compare

    path = Path(run.path if isinstance(run, runs.Run) else run)
    key = key or engine_key()
    cache = path / _CACHE
    if _cached_rows(cache, key) is not None:
        return False
    try:
        rows = [_entry_row(e) for e in compare(path)]
        for row in rows:
            _fill_expected(row, path)
    except Exception as exc:  # a damaged run must not stop the atlas
        rows = [{"theory": "*", "verdict": "error", "reason": one_line_reason(exc)}]
    write_json(cache, {"engine": key, "rows": rows})
    return True


_PROBES = Path("atlas") / "probes.json"


def probe_run(
    run: runs.Run | str | os.PathLike[str], theory: str, *, key: str | None = None
) -> list[dict[str, Any]]:
    """Confront one run with one theory *past its declared regime*, cached in
    ``RUN/atlas/probes.json``: a boundary that a paper states and a theory declares as an
    assumption puts the runs beyond it ``out of regime``, unfitted, which measures nothing.
    A probe fits them anyway (``compare(run, force=True, theories=[theory])``, windows
    included, as the atlas's own confrontation) and returns its rows, whose
    ``forced_verdict`` is what the theory's fit says there (rows of streams inside the
    regime have none: their verdict is the fit's). Cached under :func:`engine_key`; a
    run that cannot be compared gets one ``error`` row with the reason.
    """
    from .compare import compare

    path = Path(run.path if isinstance(run, runs.Run) else run)
    key = key or engine_key()
    cache = path / _PROBES
    stored = dict(_cached(cache, key).get("theories") or {})
    if isinstance(stored.get(theory), list):
        return list(stored[theory])
    try:
        rows = [_entry_row(e) for e in compare(path, force=True, theories=[theory])]
    except Exception as exc:  # a damaged run must not stop the others
        rows = [{"theory": theory, "verdict": "error", "reason": one_line_reason(exc)}]
    write_json(cache, {"engine": key, "theories": {**stored, theory: rows}})
    return list(read_json(cache)["theories"][theory])  # as a later call will read them


def _confront_task(path: str, key: str) -> bool:
    """A task of the executor: :func:`confront_run` under the key of the calling process."""
    return confront_run(path, key=key)


def _after_run(run: runs.Run) -> None:
    """The sweeps' ``after_run`` (in the worker): confront the completed run."""
    confront_run(run)


def _cached(cache: Path, key: str) -> dict[str, Any]:
    """What a run's cache file (``compare.json``, ``probes.json``) holds when it was written
    under the engine key ``key``; empty when absent, unreadable or of another engine."""
    if not cache.is_file():
        return {}
    try:
        data = read_json(cache)
    except ValueError:
        return {}
    return data if isinstance(data, dict) and data.get("engine") == key else {}


def _cached_rows(cache: Path, key: str) -> list[dict[str, Any]] | None:
    rows = _cached(cache, key).get("rows")
    return rows if isinstance(rows, list) else None


# ---------------------------------------------------------------------------- runner
def _check_plan(plan: AtlasPlan) -> None:
    from ._registry import get

    spec = get(plan.experiment)
    check_option(plan.preset, "preset", tuple(spec.presets))
    check_int(plan.seeds, "seeds", low=1)
    if not plan.blocks:
        raise ValueError("`plan.blocks` must hold at least one block of axes; got none.")
    names = [b.name for b in plan.blocks]
    if len(set(names)) != len(names):
        raise ValueError(f"`plan.blocks` names must be distinct; got {names!r}.")
    for b in plan.blocks:
        if not b.axes:
            raise ValueError(f"block {b.name!r} must vary at least one axis; got none.")
        for axis, values in b.axes.items():
            if axis not in AXES:
                raise ValueError(
                    f"block {b.name!r}: axis {axis!r} is not an atlas axis; the axes: "
                    f"{', '.join(AXES)}."
                )
            if not values:
                raise ValueError(f"block {b.name!r}: axis {axis!r} must have values; got none.")


def _extends(old: Any, new: dict[str, Any]) -> bool:
    """Whether plan ``new`` (as JSON) is plan ``old`` with blocks added: the same base
    experiment, preset, fixed settings and seeds, and every block of ``old`` unchanged. An
    atlas grows into such a plan by running only the new blocks."""
    if not isinstance(old, dict):
        return False
    same = all(old.get(k) == new.get(k) for k in ("experiment", "preset", "fixed", "seeds"))
    blocks = {b.get("name"): b for b in new.get("blocks", []) if isinstance(b, dict)}
    kept = old.get("blocks")
    return (
        same
        and isinstance(kept, list)
        and all(isinstance(b, dict) and blocks.get(b.get("name")) == b for b in kept)
    )


def _open_atlas(path: Path, meta: dict[str, Any]) -> None:
    if path.exists() and not path.is_dir():
        raise FileExistsError(f"`out` {str(path)!r} exists and is not a directory.")
    marker = path / "atlas.json"
    if marker.is_file():
        old = read_json(marker)
        if not isinstance(old, dict) or old.get("format_version") != ATLAS_FORMAT_VERSION:
            raise ValueError(
                f"`out` {str(path)!r} holds an atlas of another format; choose another --out."
            )
        if old.get("plan") == meta["plan"]:
            return
        if not _extends(old.get("plan"), meta["plan"]):
            raise ValueError(
                f"`out` {str(path)!r} holds an atlas with another plan; choose another --out, "
                "or give the same preset and seeds to resume it."
            )
        write_json(marker, {**old, "plan": meta["plan"]})
        return
    if path.is_dir() and any(path.iterdir()):
        raise FileExistsError(
            f"`out` {str(path)!r} exists and is not an atlas directory; choose an empty one."
        )
    path.mkdir(parents=True, exist_ok=True)
    write_json(marker, meta)


def atlas(
    preset: str = "smoke",
    out: str | os.PathLike[str] | None = None,
    *,
    plan: AtlasPlan | None = None,
    seeds: int | None = None,
    executor: Executor | None = None,
    retries: int = 1,
    progress: bool = False,
    device: str = "auto",
) -> pd.DataFrame:
    """Run the regime atlas of ``preset`` (or ``plan``) into ``out`` and return its cells.

    Parameters
    ----------
    preset : {"smoke", "cpu", "paper"}, default="smoke"
        The plan of :data:`PLANS`.
    out : path-like, optional
        The atlas directory (default ``runs/atlas-<preset>``). Running again into it does
        only the runs and confrontations that are missing.
    plan : AtlasPlan, optional
        Instead of the preset's plan.
    seeds : int, optional
        Seeds ``0 .. seeds-1`` of every cell (default: the plan's).
    executor : Executor, optional
        Where runs and confrontations execute (default: one local worker, closed at the end;
        an executor passed in is left open).
    retries : int, default=1
        Extra attempts for a run that fails.
    progress : bool, default=False
        Bars over the blocks, each block's runs and the confrontations.
    device : str, default="auto"
        Where each run trains.

    Returns
    -------
    DataFrame
        One row per cell and theory (:func:`aggregate_cells`); ``df.attrs["atlas"]`` holds the
        directory and what this call did (``runs_now``, ``runs_failed``, ``confronted_now``).

    Raises
    ------
    ValueError
        A bad preset, plan or seed count, or ``out`` holding an atlas of another plan.
    """
    if plan is None:
        check_option(preset, "preset", ATLAS_PRESETS)
        plan = PLANS[preset]
    if seeds is not None:
        plan = AtlasPlan(
            plan.experiment, plan.preset, plan.fixed, plan.blocks, check_int(seeds, "seeds", low=1)
        )
    _check_plan(plan)
    retries = check_int(retries, "retries", low=0)
    path = Path(out) if out is not None else Path("runs") / f"atlas-{preset}"
    key = engine_key()
    meta = {"format_version": ATLAS_FORMAT_VERSION, "plan": _plain(plan.as_dict())}
    from .sweep import expand_grid, sweep

    for b in plan.blocks:  # every cell resolves before anything runs
        expand_grid(
            plan.experiment,
            plan.preset,
            grid=dict(b.axes),
            seeds=plan.seeds,
            overrides=_fixed_for(plan, b),
        )
    _open_atlas(path, meta)
    own = executor is None
    executor = executor if executor is not None else LocalExecutor(workers=1)
    from tqdm.auto import tqdm

    runs_now = failed = 0
    started = time.time()
    try:
        for b in tqdm(plan.blocks, desc="atlas blocks", disable=not progress, leave=False):
            result = sweep(
                plan.experiment,
                plan.preset,
                path / "sweeps" / b.name,
                grid=dict(b.axes),
                seeds=plan.seeds,
                overrides=_fixed_for(plan, b),
                executor=executor,
                retries=retries,
                after_run=_after_run,
                progress=progress,
                device=device,
            )
            runs_now += len(result.completed)
            failed += len(result.failed)
        confronted = _confront_missing(path, plan, key, executor, progress, started)
    finally:
        if own:
            executor.close()
    run_rows = collect_runs(path, plan, key)
    cells = aggregate_cells(run_rows)
    deps = dependence_table(run_rows)
    _write_tables(path, run_rows, cells, deps)
    state = read_json(path / "atlas.json")
    state["engine"] = key
    state["last"] = {"runs_now": runs_now, "runs_failed": failed, "confronted_now": confronted}
    write_json(path / "atlas.json", state)
    cells.attrs["atlas"] = {"path": str(path), **state["last"]}
    return cells


def _plain(obj: Any) -> Any:
    import json

    return json.loads(json.dumps(obj, default=str))


def _fixed_for(plan: AtlasPlan, block: Block) -> dict[str, Any]:
    fixed = {**plan.fixed, **block.fixed}
    return {k: v for k, v in fixed.items() if k not in block.axes}


def _run_dirs(path: Path, plan: AtlasPlan) -> list[tuple[str, Path]]:
    out = []
    for b in plan.blocks:
        root = path / "sweeps" / b.name
        if not root.is_dir():
            continue
        state = read_json(root / "sweep.json") if (root / "sweep.json").is_file() else {}
        for run_id in sorted(state.get("runs", {})):
            run_dir = root / run_id
            if (run_dir / "status.json").is_file():
                out.append((b.name, run_dir))
    return out


def _confront_missing(
    path: Path, plan: AtlasPlan, key: str, executor: Executor, progress: bool, since: float
) -> int:
    """Confront the completed runs without a fresh cache (the runs confronted by the sweeps'
    ``after_run`` count too); returns how many were confronted in this call."""
    from tqdm.auto import tqdm

    todo = []
    for _, run_dir in _run_dirs(path, plan):
        try:
            state = runs.open_run(run_dir).state
        except Exception:  # a damaged run: its row says so
            continue
        if state == "completed" and _cached_rows(run_dir / _CACHE, key) is None:
            todo.append(run_dir)
    done_by_sweeps = _confronted_since(path, plan, key, since)
    tasks = [Task(str(p), _confront_task, (str(p), key)) for p in todo]
    bar = tqdm(total=len(tasks), desc="atlas confront", disable=not progress, leave=False)
    try:
        for _ in executor.run(tasks):
            bar.update(1)
    finally:
        bar.close()
    return len(tasks) + done_by_sweeps


def _confronted_since(path: Path, plan: AtlasPlan, key: str, since: float) -> int:
    """Runs whose cache (under ``key``) was written at or after ``since`` (by the sweeps'
    ``after_run`` in this call)."""
    count = 0
    for _, run_dir in _run_dirs(path, plan):
        cache = run_dir / _CACHE
        if cache.is_file() and cache.stat().st_mtime >= since:
            if _cached_rows(cache, key) is not None:
                count += 1
    return count


# ---------------------------------------------------------------------------- tables
def collect_runs(path: Path, plan: AtlasPlan, key: str | None = None) -> pd.DataFrame:
    """One row per run and theory: block, run id, seed, every axis's setting, status,
    verdict, reason, ``outside`` (the assumptions of the theory the run is outside, by name)
    and the key parameters with their intervals and expected values. A cell that two blocks
    both ran has a row from each; the cells and the dependence checks count it once."""
    key = key or engine_key()
    axes = list(dict.fromkeys(a for b in plan.blocks for a in b.axes))
    rows: list[dict[str, Any]] = []
    for block, run_dir in _run_dirs(path, plan):
        base: dict[str, Any] = {"block": block, "run": run_dir.name}
        try:
            r = runs.open_run(run_dir)
            config, state, summary = r.config, r.state, r.summary
        except Exception as exc:
            rows.append(
                {
                    **base,
                    "status": "damaged",
                    "theory": "*",
                    "verdict": "error",
                    "reason": one_line_reason(exc),
                }
            )
            continue
        base.update({a: _setting(config.get(a)) for a in axes})
        base["seed"] = config.get("seed")
        base["status"] = state
        base["diverged"] = bool(summary.get("diverged", False)) if summary else False
        if state != "completed":
            continue
        cached = _cached_rows(run_dir / _CACHE, key)
        if cached is None:
            rows.append(
                {
                    **base,
                    "theory": "*",
                    "verdict": "error",
                    "reason": "not confronted under the current engine; run the atlas again",
                }
            )
            continue
        for entry in cached:
            row = {
                **base,
                "theory": entry.get("theory"),
                "stream": entry.get("stream", ""),
                "verdict": entry.get("verdict"),
                "reason": entry.get("reason", ""),
                "outside": ", ".join(_outside(entry)),
                "params_from": entry.get("params_from", ""),
            }
            for p in KEY_PARAMS.get(str(entry.get("theory")), ()):
                for suffix in ("", ".low", ".high", ".expected"):
                    row[f"{p}{suffix}"] = entry.get(f"params.{p}{suffix}", math.nan)
            rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs["axes"] = axes
    return table


def _unique_runs(table: pd.DataFrame) -> pd.DataFrame:
    """The run table with a cell that two blocks both ran (the base point) counted once per
    seed: the same settings and seed train the same network."""
    axes = _axes_of(table)
    keys = [k for k in (*axes, "seed", "theory", "stream") if k in table.columns]
    if table.empty or "seed" not in table.columns:
        return table
    out = table.drop_duplicates(subset=keys, keep="first").reset_index(drop=True)
    out.attrs["axes"] = axes
    return out


def _outside(entry: Mapping[str, Any]) -> list[str]:
    """The names of the assumptions a confronted stream is outside (``regime.<name>`` holds
    the reason; empty when inside, ``not recorded`` when unchecked)."""
    out = []
    for k, v in entry.items():
        if k.startswith("regime.") and isinstance(v, str) and v:
            if v != "not recorded" and not v.startswith("could not check"):
                out.append(k[len("regime.") :])
    return out


def _setting(v: Any) -> Any:
    return "-".join(map(str, v)) if isinstance(v, (list, tuple)) else v


def _axes_of(table: pd.DataFrame) -> list[str]:
    axes = table.attrs.get("axes")
    if axes:
        return [a for a in axes if a in table.columns]
    return [a for a in AXES if a in table.columns]


def _pool(values: np.ndarray, lows: np.ndarray, highs: np.ndarray) -> tuple[float, float, float]:
    """A cell's value and 95% interval from its seeds' estimates (module docstring)."""
    ok = np.isfinite(values) & (values > 0)
    v = np.log(values[ok])
    if v.size == 0:
        return math.nan, math.nan, math.nan
    lo, hi = lows[ok], highs[ok]
    z = float(ndtri(0.975))
    with np.errstate(divide="ignore", invalid="ignore"):
        se = (np.log(hi) - np.log(lo)) / (2 * z)
    se = np.where(np.isfinite(lo) & np.isfinite(hi), se, math.inf)
    if v.size == 1:
        return float(values[ok][0]), float(lo[0]), float(hi[0])
    n = v.size
    var = float(np.var(v, ddof=1)) / n + float(np.mean(se**2)) / n
    t = float(stdtrit(n - 1, 0.975))
    centre = float(v.mean())
    half = t * math.sqrt(var) if math.isfinite(var) else math.inf
    with np.errstate(over="ignore"):
        return math.exp(centre), math.exp(centre - half), float(np.exp(centre + half))


def _numbers(table: pd.DataFrame, column: str) -> np.ndarray:
    """``table[column]`` as floats (NaN where not a number; all NaN without the column)."""
    if column not in table.columns:
        return np.full(len(table), np.nan)
    return np.asarray(pd.to_numeric(table[column], errors="coerce"), dtype=np.float64)


def aggregate_cells(run_table: pd.DataFrame) -> pd.DataFrame:
    """One row per cell (combination of the axes' settings) and theory.

    Columns: the settings, ``theory``, ``n_runs``, ``share.<verdict>`` for every verdict of
    :data:`ncdynamics.theories.verdict.VERDICTS` (they sum to 1), ``verdict`` (the most common;
    a tie goes to the better verdict) and its ``reason`` (the first run's with that verdict),
    ``outside`` (the assumptions those runs are outside, the most common list),
    and per key parameter its value, ``.low``/``.high`` (95%, module docstring), ``.n`` (runs
    that gave it), ``.expected`` (the theory's prediction from the settings, median over the
    seeds) and ``.ratio`` (value / expected).
    """
    axes = _axes_of(run_table)
    if run_table.empty or "theory" not in run_table.columns:
        return pd.DataFrame(columns=[*axes, "theory", "n_runs", "verdict", "reason"])
    run_table = _unique_runs(run_table)
    table = (
        run_table[run_table["theory"] != "*"]
        if (run_table["theory"] == "*").any() and (run_table["theory"] != "*").any()
        else run_table
    )
    rows = []
    keys = [*axes, "theory"]
    for key, group in table.groupby(keys, sort=True, dropna=False):
        key_t = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(keys, key_t, strict=True))
        verdicts = group["verdict"].astype(str)
        n = len(group)
        row["n_runs"] = n
        counts = verdicts.value_counts()
        for v in VERDICTS:
            row[f"share.{v}"] = float(counts.get(v, 0)) / n
        order = {v: i for i, v in enumerate(VERDICTS)}
        modal = max(counts.index, key=lambda v: (counts[v], -order.get(v, len(order))))
        row["verdict"] = modal
        row["reason"] = str(group.loc[verdicts == modal, "reason"].iloc[0])
        if "outside" in group.columns:
            named = group.loc[verdicts == modal, "outside"].dropna().astype(str)
            named = named[named != ""]
            row["outside"] = str(named.value_counts().index[0]) if len(named) else ""
        determined = group[verdicts.isin(_DETERMINED)]
        for p in KEY_PARAMS.get(str(row["theory"]), ()):
            if p not in group.columns:
                continue
            vals = _numbers(determined, p)
            value, low, high = _pool(
                vals, _numbers(determined, f"{p}.low"), _numbers(determined, f"{p}.high")
            )
            row[p], row[f"{p}.low"], row[f"{p}.high"] = value, low, high
            row[f"{p}.n"] = int(np.sum(np.isfinite(vals) & (vals > 0)))
            exp = _numbers(group, f"{p}.expected")
            expected = float(np.nanmedian(exp)) if np.isfinite(exp).any() else math.nan
            row[f"{p}.expected"] = expected
            row[f"{p}.ratio"] = (
                value / expected if math.isfinite(expected) and expected else math.nan
            )
        rows.append(row)
    out = pd.DataFrame(rows)
    out.attrs["axes"] = axes
    return out


def dependence_table(run_table: pd.DataFrame) -> pd.DataFrame:
    """Each predicted dependence (:data:`PREDICTED`) fitted along its axis, once per line:
    the runs that share every other setting. Columns: ``theory``, ``param``, ``axis``,
    ``line`` (the other settings), ``predicted``, ``slope``, ``low``, ``high``, ``verdict``,
    ``reason``, ``n_runs``, ``n_settings``."""
    axes = _axes_of(run_table)
    rows: list[dict[str, Any]] = []
    if run_table.empty or "theory" not in run_table.columns:
        return pd.DataFrame(rows, columns=list(_DEPENDENCE_COLUMNS))
    run_table = _unique_runs(run_table)
    for pred in PREDICTED:
        if pred.axis not in axes:
            continue
        sub = run_table[
            (run_table["theory"] == pred.theory) & run_table["verdict"].isin(_DESCRIBED)
        ]
        if pred.param not in sub.columns or sub.empty:
            continue
        others = [a for a in axes if a != pred.axis]
        groups = list(sub.groupby(others, sort=True, dropna=False)) if others else [((), sub)]
        for key, g in groups:
            if g[pred.axis].nunique() < 2:
                continue
            key_t = key if isinstance(key, tuple) else (key,)
            line = ", ".join(
                f"{a}={v}"
                for a, v in zip(others, key_t, strict=True)
                if not (isinstance(v, float) and math.isnan(v))
            )
            dep = fit_dependence(
                pd.to_numeric(g[pred.axis], errors="coerce").to_numpy(float),
                pd.to_numeric(g[pred.param], errors="coerce").to_numpy(float),
                predicted=pred.exponent,
                low=pd.to_numeric(g[f"{pred.param}.low"], errors="coerce").to_numpy(float),
                high=pd.to_numeric(g[f"{pred.param}.high"], errors="coerce").to_numpy(float),
            )
            rows.append(
                {
                    "theory": pred.theory,
                    "param": pred.param,
                    "axis": pred.axis,
                    "line": line,
                    "predicted": pred.exponent,
                    "slope": dep.slope,
                    "low": dep.low,
                    "high": dep.high,
                    "verdict": dep.verdict,
                    "reason": dep.reason,
                    "n_runs": dep.n_runs,
                    "n_settings": dep.n_settings,
                    "why": pred.why,
                }
            )
    return pd.DataFrame(rows, columns=list(_DEPENDENCE_COLUMNS))


def _write_table(path: Path, name: str, df: pd.DataFrame) -> None:
    def parquet(p: Path) -> None:
        with open(p, "wb") as fh:
            df.to_parquet(fh, index=False)

    atomic_write(path / f"{name}.parquet", parquet)
    atomic_write(path / f"{name}.csv", lambda p: df.to_csv(p, index=False))


def _write_tables(
    path: Path, run_rows: pd.DataFrame, cells: pd.DataFrame, deps: pd.DataFrame
) -> None:
    for name, df in (("runs", run_rows), ("cells", cells), ("dependence", deps)):
        out = df.copy()
        out.attrs = {}
        _write_table(path, name, out)


def read_atlas(path: str | os.PathLike[str]) -> dict[str, Any]:
    """An atlas directory's tables (``runs``, ``cells``, ``dependence``) and ``atlas.json``
    (``meta``).

    Raises
    ------
    FileNotFoundError
        When ``path`` is not an atlas directory with its tables.
    """
    p = Path(path)
    if not (p / "atlas.json").is_file() or not (p / "cells.parquet").is_file():
        raise FileNotFoundError(
            f"`path` must be an atlas directory (atlas.json, cells.parquet); got {str(p)!r}."
        )
    meta = read_json(p / "atlas.json")
    if not isinstance(meta, dict):
        raise ValueError(f"{str(p / 'atlas.json')!r} must hold a JSON object.")
    out: dict[str, Any] = {"meta": meta}
    axes = [a for b in meta.get("plan", {}).get("blocks", []) for a in b.get("axes", {})]
    for name in ("runs", "cells", "dependence"):
        f = p / f"{name}.parquet"
        df = pd.read_parquet(f) if f.is_file() and f.stat().st_size else pd.DataFrame()
        df.attrs["axes"] = list(dict.fromkeys(axes))
        out[name] = df
    return out
