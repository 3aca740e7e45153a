"""The run directory: config, status, metrics, arrays, checkpoints, figures, summary.

Layout of a run directory::

    .ncdynamics-run        format marker, {"format": 1}: what makes a directory a run
    .lock                  the writer's lock (PID and host of the process holding it)
    config.json            resolved experiment config, experiment name, preset
    status.json            state (running / completed / failed), seed, versions, host, times
    metrics/part-<n>-<pid>-<token>.parquet  long table (step, name, value), one per flush
    metrics/journal-<n>-<pid>-<token>.jsonl  records logged since the last flush, appended
                           as they are made (one checksummed line per append)
    metrics.parquet        the parts compacted, written when the run completes
    arrays/<name>/<step>.npy
    checkpoints/<tag>/step-<step>.pt
    figures/<name>.png
    summary.json           final scalars and notes written by the experiment
    report.html            written by ncdynamics.report
    error.txt              traceback of a failed attempt (removed when the run completes)

Every file is written to a temporary name and renamed, so a run killed at any moment holds
only whole files, except the metric journal, which is appended to: each line carries a
CRC-32 of its content and a line cut short by a kill is ignored. Metrics are flushed in
parts; a resumed run may write a record for a step again, and readers keep the last one. One
process writes a run at a time (an OS lock, ``_lock.py``); metric files carry checksums
(``_tables.py``); checkpoints load without running code (``_checkpoint.py``); ``overwrite``
deletes only the store's own files (``_layout.py``). docs/runs.md states the guarantees.
"""

from __future__ import annotations

import datetime as _dt
import functools
import html
import json
import operator
import os
import platform
import re
import secrets
import socket
import stat
import subprocess
import sys
import time
import warnings
import zlib
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from .._reasons import one_line_reason
from ._checkpoint import load_checkpoint_file, reason
from ._errors import RunCorruptError, RunExistsError, RunInUseError
from ._io import (
    _json_default,
    atomic_write,
    open_regular,
    read_bounded,
    read_json,
    write_json,
    write_npy,
)
from ._layout import (
    MARKER,
    MARKER_FORMAT,
    Kind,
    classify,
    first_foreign,
    first_link,
    read_marker,
    real_folder,
    remove_leftovers,
    remove_store_files,
)
from ._lock import DirLock, acquire
from ._signals import interruption_reason, unwatch, watch
from ._tables import read_metric_table, write_metric_table

__all__ = [
    "FORMAT_VERSION",
    "Run",
    "RunCorruptError",
    "RunExistsError",
    "RunInUseError",
    "create",
    "open_run",
]

FORMAT_VERSION = 1
_STATES = ("running", "completed", "failed")
_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")


def _escape(value: Any) -> str:
    """``str(value)`` escaped for HTML text and attributes (runs/ does not import report/)."""
    return html.escape(str(value), quote=True)


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
    out["ncdynamics_commit"] = source_commit() or "unknown"
    return out


@functools.cache
def source_commit() -> str | None:
    """The git commit of the ncdynamics source, ``+dirty`` when it has uncommitted changes;
    ``None`` for an installed wheel or where git is not available."""
    src = Path(__file__).resolve().parents[1]
    if not any((d / ".git").exists() for d in src.parents):
        return None
    try:
        head = subprocess.run(
            ["git", "-C", str(src), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(src), "status", "--porcelain", "--untracked-files=no", "."],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def _check_name(name: str, what: str) -> str:
    if not isinstance(name, str) or not _NAME_RE.match(name) or not name.strip("."):
        raise ValueError(
            f"`{what}` must contain only letters, digits, '.', '_' and '-', and not only "
            f"dots; got {name!r}."
        )
    return name


def _part_index(path: Path) -> int:
    """The write-order index of ``part-<index>[-<pid>-<token>].parquet``."""
    return int(path.name.split("-")[1].split(".")[0])


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _step_value(step: Any) -> int:
    """``step`` as an int: an integer (NumPy and torch ones too) or an integral float."""
    if isinstance(step, bool):
        raise ValueError(f"`step` must be an integer; got {step!r}.")
    try:
        return operator.index(step)
    except TypeError:
        pass
    if isinstance(step, float) and step.is_integer():
        return int(step)
    raise ValueError(f"`step` must be an integer; got {_short_repr(step)}.")


def _short_repr(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


#: How many times a reader starts over when the writer compacts the metrics meanwhile.
_READ_ATTEMPTS = 5


def _identity(path: Path) -> tuple[int, int, int] | None:
    """``(device, inode, mtime_ns)`` of ``path``, or ``None`` when it does not exist."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return (info.st_dev, info.st_ino, info.st_mtime_ns)


def _is_regular(path: Path) -> bool:
    try:
        return stat.S_ISREG(os.lstat(path).st_mode)
    except OSError:
        return False


#: Largest metrics journal read (a journal holds the records between two flushes).
_JOURNAL_LIMIT = 1 << 30


def _metric_file_order(path: Path) -> tuple[int, int, str]:
    """Read order of the metric files: by write index, a journal before the part of its index
    (a kill between writing the part and removing the journal leaves both, the same records)."""
    return (_part_index(path), 0 if path.name.startswith("journal-") else 1, path.name)


def _read_journal(path: Path) -> pd.DataFrame | None:
    """The records of a metric journal (``None`` if it vanished: a flush just replaced it).

    Every complete line is ``<crc32 hex> <JSON list of [step, name, value]>``; bytes after
    the last newline are a write a kill cut short and are ignored. A complete line whose
    checksum does not match is damage, raised as :class:`RunCorruptError` naming the file.
    """
    try:  # a regular file inside the run, not a link or a FIFO (RunCorruptError otherwise)
        data = read_bounded(path, _JOURNAL_LIMIT, "metrics journal")
    except FileNotFoundError:
        return None
    records: list[Any] = []
    for number, line in enumerate(data.split(b"\n")[:-1], start=1):
        crc, _, payload = line.partition(b" ")
        try:
            ok = int(crc, 16) == zlib.crc32(payload)
            rows = json.loads(payload) if ok else None
        except ValueError:
            ok = False
        if not ok or not isinstance(rows, list):
            raise RunCorruptError(
                f"metrics journal {str(path)!r} is damaged (line {number} does not match its "
                "checksum); its records cannot be trusted. Move it out of the run directory "
                "to read the rest."
            )
        records.extend(rows)
    return pd.DataFrame(records, columns=["step", "name", "value"])


def _step_of(path: Path) -> int:
    return int(path.stem.split("-")[1])


class Run:
    """A run directory opened for reading and, while running, for writing.

    Use :func:`ncdynamics.runs.create` to start or resume one (the returned run holds the
    directory's lock until :meth:`close` or the end of the process) and
    :func:`ncdynamics.runs.open` to read one.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        #: Whether leaving a ``with`` block normally marks a still-running run completed.
        self.complete_on_exit = True
        self._buffer: list[tuple[int, str, float]] = []
        self._warned_nonfinite = False
        self._lock: DirLock | None = None
        self._next_part: int | None = None
        #: Seconds between two appends of :meth:`log` to the journal (a Recorder's record
        #: appends at once, see :meth:`persist`).
        self.persist_every = 2.0
        self._journal_fd: int | None = None
        self._journal_path: Path | None = None
        self._journaled = 0  # how many records of the buffer the journal holds
        self._persisted_at = time.monotonic()

    # ------------------------------------------------------------------ lock
    def close(self) -> None:
        """Release the directory's lock (idempotent); buffered records are not flushed."""
        self._close_journal()
        unwatch(self)
        if self._lock is not None:
            self._lock.release()
            self._lock = None

    def finish(self, error: BaseException | str | None = None) -> None:
        """Close a run this process writes: mark it completed or failed, then release it.

        Only a run that this process created (it holds the lock) and that is still
        ``running`` is marked: ``completed`` when ``error`` is ``None`` (and
        :attr:`complete_on_exit` is true), otherwise ``failed`` with a one-line reason
        (``"ZeroDivisionError: division by zero"`` for an exception). A state set before
        (``mark_completed``, ``mark_failed``) is kept. The lock is released in every case.
        """
        try:
            if self._lock is not None and self.state == "running":
                if error is not None:
                    if not isinstance(error, str):
                        error = interruption_reason(error) or one_line_reason(error)
                    self.mark_failed(error)
                elif self.complete_on_exit:
                    self.mark_completed()
        finally:
            self.close()

    def __enter__(self) -> Run:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Leave ``with runs.create(...) as run:``: see :meth:`finish` (exceptions propagate)."""
        self.finish(exc)

    # ------------------------------------------------------------------ metadata
    def _read_object(self, name: str) -> dict[str, Any]:
        path = self.path / name
        value = read_json(path)
        if not isinstance(value, dict):
            raise RunCorruptError(
                f"{str(path)!r} must hold a JSON object; got {type(value).__name__}."
            )
        return value

    @property
    def config(self) -> dict[str, Any]:
        """The resolved config (``config.json``)."""
        return self._read_object("config.json")

    def record_settings(self, settings: Mapping[str, Any], *, stream: str | None = None) -> None:
        """Add training settings the run did not declare to ``config.json``.

        ``stream`` (a Recorder's prefix without its ``/``) puts them under
        ``config["streams"][stream]``, where :meth:`Stream.setting
        <ncdynamics.theories.confrontation.Stream.setting>` looks first; else at the top
        level. A key the config already declares keeps its declared value (a different value
        is warned about). The keys added are listed in ``status.json`` (``recorded_settings``),
        so resuming with the config first given is not refused as a different one.
        """
        config = self.config
        target: dict[str, Any] = config
        if stream:
            streams = config.setdefault("streams", {})
            if not isinstance(streams, dict):
                raise ValueError(
                    f"config key 'streams' of run {str(self.path)!r} must be a mapping to "
                    f"record settings of stream {stream!r}; got {type(streams).__name__}."
                )
            target = streams.setdefault(stream, {})
        added = []
        for key, value in _jsonable(dict(settings)).items():
            if key not in target:
                target[key] = value
                added.append(f"{stream}/{key}" if stream else key)
            elif target[key] != value:
                warnings.warn(
                    f"setting {key!r} of run {str(self.path)!r}"
                    f"{f' (stream {stream!r})' if stream else ''} is declared as "
                    f"{target[key]!r} in its config but the training uses {value!r}; the "
                    "declared value is kept.",
                    UserWarning,
                    stacklevel=3,
                )
        if not added:
            return
        known = list(self.status.get("recorded_settings") or [])
        write_json(self.path / "config.json", config)
        self._set_status(recorded_settings=known + [k for k in added if k not in known])

    @property
    def status(self) -> dict[str, Any]:
        """The status record (``status.json``)."""
        return self._read_object("status.json")

    @property
    def state(self) -> str:
        state = self.status.get("state")
        if state not in _STATES:
            raise RunCorruptError(
                f"{str(self.path / 'status.json')!r} must give a state among "
                f"{', '.join(_STATES)}; got {state!r}."
            )
        return str(state)

    @property
    def experiment(self) -> str | None:
        name = self.config.get("experiment")
        return None if name is None else str(name)

    def _set_status(self, **changes: Any) -> None:
        status = self.status if (self.path / "status.json").exists() else {}
        status.update(changes)
        write_json(self.path / "status.json", status)

    def mark_completed(self) -> None:
        """Flush, compact the metric parts, set the state to ``completed`` and tidy up.

        Tidying removes the temporary files of writes that a kill interrupted and the
        ``error.txt`` of an earlier failed attempt.
        """
        self.flush()
        self._compact_metrics()
        self._set_status(state="completed", finished=_now(), error=None)
        remove_leftovers(self.path)

    def mark_failed(self, error: str) -> None:
        """Flush and set the state to ``failed`` with a one-line reason."""
        self.flush()
        self._set_status(state="failed", finished=_now(), error=error)

    # ------------------------------------------------------------------ metrics
    def log(self, step: int, values: Mapping[str, float] | None = None, **kw: float) -> None:
        """Buffer scalar records ``(step, name, value)``; :meth:`flush` writes them.

        ``step`` must be an integer in the 64-bit range the metrics files hold and each
        value a real number; anything else is a ``ValueError`` here, before it is buffered
        (a step that fails only when written would leave the run unable to finish).

        The buffer also reaches the journal every :attr:`persist_every` seconds (at the
        first ``log`` after that much time), so a run killed between flushes loses at most
        those seconds of ``log`` calls; a Recorder's records reach it at once.
        """
        step = _step_value(step)
        if not _INT64_MIN <= step <= _INT64_MAX:
            raise ValueError(
                f"`step` must be within the 64-bit integer range [-2**63, 2**63 - 1]; got {step}."
            )
        items = dict(values or {}, **kw)
        checked = []
        for name, value in items.items():
            try:
                checked.append((str(name), float(value)))
            except (TypeError, ValueError, OverflowError):
                raise ValueError(
                    f"metric {str(name)!r} at step {step} must be a real number; got "
                    f"{_short_repr(value)}."
                ) from None
        for name, v in checked:
            if not np.isfinite(v) and not self._warned_nonfinite:
                warnings.warn(
                    f"metric {name!r} at step {step} is {v}; recorded as is.",
                    RuntimeWarning,
                    stacklevel=2,
                )
                self._warned_nonfinite = True
            self._buffer.append((int(step), str(name), v))
        if time.monotonic() - self._persisted_at >= self.persist_every:
            self.persist()

    def persist(self) -> None:
        """Append the records logged since the last call to the run's metric journal.

        One ``write`` of one checksummed line to ``metrics/journal-*.jsonl``, without fsync: a
        killed process loses nothing that was persisted (the operating system holds the
        write), at a cost of tens of microseconds. :meth:`flush` turns the buffer into a
        Parquet part and removes the journal; readers read both.
        """
        self._persisted_at = time.monotonic()
        new = self._buffer[self._journaled :]
        if not new:
            return
        payload = json.dumps(new, separators=(",", ":")).encode()
        line = b"%08x %s\n" % (zlib.crc32(payload), payload)
        if self._journal_fd is None:
            index = self._next_index()
            folder = real_folder(self.path, "metrics")
            name = f"journal-{index:06d}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | os.O_CLOEXEC
            fd = os.open(folder / name, flags | getattr(os, "O_NOFOLLOW", 0), 0o666)
            self._journal_fd, self._journal_path = fd, folder / name
        view = memoryview(line)
        try:
            while view:
                view = view[os.write(self._journal_fd, view) :]
        except BaseException:
            # a line cut short stays last in its file (readers ignore it): the next append
            # starts a new journal, with these records again
            os.close(self._journal_fd)
            self._journal_fd = None
            raise
        self._journaled = len(self._buffer)

    def _close_journal(self, *, remove: bool = False) -> None:
        """Close this process's journal (and delete it: its records are in a part now)."""
        if self._journal_fd is not None:
            os.close(self._journal_fd)
            self._journal_fd = None
        if remove and self._journal_path is not None:
            self._journal_path.unlink(missing_ok=True)
            self._journal_path = None
        self._journaled = 0

    def _next_index(self) -> int:
        if self._next_part is None:
            found = self._metric_files()
            self._next_part = _part_index(found[-1]) + 1 if found else 0
        return self._next_part

    def _metric_files(self) -> list[Path]:
        """The metric parts and journals in write order."""
        folder = real_folder(self.path, "metrics", create=False)
        if folder is None:
            return []
        found = [*folder.glob("part-*.parquet"), *folder.glob("journal-*.jsonl")]
        return sorted(found, key=_metric_file_order)

    def flush(self) -> None:
        """Write buffered metrics as a new Parquet part (atomically).

        A part is named ``part-<index>-<pid>-<token>.parquet``: the index orders the parts
        in write order (the lock makes this process the only writer), and the process id
        and a random token keep two names from ever colliding.
        """
        if not self._buffer:
            return
        index = self._next_index()
        steps, names, values = zip(*self._buffer, strict=True)
        name = f"part-{index:06d}-{os.getpid()}-{secrets.token_hex(4)}.parquet"
        write_metric_table(real_folder(self.path, "metrics") / name, steps, names, values)
        self._next_part = index + 1
        self._buffer.clear()
        self._close_journal(remove=True)  # its records are in the part

    def _read_metric_frames(self) -> list[pd.DataFrame]:
        """The metric files' records, read as one consistent state.

        The writer's compaction (at the end of a run) writes ``metrics.parquet`` anew and
        then deletes the parts it holds; a reader overlapping it may find a part gone, or
        the parts gone after it read the earlier ``metrics.parquet``. Either is seen (a
        part missing, or ``metrics.parquet`` replaced while reading) and the read starts
        over, so a reader never calls a run being compacted damaged, nor misses records.
        """
        compacted = self.path / "metrics.parquet"
        for attempt in range(_READ_ATTEMPTS):
            before = _identity(compacted)
            try:
                frames = []
                if before is not None:
                    frames.append(read_metric_table(compacted))
                for path in self._metric_files():
                    if path.suffix == ".jsonl":
                        journal = _read_journal(path)
                        if journal is not None and len(journal):
                            frames.append(journal)
                    else:
                        frames.append(read_metric_table(path))
            except FileNotFoundError:
                if attempt + 1 == _READ_ATTEMPTS:
                    raise
                continue
            if _identity(compacted) == before:
                return frames
        raise RunCorruptError(  # pragma: no cover - a writer compacting without end
            f"the metrics of {str(self.path)!r} changed under {_READ_ATTEMPTS} reads in a "
            "row; read the run again when its writer has finished."
        )

    @property
    def metrics(self) -> pd.DataFrame:
        """All scalar records as a long table with columns ``step, name, value``.

        Where a step was recorded twice (a resumed run), the last record wins. Every file
        is verified (page checksums and a content digest); a damaged one raises
        :class:`RunCorruptError` naming it.
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

    def _write_compacted(self, df: pd.DataFrame) -> None:
        """``df`` as ``metrics.parquet``, then the parts (now in it) removed."""
        write_metric_table(
            self.path / "metrics.parquet",
            df["step"].to_numpy(np.int64),
            df["name"].to_numpy(dtype=object),
            df["value"].to_numpy(np.float64),
        )
        self._close_journal(remove=True)
        for part in self._metric_files():
            part.unlink(missing_ok=True)

    def drop_records_after(self, step: int) -> None:
        """Forget metric records and arrays after ``step`` (used when resuming).

        Records at ``step`` itself are kept; so are buffered records up to it (they are
        written with the rest).
        """
        df = self.metrics
        self._write_compacted(df[df["step"] <= step])
        self._buffer.clear()
        arrays = real_folder(self.path, "arrays", create=False)
        for sub in sorted(arrays.iterdir()) if arrays is not None else []:
            if sub.is_symlink() or not sub.is_dir():
                continue  # not the store's: never followed
            for npy in sub.glob("*.npy"):
                if int(npy.stem) > step:
                    npy.unlink()

    def _compact_metrics(self) -> None:
        self._write_compacted(self.metrics)

    # ------------------------------------------------------------------ arrays
    def save_array(self, name: str, step: int, array: Any) -> Path:
        """Store one array of probe ``name`` at ``step`` as ``.npy``."""
        _check_name(name, "name")
        arr = np.asarray(array.detach().cpu() if hasattr(array, "detach") else array)
        folder = real_folder(self.path, "arrays", name)
        return write_npy(folder / f"{int(step):09d}.npy", arr)

    def array_names(self) -> list[str]:
        root = self.path / "arrays"
        return sorted(p.name for p in root.iterdir() if p.is_dir()) if root.exists() else []

    def arrays(self, name: str) -> dict[int, NDArray[Any]]:
        """All arrays of probe ``name``, as ``{step: ndarray}`` in step order."""
        if not isinstance(name, str) or "/" in name or os.sep in name or not name.strip("."):
            # a crafted run may hold any folder name; reading never leaves arrays/
            raise KeyError(f"run {self.path} has no arrays named {name!r}.")
        folder = self.path / "arrays" / name
        if folder.is_symlink() or not folder.is_dir():
            known = ", ".join(self.array_names()) or "none"
            raise KeyError(f"run {self.path} has no arrays named {name!r}; known: {known}.")
        out = {}
        for p in sorted(folder.glob("*.npy")):
            # a regular file inside the run only (a FIFO would block, a link read elsewhere)
            with os.fdopen(open_regular(p), "rb") as fh:
                out[int(p.stem)] = np.load(fh, allow_pickle=False)
        return out

    # ------------------------------------------------------------------ checkpoints
    def _checkpoints(self, tag: str) -> list[Path]:
        folder = real_folder(self.path, "checkpoints", tag, create=False)
        return sorted(folder.glob("step-*.pt"), key=_step_of) if folder is not None else []

    def save_checkpoint(
        self, step: int, state: Mapping[str, Any], *, tag: str = "main", keep: int = 2
    ) -> Path:
        """Save a torch checkpoint for ``step`` under ``checkpoints/<tag>/``.

        Buffered metrics are flushed first, so every record made before the checkpoint is
        on disk when it exists. The newest ``keep`` checkpoints of the tag are kept, and
        checkpoints of later steps are removed (left by a run that resumed from an earlier
        checkpoint because a later one was damaged). ``state`` must hold only what
        :meth:`load_checkpoint` accepts: tensors, numbers, strings, lists, tuples and dicts
        (``state_dict()`` s and RNG states do).
        """
        import io

        import torch

        _check_name(tag, "tag")
        self.flush()
        buf = io.BytesIO()
        torch.save({"step": int(step), **state}, buf)
        folder = real_folder(self.path, "checkpoints", tag)
        path = atomic_write(
            folder / f"step-{int(step):09d}.pt", lambda p: p.write_bytes(buf.getvalue())
        )
        for stale in self._checkpoints(tag):
            if _step_of(stale) > int(step):
                stale.unlink()
        for old in self._checkpoints(tag)[:-keep]:
            old.unlink()
        return path

    def load_checkpoint(self, tag: str = "main") -> dict[str, Any] | None:
        """The newest loadable checkpoint of ``tag`` (a dict with ``step``), or ``None``.

        Checkpoints load with ``torch.load(weights_only=True)``: tensors and plain
        containers only, so a crafted file runs no code. When the newest one cannot be
        loaded (damaged, truncated, or holding anything else), the previous kept checkpoint
        is used and a ``RuntimeWarning`` names both files.

        Raises
        ------
        RunCorruptError
            If checkpoints of ``tag`` exist and none of them can be loaded.
        """
        ckpts = self._checkpoints(tag)
        if not ckpts:
            return None
        failed: list[tuple[Path, str]] = []
        for path in reversed(ckpts):
            try:
                state = load_checkpoint_file(path)
            except Exception as exc:  # noqa: BLE001 - any failure makes this file unusable
                failed.append((path, reason(exc)))
                continue
            if failed:
                bad, why = failed[0]
                warnings.warn(
                    f"checkpoint {str(bad)!r} cannot be loaded ({why}); resuming from the "
                    f"previous one, {path.name} (step {state['step']}).",
                    RuntimeWarning,
                    stacklevel=2,
                )
            return state
        bad, why = failed[0]
        others = f" (nor can the {len(failed) - 1} older)" if len(failed) > 1 else ""
        raise RunCorruptError(
            f"checkpoint {str(bad)!r} cannot be loaded ({why}){others}; remove the "
            "checkpoints of this tag to start it over, or replace the run (overwrite=True, "
            "--overwrite)."
        )

    # ------------------------------------------------------------------ figures, summary
    def save_figure(self, fig: Any, name: str, *, dpi: int = 110) -> Path:
        """Save a matplotlib figure as ``figures/<name>.png`` and close it."""
        import matplotlib.pyplot as plt

        _check_name(name, "name")
        path = atomic_write(
            real_folder(self.path, "figures") / f"{name}.png",
            lambda p: fig.savefig(p, dpi=dpi, bbox_inches="tight", format="png"),
        )
        plt.close(fig)
        return path

    def figures(self) -> list[Path]:
        """The run's figures: regular files ``figures/*.png`` (a link, FIFO or device placed
        there is not one of them, and is never read)."""
        folder = self.path / "figures"
        if folder.is_symlink() or not folder.is_dir():
            return []
        return sorted(p for p in folder.glob("*.png") if not p.is_symlink() and _is_regular(p))

    def save_summary(self, summary: Mapping[str, Any]) -> Path:
        """Merge ``summary`` into ``summary.json`` (final scalars, claims checked, notes)."""
        current = self.summary
        current.update(summary)
        return write_json(self.path / "summary.json", current)

    @property
    def summary(self) -> dict[str, Any]:
        p = self.path / "summary.json"
        return self._read_object("summary.json") if p.exists() else {}

    def __repr__(self) -> str:
        try:
            state = self.status.get("state", "?")
        except (OSError, RunCorruptError):
            state = "?"
        return f"Run({str(self.path)!r}, state={state!r})"

    def _repr_html_(self, max_metrics: int = 8) -> str:
        """A small HTML card for Jupyter: path, state, experiment, last values of metrics.

        Every value is escaped (``html.escape``); a run that cannot be read shows its
        ``repr`` instead. At most ``max_metrics`` metrics are listed, by name.
        """
        try:
            status, config = self.status, self.config
            last = self.metrics.groupby("name", sort=True)[["step", "value"]].last()
        except (OSError, ValueError, RunCorruptError):
            return f"<pre>{_escape(repr(self))}</pre>"
        state = str(status.get("state", "?"))
        color = {"completed": "#1a7f37", "failed": "#b42318"}.get(state, "#9a6700")
        rows = [
            ("path", str(self.path)),
            ("experiment", config.get("experiment") or "-"),
            ("preset", config.get("preset") or "-"),
            ("seed", status.get("seed")),
        ]
        if status.get("error"):
            rows.append(("error", status["error"]))
        head = "".join(
            f"<tr><th style='text-align:left'>{_escape(k)}</th><td>{_escape(v)}</td></tr>"
            for k, v in rows
        )
        metric_rows = "".join(
            f"<tr><td><code>{_escape(name)}</code></td><td>{int(row.step)}</td>"
            f"<td>{_escape(f'{row.value:.4g}')}</td></tr>"
            for name, row in last.head(max_metrics).iterrows()
        )
        more = len(last) - max_metrics
        more_row = f"<tr><td colspan='3'>... and {more} more</td></tr>" if more > 0 else ""
        metrics_table = (
            "<table><tr><th>metric</th><th>last step</th><th>value</th></tr>"
            f"{metric_rows}{more_row}</table>"
            if len(last)
            else "<p>no metrics recorded</p>"
        )
        return (
            f"<div><b>Run</b> <span style='color:{color}'>{_escape(state)}</span>"
            f"<table>{head}</table>{metrics_table}</div>"
        )


def open_run(path: str | os.PathLike[str]) -> Run:
    """Open an existing run directory for reading.

    Runs written before the format marker existed open as well.

    Raises
    ------
    FileNotFoundError
        If ``path`` is not a run directory.
    ValueError
        If it was written by a newer, unknown format version.
    RunCorruptError
        If its status or config is not a JSON object.
    """
    p = Path(path)
    if not (p / "status.json").is_file() or not (p / "config.json").is_file():
        raise FileNotFoundError(
            f"`path` must be a run directory holding status.json and config.json; got {str(p)!r}."
        )
    if (p / MARKER).is_file():
        read_marker(p)
    run = Run(p)
    _check_version(run)
    return run


def _check_version(run: Run) -> None:
    version = run.status.get("format_version", 0)
    if version != FORMAT_VERSION:
        raise ValueError(
            f"run {str(run.path)!r} has format version {version}; this ncdynamics reads version "
            f"{FORMAT_VERSION}. Re-run the experiment with this version."
        )


def _config_differences(stored: Any, given: Any, *, limit: int = 4) -> str:
    """The keys where two configs differ, with both values: ``"lr (run 0.1, given 0.05)"``."""
    diffs: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                where = f"{path}.{key}" if path else str(key)
                if key not in a:
                    diffs.append(f"{where} (run: absent, given {b[key]!r})")
                elif key not in b:
                    diffs.append(f"{where} (run {a[key]!r}, given: absent)")
                else:
                    walk(a[key], b[key], where)
        elif a != b:
            diffs.append(f"{path or 'config'} (run {a!r}, given {b!r})")

    walk(stored, given, "")
    shown = "; ".join(d if len(d) <= 120 else d[:117] + "..." for d in diffs[:limit])
    more = f"; and {len(diffs) - limit} more" if len(diffs) > limit else ""
    return f"{len(diffs)} key{'s' if len(diffs) != 1 else ''}: {shown}{more}"


def _declared(config: dict[str, Any], recorded: list[str]) -> dict[str, Any]:
    """``config`` without the settings :meth:`Run.record_settings` added (``key`` or
    ``stream/key``), and without a ``streams`` entry that only they made."""
    out = json.loads(json.dumps(config))
    for item in recorded:
        stream, _, key = str(item).rpartition("/")
        if not stream:
            out.pop(key, None)
            continue
        streams = out.get("streams")
        if isinstance(streams, dict) and isinstance(streams.get(stream), dict):
            streams[stream].pop(key, None)
            if not streams[stream]:
                del streams[stream]
            if not streams:
                del out["streams"]
    return out


def _jsonable(obj: Any) -> Any:
    return json.loads(json.dumps(obj, default=_json_default))


def _refuse_foreign(p: Path, why: str) -> None:
    foreign = first_foreign(p)
    if foreign is not None:
        raise RunExistsError(
            f"`out` {str(p)!r} holds {foreign!r}, which the run store did not write; {why}. "
            "Nothing was changed: move it away or choose another directory."
        )


def _not_a_run(p: Path) -> RunExistsError:
    named = first_foreign(p) or sorted(e.name for e in p.iterdir())[0]
    return RunExistsError(
        f"`out` {str(p)!r} exists and is not a run directory (it holds {named!r} and no "
        f"{MARKER} marker); choose an empty directory. Nothing was changed."
    )


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

    The returned run holds the directory's lock (one writer at a time) until
    :meth:`Run.close` or the end of the process.

    Parameters
    ----------
    path : path-like
        Run directory: absent, empty, or a run.
    config : mapping, optional
        Resolved settings, stored as ``config.json``.
    seed : int, optional
        Seed of the run, stored in the status.
    experiment, preset : str, optional
        Names stored beside the config.
    resume : bool, default=False
        Reopen a run with the same config, keeping its records: an unfinished one (state
        ``running`` or ``failed``) is set running again; a completed one is returned as it
        is (state ``completed``: nothing left to run; its leftovers are tidied); one killed
        before it wrote its status starts afresh.
    overwrite : bool, default=False
        Replace the run in ``path``, a completed one included. Only the store's own files
        are removed; a directory holding anything else is refused untouched.

    Raises
    ------
    RunExistsError
        If the directory holds a completed run and neither ``overwrite`` nor ``resume`` is
        set, an unfinished run and neither ``resume`` nor ``overwrite`` is set, or files the
        store did not write (any flag; the message names one).
    RunInUseError
        If another live process holds the run (the message gives its PID).
    ValueError
        If ``resume`` finds another config, or a run of another format version.
    """
    p = Path(path)
    full_config = _jsonable(
        {"experiment": experiment, "preset": preset, "seed": seed, **dict(config or {})}
    )
    kind = classify(p)
    # refusals that must touch nothing come before the lock file is created
    if kind == "foreign":
        raise _not_a_run(p)
    if kind == "run":
        read_marker(p)
    if overwrite and kind in ("run", "legacy"):
        _refuse_foreign(p, "overwrite (--overwrite) removes only a run's own files")
    if kind in ("run", "legacy") and (link := first_link(p)) is not None:
        raise RunExistsError(
            f"`out` {str(p)!r} holds the symbolic link {link!r}; nothing inside a run may be "
            "a link (it would be written through). Nothing was changed: remove it, or "
            "choose another directory."
        )
    if resume and kind == "legacy":
        _refuse_foreign(
            p,
            "a run of an earlier ncdynamics (no format marker) is resumed only "
            "when it holds nothing else",
        )
    p.mkdir(parents=True, exist_ok=True)
    run = Run(p)
    run._lock = acquire(p)
    try:
        _open_locked(run, classify(p), full_config, seed, experiment, preset, resume, overwrite)
    except BaseException:
        run.close()
        raise
    watch(run)
    return run


def _open_locked(
    run: Run,
    kind: Kind,
    full_config: dict[str, Any],
    seed: int | None,
    experiment: str | None,
    preset: str | None,
    resume: bool,
    overwrite: bool,
) -> None:
    """The part of :func:`create` done under the lock (the directory may have changed)."""
    p = run.path
    if kind == "foreign":
        raise _not_a_run(p)
    has_status = (p / "status.json").is_file()
    if kind in ("run", "legacy") and has_status and not overwrite:
        _reopen_locked(run, kind, full_config, resume)
        return
    if kind == "run" and not has_status and not (resume or overwrite):
        raise RunExistsError(
            f"`out` {str(p)!r} holds a run killed before it started (no status.json); "
            "pass resume=True or overwrite=True (ncdyn: --resume or --overwrite) to start it."
        )
    if kind in ("run", "legacy"):
        if overwrite:
            _refuse_foreign(p, "overwrite (--overwrite) removes only a run's own files")
        # marker first, status.json next: a kill during the removal leaves a run that was
        # never started, which --resume or --overwrite starts, never a half-deleted run
        write_json(p / MARKER, {"format": MARKER_FORMAT})
        remove_store_files(p)
    else:
        write_json(p / MARKER, {"format": MARKER_FORMAT})
    write_json(p / "config.json", full_config)
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


def _reopen_locked(run: Run, kind: Kind, full_config: dict[str, Any], resume: bool) -> None:
    """Reopen the run (or legacy run) that ``run.path`` holds, under the lock: refused unless
    ``resume`` and the same config; a completed run only loses its leftovers, an unfinished
    one is marked running again."""
    p = run.path
    state = run.state
    if not resume:
        raise _exists_error(p, state)
    _check_version(run)
    stored = run.config if (p / "config.json").is_file() else None
    if stored is not None:
        stored = _declared(stored, run.status.get("recorded_settings") or [])
    if stored != full_config:
        raise ValueError(
            f"cannot resume {str(p)!r}: its config differs from the one given in "
            f"{_config_differences(stored, full_config)}. Resume with the same "
            "experiment, preset and options, or start it over with overwrite=True "
            "(--overwrite)."
        )
    if kind == "legacy":
        _refuse_foreign(
            p, "a run of an earlier ncdynamics is resumed only when it holds nothing else"
        )
        write_json(p / MARKER, {"format": MARKER_FORMAT})
    if state == "completed":
        remove_leftovers(p)
    else:
        run._set_status(state="running", resumed=_now(), host=socket.gethostname())


def _exists_error(p: Path, state: str) -> RunExistsError:
    """The refusal to reopen the run at ``p`` (in ``state``) without resume or overwrite."""
    if state == "completed":
        missing = " (its report is missing: --resume writes it)"
        hint = "" if (p / "report.html").exists() else missing
        return RunExistsError(
            f"`out` {str(p)!r} already holds a completed run{hint}; choose another "
            "directory, pass resume=True (ncdyn: --resume) to finish it, or "
            "overwrite=True (--overwrite) to replace it."
        )
    return RunExistsError(
        f"`out` {str(p)!r} holds an unfinished run (state {state!r}); "
        "pass resume=True (ncdyn: --resume) to continue it or overwrite=True "
        "(--overwrite) to start over."
    )
