"""Directories that an ``ncdyn`` command owns: the output of ``compare`` and ``forecast``.

A command marks its output directory with ``.ncdynamics-<command>`` (JSON
``{"format": OUTPUT_FORMAT, "command": command}``) and later replaces that directory only if
it finds its own marker there. The run store uses the same marker to recognise such an
output inside a run directory (``RUN/compare``, ``RUN/forecast-0.5``) as written by
ncdynamics, so that ``--overwrite`` removes it with the run.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = [
    "OUTPUT_COMMANDS",
    "OUTPUT_FORMAT",
    "check_output_dir",
    "output_command",
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
