"""Directories that an ``ncdyn`` command owns: the output of ``compare`` and ``forecast``.

The one home of the rule. A command marks its output directory with ``.ncdynamics-<command>``
(JSON ``{"format": OUTPUT_FORMAT, "command": command}``) and later replaces that directory
only if it finds its own marker there (:func:`check_output_dir`). :func:`write_output_dir`
builds the new directory in a temporary sibling and swaps it in whole, checking the rule
before any work and again just before the swap. The run store uses the same marker to
recognise such an output inside a run directory (``RUN/compare``, ``RUN/forecast-0.5``) as
written by ncdynamics, so that ``--overwrite`` removes it with the run.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "OUTPUT_COMMANDS",
    "OUTPUT_FORMAT",
    "check_output_dir",
    "default_out",
    "output_command",
    "write_output_dir",
    "write_output_marker",
]

OUTPUT_COMMANDS = ("compare", "forecast")

OUTPUT_FORMAT = 1
"""Format version of the marker file that ``compare`` and ``forecast`` write into their output."""


def _marker_name(command: str) -> str:
    return f".ncdynamics-{command}"


def write_output_marker(directory: str | os.PathLike[str], command: str) -> Path:
    """Mark ``directory`` as the output of ``command`` (``.ncdynamics-<command>``, JSON
    ``{"format": OUTPUT_FORMAT, "command": command}``), so that the command may replace it
    later (:func:`check_output_dir`)."""
    path = Path(directory) / _marker_name(command)
    path.write_text(json.dumps({"format": OUTPUT_FORMAT, "command": command}) + "\n")
    return path


def check_output_dir(out: str | os.PathLike[str], command: str) -> Path:
    """Check that ``command`` may write its output directory ``out``, replacing it as a whole.

    The one rule of what ``compare`` and ``forecast`` may replace: a path that does not
    exist, an empty directory, or a directory holding the marker that ``command`` itself
    wrote (:func:`write_output_marker`) with a format version this version knows. Anything
    else (a run, a folder of runs, a user's files, a regular file, a symbolic link, another
    command's output) is refused and left untouched.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    FileExistsError
        If ``out`` exists and is not ``command``'s own output; the message says why.
    """
    out = Path(out)
    if out.is_symlink():
        raise FileExistsError(
            f"`out` {str(out)!r} is a symbolic link; `{command}` writes only into a real "
            "directory of its own. Choose another directory."
        )
    if not out.exists():
        return out
    if not out.is_dir():
        raise FileExistsError(
            f"`out` {str(out)!r} exists and is not a directory; choose another path for "
            f"the output of `{command}`."
        )
    marker = out / _marker_name(command)
    if not marker.is_file():
        if not any(out.iterdir()):
            return out
        raise FileExistsError(
            f"`out` {str(out)!r} is not an output of `{command}` (no {marker.name} marker) "
            "and is not empty; choose another directory (nothing was changed)."
        )
    try:
        meta = json.loads(marker.read_text())
    except (OSError, ValueError) as exc:
        raise FileExistsError(
            f"`out` {str(out)!r}: its marker {marker.name} cannot be read ({exc}); "
            "choose another directory (nothing was changed)."
        ) from exc
    fmt = meta.get("format") if isinstance(meta, dict) else None
    if not isinstance(meta, dict) or meta.get("command") != command:
        raise FileExistsError(
            f"`out` {str(out)!r} is not an output of `{command}` (its marker {marker.name} "
            "names another command); choose another directory (nothing was changed)."
        )
    if fmt != OUTPUT_FORMAT:
        raise FileExistsError(
            f"`out` {str(out)!r} holds output of `{command}` in format {fmt!r}; this "
            f"version writes format {OUTPUT_FORMAT} and replaces only that. Choose another "
            "directory (nothing was changed)."
        )
    return out


def output_command(directory: Path) -> str | None:
    """The command whose current-format output ``directory`` is, or ``None``."""
    if directory.is_symlink() or not directory.is_dir():
        return None
    for command in OUTPUT_COMMANDS:
        try:
            check_output_dir(directory, command)
        except FileExistsError:
            continue
        if (directory / _marker_name(command)).is_file():
            return command
    return None


def default_out(run_dir: str | os.PathLike[str], kind: str, at: float | None = None) -> Path:
    """``RUN_DIR/compare``, ``RUN_DIR/forecast`` or ``RUN_DIR/forecast-<at>``.

    Whatever the directory, it is replaced only when it holds this command's own output
    (:func:`check_output_dir`).
    """
    name = kind if at is None else f"{kind}-{at:g}"
    return Path(run_dir) / name


#: Inside a directory being built: a lock file held (``flock``) by the building process.
_BUILDING = ".ncdynamics-building"


def _hold_building_mark(tmp: Path) -> int:
    """Mark ``tmp`` as ours and being built: ``tmp/.ncdynamics-building``, locked through
    the returned descriptor until it is closed (a killed process drops the lock)."""
    fd = os.open(tmp / _BUILDING, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
    if sys.platform != "win32":
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    return fd


def _remove_abandoned(out: Path) -> None:
    """Remove the temporary siblings ``.<out>-<random>`` that a killed ``compare`` or
    ``forecast`` left: real directories holding our building mark whose lock no live
    process holds. Anything else of that look (a user's folder) is left alone."""
    if sys.platform == "win32":  # pragma: no cover - no flock: nothing is removed
        return
    import fcntl

    for entry in out.parent.glob(f".{glob.escape(out.name)}-*"):
        mark = entry / _BUILDING
        if entry.is_symlink() or not entry.is_dir() or mark.is_symlink() or not mark.is_file():
            continue
        try:
            fd = os.open(mark, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # its builder is alive
        else:
            shutil.rmtree(entry, ignore_errors=True)
        finally:
            os.close(fd)


def write_output_dir(
    out: str | os.PathLike[str], command: str, fill: Callable[[Path], None]
) -> Path:
    """Write ``command``'s output directory ``out`` as a whole: marker, check and swap.

    ``out`` is checked (:func:`check_output_dir`) before anything is written; ``fill(tmp)``
    then writes the files into a fresh temporary sibling ``.<out>-<random>``, which gets the
    marker (:func:`write_output_marker`) and, after a second check, replaces ``out`` in one
    rename. An interrupted write never leaves a mix of old and new files; a sibling left by
    a killed writer is removed by the next write of the same ``out``.

    Returns
    -------
    Path
        ``out``.

    Raises
    ------
    FileExistsError
        If ``out`` is not ``command``'s own output (nothing is written).
    """
    out = check_output_dir(out, command)
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(out)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}-", dir=out.parent))
    mark = -1
    try:
        mark = _hold_building_mark(tmp)
        fill(tmp)
        write_output_marker(tmp, command)
        os.unlink(tmp / _BUILDING)  # complete: no longer a directory being built
        check_output_dir(out, command)
        if out.exists():
            # the old output moves into a fresh directory of our own, so no other path (a
            # user's file with a guessable name) can be in the way or removed with it
            trash = Path(tempfile.mkdtemp(prefix=f".{out.name}-old-", dir=out.parent))
            os.replace(out, trash / out.name)
            os.replace(tmp, out)
            shutil.rmtree(trash, ignore_errors=True)
        else:
            os.replace(tmp, out)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    finally:
        if mark >= 0:
            os.close(mark)
    return out
