"""The run directory: config, status, metrics, arrays, checkpoints, figures, summary.

Layout of a run directory::

    config.json            resolved experiment config, experiment name, preset
    status.json            state (running / completed / failed), seed, versions, host, times
    metrics/part-*.parquet long table (step, name, value), one part per flush
    metrics.parquet        the parts compacted, written when the run completes
    arrays/<name>/<step>.npy
    checkpoints/step-<step>.pt
    figures/<name>.png
    summary.json           final scalars and notes written by the experiment
    report.html

Every file is written to a temporary name and renamed, so a run killed at any moment holds
only whole files. Metrics are flushed in parts; a resumed run may write a record for a step
again, and readers keep the last one.
"""

from __future__ import annotations

import datetime as _dt
import os
import platform
import re
import socket
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ._io import atomic_write, read_json, write_json, write_npy

__all__ = ["FORMAT_VERSION", "Run", "RunExistsError", "create", "open_run"]

FORMAT_VERSION = 1
_STATES = ("running", "completed", "failed")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


class RunExistsError(FileExistsError):
    """Raised when a directory already holds a completed run and overwriting was not asked."""


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds")


def _versions() -> dict[str, str]:
    import importlib.metadata as md

    out = {"python": platform.python_version(), "numpy": np.__version__, "pandas": pd.__version__}
    for pkg in ("ncdynamics", "torch", "scipy"):
        try:
            out[pkg] = md.version(pkg)
        except md.PackageNotFoundError:
            out[pkg] = "unknown"
    return out


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ValueError(
            f"`{what}` must contain only letters, digits, '.', '_' and '-'; got {name!r}."
        )
    return name


class Run:
    """A run directory opened for reading and, while running, for writing.

    Use :func:`ncdynamics.runs.create` to start or resume one and
    :func:`ncdynamics.runs.open` to read one.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._buffer: list[tuple[int, str, float]] = []
        self._warned_nonfinite = False

    # ------------------------------------------------------------------ metadata
    @property
    def config(self) -> dict[str, Any]:
        """The resolved config (``config.json``)."""
        return read_json(self.path / "config.json")

    @property
    def status(self) -> dict[str, Any]:
        """The status record (``status.json``)."""
        return read_json(self.path / "status.json")

    @property
    def state(self) -> str:
        return self.status["state"]

    @property
    def experiment(self) -> str | None:
        return self.config.get("experiment")

    def _set_status(self, **changes: Any) -> None:
        status = self.status if (self.path / "status.json").exists() else {}
        status.update(changes)
        write_json(self.path / "status.json", status)

    def mark_completed(self) -> None:
        """Flush, compact the metric parts and set the state to ``completed``."""
        self.flush()
        self._compact_metrics()
        self._set_status(state="completed", finished=_now(), error=None)

    def mark_failed(self, error: str) -> None:
        """Flush and set the state to ``failed`` with a one-line reason."""
        self.flush()
        self._set_status(state="failed", finished=_now(), error=error)

    # ------------------------------------------------------------------ metrics
    def log(self, step: int, values: Mapping[str, float] | None = None, **kw: float) -> None:
        """Buffer scalar records ``(step, name, value)``; :meth:`flush` writes them."""
        items = dict(values or {}, **kw)
        for name, value in items.items():
            v = float(value)
            if not np.isfinite(v) and not self._warned_nonfinite:
                warnings.warn(
                    f"metric {name!r} at step {step} is {v}; recorded as is.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self._warned_nonfinite = True
            self._buffer.append((int(step), str(name), v))

    def flush(self) -> None:
        """Write buffered metrics as a new Parquet part (atomically)."""
        if not self._buffer:
            return
        # pyarrow directly: a pandas round trip costs several times the write on the
        # Recorder's small parts (benchmarks/bench_recorder.py).
        import pyarrow as pa
        import pyarrow.parquet as pq

        steps, names, values = zip(*self._buffer, strict=True)
        table = pa.table(
            {
                "step": pa.array(steps, pa.int64()),
                "name": pa.array(names, pa.string()),
                "value": pa.array(values, pa.float64()),
            }
        )
        parts = self.path / "metrics"
        parts.mkdir(exist_ok=True)
        existing = sorted(parts.glob("part-*.parquet"))
        index = int(existing[-1].stem.split("-")[1]) + 1 if existing else 0
        atomic_write(parts / f"part-{index:06d}.parquet", lambda p: pq.write_table(table, p))
        self._buffer.clear()

    def _read_metric_frames(self) -> list[pd.DataFrame]:
        frames = []
        if (self.path / "metrics.parquet").exists():
            frames.append(pd.read_parquet(self.path / "metrics.parquet"))
        for part in sorted((self.path / "metrics").glob("part-*.parquet")):
            frames.append(pd.read_parquet(part))
        return frames

    @property
    def metrics(self) -> pd.DataFrame:
        """All scalar records as a long table with columns ``step, name, value``.

        Where a step was recorded twice (a resumed run), the last record wins.
        """
        frames = self._read_metric_frames()
        if self._buffer:
            frames.append(pd.DataFrame(self._buffer, columns=["step", "name", "value"]))
        if not frames:
            return pd.DataFrame(
                {
                    "step": pd.Series(dtype="int64"),
                    "name": pd.Series(dtype="string"),
                    "value": pd.Series(dtype="float64"),
                }
            )
        df = pd.concat(frames, ignore_index=True)
        df = df.astype({"step": "int64", "name": "string", "value": "float64"})
        df = df.drop_duplicates(["step", "name"], keep="last")
        return df.sort_values(["name", "step"], kind="stable").reset_index(drop=True)

    def metrics_wide(self) -> pd.DataFrame:
        """Metrics pivoted to one row per step and one column per name."""
        df = self.metrics
        if df.empty:
            return pd.DataFrame()
        return df.pivot(index="step", columns="name", values="value").sort_index()

    def drop_records_after(self, step: int) -> None:
        """Forget metric records and arrays after ``step`` (used when resuming)."""
        df = self.metrics
        keep = df[df["step"] <= step]
        atomic_write(self.path / "metrics.parquet", lambda p: keep.to_parquet(p, index=False))
        for part in (self.path / "metrics").glob("part-*.parquet"):
            part.unlink()
        for npy in (self.path / "arrays").glob("*/*.npy"):
            if int(npy.stem) > step:
                npy.unlink()

    def _compact_metrics(self) -> None:
        df = self.metrics
        atomic_write(self.path / "metrics.parquet", lambda p: df.to_parquet(p, index=False))
        for part in (self.path / "metrics").glob("part-*.parquet"):
            part.unlink()

    # ------------------------------------------------------------------ arrays
    def save_array(self, name: str, step: int, array: Any) -> Path:
        """Store one array of probe ``name`` at ``step`` as ``.npy``."""
        _check_name(name, "name")
        arr = np.asarray(array.detach().cpu() if hasattr(array, "detach") else array)
        return write_npy(self.path / "arrays" / name / f"{int(step):09d}.npy", arr)

    def array_names(self) -> list[str]:
        root = self.path / "arrays"
        return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.exists() else []

    def arrays(self, name: str) -> dict[int, np.ndarray]:
        """All arrays of probe ``name``, as ``{step: ndarray}`` in step order."""
        folder = self.path / "arrays" / name
        if not folder.is_dir():
            known = ", ".join(self.array_names()) or "none"
            raise KeyError(f"run {self.path} has no arrays named {name!r}; known: {known}.")
        return {int(p.stem): np.load(p) for p in sorted(folder.glob("*.npy"))}

    def array_stack(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """``(steps, values)`` with the arrays of ``name`` stacked along a first time axis."""
        series = self.arrays(name)
        steps = np.array(list(series), dtype=np.int64)
        return steps, np.stack(list(series.values())) if series else np.empty((0,))

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(
        self, step: int, state: Mapping[str, Any], *, tag: str = "main", keep: int = 2
    ) -> Path:
        """Save a torch checkpoint for ``step`` under ``checkpoints/<tag>/``.

        Buffered metrics are flushed first, so every record made before the checkpoint is
        on disk when it exists. The newest ``keep`` checkpoints of the tag are kept.
        """
        import io

        import torch

        _check_name(tag, "tag")
        self.flush()
        buf = io.BytesIO()
        torch.save({"step": int(step), **state}, buf)
        folder = self.path / "checkpoints" / tag
        path = atomic_write(
            folder / f"step-{int(step):09d}.pt", lambda p: p.write_bytes(buf.getvalue())
        )
        for old in sorted(folder.glob("step-*.pt"))[:-keep]:
            old.unlink()
        return path

    def load_checkpoint(self, tag: str = "main") -> dict[str, Any] | None:
        """The newest checkpoint of ``tag`` (a dict with ``step``), or ``None``."""
        import torch

        ckpts = sorted((self.path / "checkpoints" / tag).glob("step-*.pt"))
        if not ckpts:
            return None
        return torch.load(ckpts[-1], map_location="cpu", weights_only=False)

    # ------------------------------------------------------------------ figures, summary
    def save_figure(self, fig: Any, name: str, *, dpi: int = 110) -> Path:
        """Save a matplotlib figure as ``figures/<name>.png`` and close it."""
        import matplotlib.pyplot as plt

        _check_name(name, "name")
        path = atomic_write(
            self.path / "figures" / f"{name}.png",
            lambda p: fig.savefig(p, dpi=dpi, bbox_inches="tight", format="png"),
        )
        plt.close(fig)
        return path

    def figures(self) -> list[Path]:
        return sorted((self.path / "figures").glob("*.png"))

    def save_summary(self, summary: Mapping[str, Any]) -> Path:
        """Merge ``summary`` into ``summary.json`` (final scalars, claims checked, notes)."""
        current = self.summary
        current.update(summary)
        return write_json(self.path / "summary.json", current)

    @property
    def summary(self) -> dict[str, Any]:
        p = self.path / "summary.json"
        return read_json(p) if p.exists() else {}

    def __repr__(self) -> str:
        state = self.status.get("state", "?") if (self.path / "status.json").exists() else "?"
        return f"Run({str(self.path)!r}, state={state!r})"


def open_run(path: str | os.PathLike[str]) -> Run:
    """Open an existing run directory for reading.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a run directory.
    ValueError
        If it was written by a newer, unknown format version.
    """
    p = Path(path)
    if not (p / "status.json").is_file() or not (p / "config.json").is_file():
        raise FileNotFoundError(
            f"`path` must be a run directory holding status.json and config.json; got {str(p)!r}."
        )
    run = Run(p)
    version = run.status.get("format_version", 0)
    if version != FORMAT_VERSION:
        raise ValueError(
            f"run {str(p)!r} has format version {version}; this ncdynamics reads version "
            f"{FORMAT_VERSION}. Re-run the experiment with this version."
        )
    return run


def create(
    path: str | os.PathLike[str],
    *,
    config: Mapping[str, Any] | None = None,
    seed: int | None = None,
    experiment: str | None = None,
    preset: str | None = None,
    resume: bool = False,
    overwrite: bool = False,
) -> Run:
    """Create a run directory, or reopen one to resume it.

    Parameters
    ----------
    path : path-like
        Run directory.
    config : mapping, optional
        Resolved settings, stored as ``config.json``.
    seed : int, optional
        Seed of the run, stored in the status.
    experiment, preset : str, optional
        Names stored beside the config.
    resume : bool, default=False
        Reopen an unfinished run (state ``running`` or ``failed``) keeping its records.
    overwrite : bool, default=False
        Replace whatever the directory holds, a completed run included.

    Raises
    ------
    RunExistsError
        If the directory holds a completed run and ``overwrite`` is false, or holds an
        unfinished run and neither ``resume`` nor ``overwrite`` is set.
    """
    p = Path(path)
    full_config = {"experiment": experiment, "preset": preset, "seed": seed, **dict(config or {})}
    if (p / "status.json").exists():
        old = Run(p)
        state = old.status.get("state")
        if overwrite:
            import shutil

            shutil.rmtree(p)
        elif state == "completed":
            raise RunExistsError(
                f"`out` {str(p)!r} already holds a completed run; choose another directory "
                "or pass --overwrite."
            )
        elif resume:
            if old.config != _jsonable(full_config):
                raise ValueError(
                    f"cannot resume {str(p)!r}: its config differs from the one given. "
                    "Resume with the same experiment, preset and options."
                )
            old._set_status(state="running", resumed=_now(), host=socket.gethostname())
            return old
        else:
            raise RunExistsError(
                f"`out` {str(p)!r} holds an unfinished run (state {state!r}); "
                "pass --resume to continue it or --overwrite to start over."
            )
    elif p.exists() and any(p.iterdir()) and not overwrite:
        raise RunExistsError(
            f"`out` {str(p)!r} exists and is not a run directory; choose an empty directory."
        )
    p.mkdir(parents=True, exist_ok=True)
    write_json(p / "config.json", full_config)
    run = Run(p)
    run._set_status(
        state="running",
        format_version=FORMAT_VERSION,
        seed=seed,
        experiment=experiment,
        preset=preset,
        versions=_versions(),
        host=socket.gethostname(),
        platform=sys.platform,
        started=_now(),
        finished=None,
        error=None,
    )
    return run


def _jsonable(obj: Any) -> Any:
    import json

    from ._io import _json_default

    return json.loads(json.dumps(obj, default=_json_default))
