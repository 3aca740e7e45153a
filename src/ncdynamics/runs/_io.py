"""Atomic file writes: write to a temporary file in the same directory, then rename.

Temporary files are named ``.<name>.<random>.tmp`` beside their target; a process killed
mid-write leaves one behind, which the store removes when the run completes. They are
created with mode ``0o666`` less the umask, like any file a program opens, so the files of a
run are readable by the group or others exactly when the user's umask says so. A write never
goes through a link: the temporary file is created afresh (``O_EXCL``) and renamed onto the
target, which replaces a link there instead of following it.

Reading: a run directory may come from someone else, so :func:`open_regular` opens a file of
a run without following a symbolic link and without blocking, and accepts only a regular
file (a FIFO, a device such as ``/dev/zero`` or a socket is refused); :func:`read_bounded`
also refuses a file larger than the caller's bound before reading it. Each refusal is a
:class:`RunCorruptError` naming the file in one line.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._errors import RunCorruptError

__all__ = [
    "JSON_LIMIT",
    "TMP_RE",
    "atomic_write",
    "open_regular",
    "read_bounded",
    "read_json",
    "write_bytes",
    "write_json",
    "write_npy",
]

#: The largest JSON file of a run that is read (status, config, summary, sweep state).
JSON_LIMIT = 64 * 2**20

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


def open_regular(path: Path) -> int:
    """A read-only descriptor on ``path``, which must be a regular file and not a link.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist.
    RunCorruptError
        If it is a symbolic link, or not a regular file (FIFO, device, socket, directory).
    """
    flags = os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise RunCorruptError(
                f"{str(path)!r} is a symbolic link; a run's files are read only when they are "
                "regular files inside it."
            ) from None
        raise RunCorruptError(f"{str(path)!r} cannot be opened ({exc.strerror}).") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise RunCorruptError(
            f"{str(path)!r} is not a regular file (a FIFO, device or socket); a run's files "
            "are read only when they are regular files."
        )
    return fd


def read_bounded(path: Path, limit: int, what: str = "file") -> bytes:
    """The bytes of the regular file ``path`` (:func:`open_regular`), refused with
    :class:`RunCorruptError` when larger than ``limit`` bytes."""
    fd = open_regular(path)
    try:
        size = os.fstat(fd).st_size
        if size > limit:
            raise RunCorruptError(
                f"{what} {str(path)!r} is {size} bytes, more than the {limit} bytes such a file "
                "may have; it was not read."
            )
        chunks, got = [], 0
        while got <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - got))
            if not chunk:
                break
            chunks.append(chunk)
            got += len(chunk)
        if got > limit:  # grew while read
            raise RunCorruptError(
                f"{what} {str(path)!r} is more than the {limit} bytes such a file may have."
            )
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_json(path: Path) -> Any:
    """The JSON value in ``path`` (a regular file of at most :data:`JSON_LIMIT` bytes); a
    damaged, nested too deep, oversized or non-regular file is a :class:`RunCorruptError`
    naming it."""
    data = read_bounded(Path(path), JSON_LIMIT, "JSON file")
    try:
        return json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise RunCorruptError(f"{str(path)!r} is not valid JSON ({exc}).") from None
    except RecursionError:
        raise RunCorruptError(
            f"{str(path)!r} nests its JSON deeper than can be read; it is not a file this "
            "program wrote."
        ) from None


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
