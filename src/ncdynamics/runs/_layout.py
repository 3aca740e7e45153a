"""What a run directory holds, and how the store recognises one.

A run directory carries a format marker, ``.ncdynamics-run``, a JSON object
``{"format": 1}`` written first when the run is created, and its ``config.json``. Runs
written before the marker existed (``status.json`` and ``config.json``, no marker) are
*legacy* runs: they open for reading like any other, and are resumed or overwritten only when
they hold nothing but files of the store's layout (then the marker is added).

The layout is closed: the store knows every name it writes (:func:`scan`). ``overwrite``
deletes exactly those files and nothing else, and refuses a directory holding anything more,
naming one such entry. Symbolic links are never followed and always count as foreign.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, overload

from ._errors import RunExistsError
from ._io import TMP_RE, read_json
from ._lock import LOCK_NAME
from ._outputs import output_command

__all__ = [
    "MARKER",
    "MARKER_FORMAT",
    "Kind",
    "Scan",
    "classify",
    "first_foreign",
    "first_link",
    "real_folder",
    "read_marker",
    "remove_leftovers",
    "remove_store_files",
    "scan",
]

MARKER = ".ncdynamics-run"
MARKER_FORMAT = 1

_NAME = re.compile(r"^[A-Za-z0-9_.\-]+$")
_TOP_FILES = frozenset(
    {
        MARKER,
        LOCK_NAME,
        "config.json",
        "status.json",
        "metrics.parquet",
        "summary.json",
        "report.html",
        "error.txt",
        "table.csv",
        "table.tex",
    }
)
_PART = re.compile(r"^(part-\d+(-[A-Za-z0-9]+)*\.parquet|journal-\d+(-[A-Za-z0-9]+)*\.jsonl)$")
_ARRAY = re.compile(r"^\d+\.npy$")
_CHECKPOINT = re.compile(r"^step-\d+\.pt$")
_FIGURE = re.compile(r"^[A-Za-z0-9_.\-]+\.(png|svg|pdf)$")

Kind = Literal["absent", "empty", "run", "legacy", "foreign"]


@dataclass
class Scan:
    """The entries of a directory, sorted into the store's own and the rest."""

    files: list[Path] = field(default_factory=list)
    folders: list[Path] = field(default_factory=list)  # deepest first
    foreign: list[Path] = field(default_factory=list)


def _is_file(p: Path) -> bool:
    return p.is_file() and not p.is_symlink()


def _is_dir(p: Path) -> bool:
    return p.is_dir() and not p.is_symlink()


def _scan_folder(folder: Path, accept: Callable[[Path], bool], out: Scan) -> None:
    for entry in sorted(folder.iterdir()):
        if _is_file(entry) and (accept(entry) or TMP_RE.match(entry.name)):
            out.files.append(entry)
        else:
            out.foreign.append(entry)


def _scan_tagged(folder: Path, item: re.Pattern[str], out: Scan) -> None:
    """``folder/<name>/<item>``: the arrays and checkpoints folders."""
    for sub in sorted(folder.iterdir()):
        if _is_dir(sub) and _NAME.match(sub.name):
            _scan_folder(sub, lambda p: bool(item.match(p.name)), out)
            out.folders.append(sub)
        elif _is_file(sub) and TMP_RE.match(sub.name):
            out.files.append(sub)
        else:
            out.foreign.append(sub)


def _scan_command_output(folder: Path, out: Scan) -> None:
    """A ``compare``/``forecast`` output inside the run: all of it was written by ncdynamics."""
    for root, dirs, files in os.walk(folder, topdown=False):
        here = Path(root)
        for name in sorted(files):
            entry = here / name
            (out.files if _is_file(entry) else out.foreign).append(entry)
        for name in sorted(dirs):
            entry = here / name
            if entry.is_symlink():
                out.foreign.append(entry)
            else:
                out.folders.append(entry)
    out.folders.append(folder)


def scan(path: Path) -> Scan:
    """Every entry under ``path``: the store's files and folders, and the foreign ones.

    Besides the run's own layout, a subfolder that holds the current-format output of
    ``ncdyn compare`` or ``ncdyn forecast`` (their default ``RUN/compare``,
    ``RUN/forecast-<at>``) counts as the store's: ncdynamics wrote all of it.
    """
    out = Scan()
    for entry in sorted(path.iterdir()):
        name = entry.name
        if _is_file(entry) and (name in _TOP_FILES or TMP_RE.match(name)):
            out.files.append(entry)
        elif _is_dir(entry) and name == "metrics":
            _scan_folder(entry, lambda p: bool(_PART.match(p.name)), out)
            out.folders.append(entry)
        elif _is_dir(entry) and name == "figures":
            _scan_folder(entry, lambda p: bool(_FIGURE.match(p.name)), out)
            out.folders.append(entry)
        elif _is_dir(entry) and name in ("arrays", "checkpoints"):
            _scan_tagged(entry, _ARRAY if name == "arrays" else _CHECKPOINT, out)
            out.folders.append(entry)
        elif _is_dir(entry) and output_command(entry) is not None:
            _scan_command_output(entry, out)
        else:
            out.foreign.append(entry)
    return out


def read_marker(path: Path) -> int:
    """The format version in ``path/.ncdynamics-run``."""
    marker = path / MARKER
    value = read_json(marker)
    fmt = value.get("format") if isinstance(value, dict) else None
    if not isinstance(fmt, int) or isinstance(fmt, bool):
        raise RunExistsError(
            f'{str(marker)!r} must hold {{"format": {MARKER_FORMAT}}}; got {value!r}. '
            "Is this a run directory?"
        )
    if fmt != MARKER_FORMAT:
        raise ValueError(
            f"run {str(path)!r} was written in run-directory format {fmt}; this ncdynamics "
            f"writes format {MARKER_FORMAT}. Use the ncdynamics that wrote it, or another --out."
        )
    return fmt


def classify(path: Path) -> Kind:
    """What ``path`` is, for :func:`ncdynamics.runs.create`.

    ``absent``; ``empty`` (nothing in it but a lock file or temporary files: a run killed
    before it wrote its marker); ``run`` (it has the marker); ``legacy`` (``status.json`` and
    ``config.json`` without a marker); ``foreign`` (anything else).
    """
    if not os.path.lexists(path):
        return "absent"
    if not _is_dir(path):
        raise RunExistsError(f"`out` {str(path)!r} exists and is not a directory.")
    names = {p.name for p in path.iterdir()}
    if MARKER in names and _is_file(path / MARKER):
        return "run"
    if {"status.json", "config.json"} <= names:
        return "legacy"
    if all(n == LOCK_NAME or TMP_RE.match(n) for n in names):
        return "empty"
    return "foreign"


def first_foreign(path: Path) -> str | None:
    """One entry under ``path`` that the store did not write (relative path), or ``None``."""
    found = scan(path).foreign
    return str(found[0].relative_to(path)) if found else None


def first_link(path: Path) -> str | None:
    """One symbolic link anywhere under ``path`` (relative path), or ``None``.

    Links are not followed while looking, so a link to a folder elsewhere is named, not
    entered.
    """
    for root, dirs, files in os.walk(path, followlinks=False):
        for name in sorted(dirs) + sorted(files):
            entry = Path(root) / name
            if entry.is_symlink():
                return str(entry.relative_to(path))
    return None


@overload
def real_folder(run: Path, *names: str, create: Literal[True] = ...) -> Path: ...
@overload
def real_folder(run: Path, *names: str, create: bool) -> Path | None: ...
def real_folder(run: Path, *names: str, create: bool = True) -> Path | None:
    """``run/<names...>``, checked one level at a time to be a real directory (never a
    symbolic link, so nothing is written or deleted outside the run), and created where
    absent when ``create``; ``None`` when absent and not ``create``.

    Raises
    ------
    RunExistsError
        If a level is a symbolic link or not a directory (the message names it).
    """
    folder = run
    for name in names:
        folder = folder / name
        if folder.is_symlink():
            raise RunExistsError(
                f"{str(folder)!r} is a symbolic link; a folder inside a run must be a real "
                "directory (nothing is written through a link). Remove the link, or use "
                "another run directory."
            )
        if not os.path.lexists(folder):
            if not create:
                return None
            try:
                os.mkdir(folder)
            except FileExistsError:  # made meanwhile: checked below
                pass
        if folder.is_symlink() or not folder.is_dir():
            raise RunExistsError(
                f"{str(folder)!r} must be a directory of the run; it is a link or a file. "
                "Remove it, or use another run directory."
            )
    return folder


def remove_store_files(path: Path) -> None:
    """Delete every file and folder of the layout under ``path``, but the marker and the lock.

    ``status.json`` goes first, so that a kill during the removal leaves a run that never
    started rather than a run with part of its records. The caller has checked that nothing
    foreign is there (:func:`first_foreign`); anything that appeared since stays, with the
    folder that holds it.
    """
    found = scan(path)
    keep = {path / MARKER, path / LOCK_NAME}
    for f in sorted(found.files, key=lambda f: f != path / "status.json"):
        if f not in keep:
            f.unlink(missing_ok=True)
    for d in found.folders:
        try:
            d.rmdir()
        except OSError:  # not empty: something foreign arrived meanwhile; keep it
            pass


def remove_leftovers(path: Path) -> None:
    """Delete the temporary files of interrupted writes and a stale ``error.txt``."""
    for f in scan(path).files:
        if TMP_RE.match(f.name) or (f.parent == path and f.name == "error.txt"):
            f.unlink(missing_ok=True)
