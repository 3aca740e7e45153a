"""Sweeps: a grid of config values times seeds, one run directory each, run on an executor.

Layout of a sweep directory::

    sweep.json           experiment, preset, overrides, grid, seeds; per run: attempts, errors
    <run-id>/            one run directory per grid point and seed (see ``docs/runs.md``)
    table.parquet        one row per run: grid values, seed, status, attempts, last error,
    table.csv            summary scalars (``summary.*``) and last metric values (``final.*``)
    .workers/<run-id>.json   process id and host of the worker that last took the run

A sweep run again into the same directory skips completed runs and resumes unfinished ones
(an interrupted sweep picks up where it stopped). A failed run is retried up to ``retries``
times in one invocation; every failure reason is kept in ``sweep.json`` and the last one in
the table. The sweep report (figures of each final metric against each grid value) is drawn
by :func:`ncdynamics.report.write_sweep_report`.
"""

from __future__ import annotations

import datetime as _dt
import itertools
import json
import os
import re
import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from .. import runs
from .._validation import check_int, check_option
from ..runs._io import TMP_RE, atomic_write, open_regular, read_json, write_json
from ..runs._layout import classify
from ..runs._lock import LOCK_NAME, DirLock, acquire
from ..theories.experiment import PRESETS, config_to_dict
from ._registry import get
from .executors import Executor, LocalExecutor, Task

__all__ = [
    "SWEEP_FORMAT_VERSION",
    "SweepPoint",
    "SweepResult",
    "expand_grid",
    "is_sweep",
    "read_sweep_table",
    "sweep",
    "sweep_summary_table",
    "write_sweep_table",
]

SWEEP_FORMAT_VERSION = 1
_SAFE = re.compile(r"[^A-Za-z0-9.+\-]+")


@dataclass(frozen=True)
class SweepPoint:
    """One run of a sweep: its directory name, grid values (as the config holds them), seed."""

    run_id: str
    values: Mapping[str, Any]
    seed: int


@dataclass(frozen=True)
class SweepResult:
    """What a sweep invocation did.

    Attributes
    ----------
    path : Path
        The sweep directory.
    table : DataFrame
        The sweep table (also in ``table.parquet`` and ``table.csv``).
    completed, failed, skipped : tuple of str
        Run ids completed in this invocation, failed after every retry, and skipped because
        they were already completed.
    """

    path: Path
    table: pd.DataFrame = field(repr=False)
    completed: tuple[str, ...]
    failed: tuple[str, ...]
    skipped: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return not self.failed


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _format_value(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if isinstance(v, float):
        return f"{v:g}"
    if isinstance(v, (list, tuple)):
        return "-".join(_format_value(x) for x in v)
    return _SAFE.sub("-", str(v)).strip("-") or "empty"


def _jsonable(v: Any) -> Any:
    return json.loads(json.dumps(v, default=str))


def _check_grid(
    spec_fields: Sequence[str], name: str, grid: Any, overrides: Mapping[str, Any]
) -> dict[str, list[Any]]:
    if not isinstance(grid, Mapping) or not grid:
        raise ValueError(
            "`grid` must map at least one option of the experiment to its values "
            f"(e.g. --grid lr=0.01,0.1); got {grid!r}."
        )
    out: dict[str, list[Any]] = {}
    for key, values in grid.items():
        if key not in spec_fields:
            raise ValueError(
                f"`grid` key {key!r} is not an option of experiment {name!r}; "
                f"its options: {', '.join(spec_fields)}."
            )
        if key in overrides:
            raise ValueError(f"`grid` key {key!r} is also given as an override; give it once.")
        vals = list(values) if isinstance(values, (list, tuple)) else [values]
        if not vals:
            raise ValueError(f"`grid` key {key!r} must have at least one value; got none.")
        out[key] = vals
    return out


def expand_grid(
    name: str,
    preset: str = "smoke",
    *,
    grid: Mapping[str, Any],
    seeds: int | Sequence[int] = 1,
    overrides: Mapping[str, Any] | None = None,
) -> tuple[SweepPoint, ...]:
    """The runs of a sweep: every combination of ``grid`` values, for every seed.

    Each combination is resolved into the experiment's config (preset, then ``overrides``,
    then the grid values), so an unknown key or a value of the wrong type fails here, before
    anything runs. Run ids read like ``lr=0.1_width=8_seed=0``.

    Parameters
    ----------
    name : str
        A registered experiment.
    preset : {"smoke", "cpu", "paper", "gpu"}
        ``gpu`` only for the experiments that declare it.
    grid : mapping of str to value or sequence of values
        Config fields and the values to sweep (strings are parsed as on the command line).
    seeds : int or sequence of int, default=1
        ``n`` means seeds ``0 .. n-1``.
    overrides : mapping, optional
        Config fields fixed for every run.
    """
    spec = get(name)
    check_option(preset, "preset", PRESETS)
    overrides = dict(overrides or {})
    import dataclasses

    fields = [f.name for f in dataclasses.fields(spec.config)]
    checked = _check_grid(fields, name, grid, overrides)
    if isinstance(seeds, bool):
        raise TypeError(f"`seeds` must be a count or a sequence of seeds; got {seeds!r}.")
    if isinstance(seeds, int):
        seed_list = list(range(check_int(seeds, "seeds", low=1)))
    else:
        seed_list = [check_int(s, "seeds", low=0) for s in seeds]
        if not seed_list or len(set(seed_list)) != len(seed_list):
            raise ValueError(f"`seeds` must be distinct and at least one; got {list(seeds)!r}.")
    points: list[SweepPoint] = []
    seen: dict[str, Mapping[str, Any]] = {}
    keys = list(checked)
    for combo in itertools.product(*(checked[k] for k in keys)):
        config = spec.make_config(preset, {**overrides, **dict(zip(keys, combo, strict=True))})
        resolved = config_to_dict(config)
        values = {k: resolved[k] for k in keys}
        stem = "_".join(f"{k}={_format_value(v)}" for k, v in values.items())
        if stem in seen:
            raise ValueError(
                f"`grid` values {seen[stem]!r} and {dict(zip(keys, combo, strict=True))!r} "
                "resolve to the same run; remove the duplicate."
            )
        seen[stem] = dict(zip(keys, combo, strict=True))
        for s in seed_list:
            points.append(SweepPoint(run_id=f"{stem}_seed={s}", values=values, seed=s))
    return tuple(points)


# ---------------------------------------------------------------------------- worker side
def _execute_point(
    sweep_dir: str,
    run_id: str,
    name: str,
    preset: str,
    seed: int,
    config: dict[str, Any],
    after_run: Callable[[runs.Run], Any] | None,
    device: str = "auto",
) -> str:
    """Run (or resume) one run of a sweep in this process, on ``device`` (resolved here, in
    the worker); returns its final state."""
    from ._registry import run as run_experiment

    root = Path(sweep_dir)
    out = root / run_id
    record = {"pid": os.getpid(), "host": socket.gethostname(), "started": _now()}
    write_json(root / ".workers" / f"{run_id}.json", record)
    state = _run_state(out, root)
    if state == "legacy-partial":  # an earlier version died inside runs.create: its config only
        (out / "config.json").unlink()
        state = None
    if state != "completed":
        run_ = run_experiment(
            name,
            preset,
            out,
            seed=seed,
            resume=state is not None,
            progress=False,
            device=device,
            **config,
        )
    else:
        run_ = runs.open_run(out)
    if after_run is not None:
        after_run(run_)
    return run_.state


def _run_state(out: Path, root: Path) -> str | None:
    """The state of a sweep's run directory, for the worker that takes it.

    ``None`` (nothing there yet), ``"partial"`` (killed inside ``runs.create`` before its
    status: resuming starts it), ``"legacy-partial"`` (the same, written by a version without
    the format marker: only a ``config.json``), or the run's state. Anything else, or a run
    of another format version, is an error naming the directory.
    """
    kind = classify(out)
    if kind in ("absent", "empty"):
        return None
    if kind == "run" and not (out / "status.json").is_file():
        return "partial"
    if kind == "foreign":
        names = {p.name for p in out.iterdir() if p.name != LOCK_NAME and not TMP_RE.match(p.name)}
        if names == {"config.json"}:
            return "legacy-partial"
        raise ValueError(
            f"run directory {str(out)!r} of sweep {str(root)!r} holds files but no run "
            "(no status.json); move it away and run the sweep again."
        )
    try:
        return runs.open_run(out).state
    except ValueError as exc:  # written by another format version
        raise ValueError(f"sweep {str(root)!r}: {exc}") from None


# ---------------------------------------------------------------------------- sweep dir
def is_sweep(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a sweep directory (holds ``sweep.json``)."""
    return (Path(path) / "sweep.json").is_file()


def _open_sweep_dir(path: Path, meta: dict[str, Any]) -> tuple[dict[str, Any], DirLock]:
    """The sweep's state (new or read back) and the sweep directory's lock.

    The lock makes one sweep process at a time work in a directory; a second invocation
    gets :class:`~ncdynamics.runs.RunInUseError` naming the PID of the first.
    """
    if path.exists() and not is_sweep(path):
        if not path.is_dir():
            raise runs.RunExistsError(f"`out` {str(path)!r} exists and is not a directory.")
        held = sorted(p.name for p in path.iterdir() if p.name != LOCK_NAME)
        if held:
            raise runs.RunExistsError(
                f"`out` {str(path)!r} exists and is not a sweep directory (it holds "
                f"{held[0]!r}); choose an empty directory."
            )
    path.mkdir(parents=True, exist_ok=True)
    lock = acquire(path, what="sweep directory")
    try:
        if not is_sweep(path):
            return {
                "format_version": SWEEP_FORMAT_VERSION,
                **meta,
                "created": _now(),
                "runs": {},
            }, lock
        state = read_json(path / "sweep.json")
        if not isinstance(state, dict):
            raise runs.RunCorruptError(
                f"{str(path / 'sweep.json')!r} must hold a JSON object; got {type(state).__name__}."
            )
        version = state.get("format_version", 0)
        if version != SWEEP_FORMAT_VERSION:
            raise ValueError(
                f"sweep {str(path)!r} has format version {version}; this ncdynamics reads "
                f"version {SWEEP_FORMAT_VERSION}. Run the sweep into a new --out."
            )
        differs = [k for k in meta if state.get(k) != meta[k]]
        if differs:
            raise ValueError(
                f"`out` {str(path)!r} holds a sweep with another {', '.join(differs)}; "
                "choose another directory, or give the same settings to resume it."
            )
        return state, lock
    except BaseException:
        lock.release()
        raise


def _flatten(prefix: str, obj: Any, out: dict[str, float]) -> None:
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            _flatten(f"{prefix}.{k}", v, out)
    elif isinstance(obj, (int, float)) and not isinstance(obj, bool):
        out[prefix] = float(obj)


def _run_row(path: Path, point: Mapping[str, Any]) -> dict[str, Any]:
    row: dict[str, Any] = {"status": "pending"}
    out = path / point["run_id"]
    if not (out / "status.json").is_file():
        return row
    try:
        run_ = runs.open_run(out)
        status = run_.status
        row["status"] = status.get("state", "?")
        row["started"], row["finished"] = status.get("started"), status.get("finished")
        _flatten("summary", run_.summary, row)
        wide = run_.metrics_wide()
    except runs.RunCorruptError as exc:  # one damaged run must not hide the others
        row["status"], row["error"] = "damaged", str(exc)
        return row
    if not wide.empty:
        last = wide.ffill().iloc[-1]
        row.update({f"final.{k}": float(v) for k, v in last.items()})
    return row


def write_sweep_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Rebuild the sweep table from the run directories; write Parquet and CSV; return it."""
    path = Path(path)
    state = read_json(path / "sweep.json")
    rows = []
    for run_id, info in state["runs"].items():
        row: dict[str, Any] = {"run_id": run_id}
        row.update({k: _cell(v) for k, v in info["values"].items()})
        row["seed"] = info["seed"]
        row["attempts"] = info.get("attempts", 0)
        errors = info.get("errors", [])
        row["error"] = errors[-1] if errors else None
        row.update(_run_row(path, {"run_id": run_id}))
        if row["status"] == "completed":
            row["error"] = None
        rows.append(row)
    df = pd.DataFrame(rows)

    def _parquet(p: Path) -> None:
        with open(p, "wb") as fh:  # a file object: "lr:0.1/..." is a path, not a URI
            df.to_parquet(fh, index=False)

    atomic_write(path / "table.parquet", _parquet)
    atomic_write(path / "table.csv", lambda p: df.to_csv(p, index=False))
    return df


def _cell(v: Any) -> Any:
    return "-".join(map(str, v)) if isinstance(v, (list, tuple)) else v


def read_sweep_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The sweep table of a sweep directory (``table.parquet``)."""
    p = Path(path) / "table.parquet"
    if not p.is_file():
        raise FileNotFoundError(f"`path` must be a sweep directory with table.parquet; got {path}.")
    with os.fdopen(open_regular(p), "rb") as fh:  # a regular file, never a URI
        return pd.read_parquet(fh)


def sweep_summary_table(path: str | os.PathLike[str]) -> pd.DataFrame:
    """The sweep table cut to what a paper's table shows: one row per run, the grid values,
    the seed, the status and the experiment's summary scalars (``summary.`` dropped from
    their names); the last metric values (``final.``, prefix dropped) when the experiment
    stores no summary.

    Parameters
    ----------
    path : path-like
        A sweep directory (its ``sweep.json`` and ``table.parquet``).
    """
    path = Path(path)
    if not is_sweep(path):
        raise FileNotFoundError(f"`path` must be a sweep directory with sweep.json; got {path}.")
    table = read_sweep_table(path)
    grid = [k for k in read_json(path / "sweep.json").get("grid", {}) if k in table.columns]
    for prefix in ("summary.", "final."):
        values = [c for c in table.columns if c.startswith(prefix)]
        if values:
            break
    keep = [*grid, *(c for c in ("seed", "status") if c in table.columns), *values]
    out = table[keep].copy()
    out.columns = [c[len(prefix) :] if c in values else c for c in keep]
    return out


# ---------------------------------------------------------------------------- runner
def sweep(
    name: str,
    preset: str = "smoke",
    out: str | os.PathLike[str] | None = None,
    *,
    grid: Mapping[str, Any],
    seeds: int | Sequence[int] = 1,
    overrides: Mapping[str, Any] | None = None,
    executor: Executor | None = None,
    retries: int = 1,
    after_run: Callable[[runs.Run], Any] | None = None,
    progress: bool = False,
    device: str = "auto",
) -> SweepResult:
    """Run experiment ``name`` over a grid of config values and seeds.

    Parameters
    ----------
    name, preset, grid, seeds, overrides
        As in :func:`expand_grid`.
    out : path-like, optional
        Sweep directory; defaults to ``runs/sweep-<name>-<preset>``. Running again into the
        same directory with the same settings skips completed runs and resumes the others.
    executor : Executor, optional
        Where runs execute; defaults to a one-worker :class:`LocalExecutor` (closed at the
        end; an executor passed in is left open).
    retries : int, default=1
        Extra attempts for a run that fails (raises, or its worker dies) in this invocation.
    after_run : callable, optional
        A module-level function called with the completed :class:`~ncdynamics.runs.Run` in
        the worker, e.g. :func:`ncdynamics.report.write_report`.
    progress : bool, default=False
        Show a progress bar over runs.
    device : {"auto", "cpu", "cuda", "cuda:N"}, default="auto"
        Where each run trains, resolved by the worker that runs it (``auto``: CUDA when that
        worker has it); only the spelling is checked here.

    Returns
    -------
    SweepResult

    Raises
    ------
    ValueError
        Bad grid, or ``out`` holds a sweep with other settings or runs of another format.
    KeyboardInterrupt
        After the running runs were stopped and the table written; run again to resume.
    """
    from ..training.devices import check_device_spec

    retries = check_int(retries, "retries", low=0)
    device = check_device_spec(device)
    points = expand_grid(name, preset, grid=grid, seeds=seeds, overrides=overrides)
    path = Path(out) if out is not None else Path("runs") / f"sweep-{name}-{preset}"
    overrides = dict(overrides or {})
    meta = _jsonable(
        {
            "experiment": name,
            "preset": preset,
            "overrides": overrides,
            "grid": {k: list(v) if isinstance(v, (list, tuple)) else [v] for k, v in grid.items()},
            "seeds": sorted({p.seed for p in points}),
        }
    )
    state, lock = _open_sweep_dir(path, meta)
    try:
        return _sweep_locked(
            path,
            state,
            points,
            name,
            preset,
            overrides,
            executor,
            retries,
            after_run,
            progress,
            device,
        )
    finally:
        lock.release()


def _sweep_locked(
    path: Path,
    state: dict[str, Any],
    points: tuple[SweepPoint, ...],
    name: str,
    preset: str,
    overrides: dict[str, Any],
    executor: Executor | None,
    retries: int,
    after_run: Callable[[runs.Run], Any] | None,
    progress: bool,
    device: str = "auto",
) -> SweepResult:
    """The body of :func:`sweep`, run while this process holds the sweep directory's lock."""
    states = {p.run_id: _run_state(path / p.run_id, path) for p in points}
    for p in points:
        state["runs"].setdefault(
            p.run_id, {"values": _jsonable(p.values), "seed": p.seed, "attempts": 0, "errors": []}
        )
    write_json(path / "sweep.json", state)
    skipped = tuple(p.run_id for p in points if states[p.run_id] == "completed")
    queue = [p for p in points if states[p.run_id] != "completed"]
    tries = {p.run_id: 0 for p in queue}
    completed: list[str] = []
    failed: list[str] = []
    own = executor is None
    executor = executor if executor is not None else LocalExecutor(workers=1)
    from tqdm.auto import tqdm

    bar = tqdm(total=len(queue), desc=f"sweep {name}", disable=not progress, leave=False)
    by_id = {p.run_id: p for p in points}
    try:
        while queue:
            tasks = [
                Task(
                    p.run_id,
                    _execute_point,
                    (
                        str(path),
                        p.run_id,
                        name,
                        preset,
                        p.seed,
                        {**overrides, **p.values},
                        after_run,
                        device,
                    ),
                )
                for p in queue
            ]
            queue = []
            for outcome in executor.run(tasks):
                info = state["runs"][outcome.key]
                info["attempts"] = info.get("attempts", 0) + 1
                tries[outcome.key] += 1
                if outcome.ok:
                    completed.append(outcome.key)
                    bar.update(1)
                else:
                    info["errors"].append(outcome.error)
                    if tries[outcome.key] <= retries:
                        queue.append(by_id[outcome.key])
                    else:
                        failed.append(outcome.key)
                        bar.update(1)
                state["updated"] = _now()
                write_json(path / "sweep.json", state)
    finally:
        bar.close()
        if own:
            executor.close()
        write_json(path / "sweep.json", state)
        table = write_sweep_table(path)
    return SweepResult(
        path=path,
        table=table,
        completed=tuple(completed),
        failed=tuple(failed),
        skipped=skipped,
    )
