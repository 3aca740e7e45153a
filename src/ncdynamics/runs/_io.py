"""Atomic file writes: write to a temporary file in the same directory, then rename.

Temporary files are named ``.<name>.<random>.tmp`` beside their target; a process killed
mid-write leaves one behind, which the store removes when the run completes. They are
created with mode ``0o666`` less the umask, like any file a program opens, so the files of a
run are readable by the group or others exactly when the user's umask says so.
"""

from __future__ import annotations

import json
import os
import re
import secrets
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._errors import RunCorruptError

__all__ = ["TMP_RE", "atomic_write", "read_json", "write_bytes", "write_json", "write_npy"]

TMP_RE = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")
"""Names of the temporary files of :func:`atomic_write` (and of earlier versions)."""


def _open_temporary(path: Path) -> Path:
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"no free temporary name beside {str(path)!r}.")  # pragma: no cover


def atomic_write(path: Path, write: Callable[[Path], object]) -> Path:
    """Call ``write(tmp)`` and rename ``tmp`` onto ``path``; no partial file is ever visible."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = _open_temporary(path)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return path


def write_json(path: Path, obj: Any) -> Path:
    text = json.dumps(obj, indent=2, sort_keys=True, default=_json_default)
    return atomic_write(path, lambda p: p.write_text(text + "\n"))


def read_json(path: Path) -> Any:
    """The JSON value in ``path``; a damaged file is a :class:`RunCorruptError` naming it."""
    try:
        return json.loads(Path(path).read_bytes())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunCorruptError(f"{str(path)!r} is not valid JSON ({exc}).") from None


def write_npy(path: Path, array: NDArray[Any]) -> Path:
    def _w(p: Path) -> None:
        with open(p, "wb") as fh:
            np.save(fh, array, allow_pickle=False)

    return atomic_write(path, _w)


def write_bytes(path: Path, data: bytes) -> Path:
    return atomic_write(path, lambda p: p.write_bytes(data))


def _json_default(obj: Any) -> Any:
    if isinstance(obj, (np.integer,)):
        return int(obj)
    if isinstance(obj, (np.floating,)):
        return float(obj)
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot store {type(obj).__name__} in JSON")
