"""Atomic file writes: write to a temporary file in the same directory, then rename."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp)`` and rename ``tmp`` onto ``path``; no partial file is ever visible."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
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
    return json.loads(Path(path).read_text())


def write_npy(path: Path, array: np.ndarray) -> Path:
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
