"""One writer per directory: an exclusive OS lock on a file inside it.

:func:`acquire` takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<dir>/.lock`` and writes the
holder's PID and host into that file. The kernel drops the lock when the process ends, however
it ends (SIGKILL and power loss included), so a lock never outlives its holder and there is no
stale lock to clean up. A second process gets :class:`RunInUseError` naming the holder's PID.

Within one process the lock is re-entrant: every :func:`acquire` of the same directory shares
one open file and the lock is released when the last handle is released (or when the process
ends). Locks are advisory: they stop other ncdynamics writers, not other programs. On systems
without ``fcntl`` (Windows) no lock is taken.
"""

from __future__ import annotations

import json
import os
import socket
import sys
from dataclasses import dataclass
from pathlib import Path

from ._errors import RunInUseError

if sys.platform == "win32":  # pragma: no cover - no flock; documented in docs/runs.md

    def _try_lock(fd: int) -> bool:
        return True

    def _unlock(fd: int) -> None:
        pass

else:
    import fcntl

    def _try_lock(fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def _unlock(fd: int) -> None:
        fcntl.flock(fd, fcntl.LOCK_UN)


__all__ = ["LOCK_NAME", "DirLock", "acquire"]

LOCK_NAME = ".lock"


@dataclass
class _Held:
    fd: int
    count: int


_HELD: dict[tuple[int, Path], _Held] = {}  # (pid, directory): a forked child holds nothing


class DirLock:
    """A held lock on a directory; :meth:`release` it (idempotent), or let the process end."""

    def __init__(self, key: tuple[int, Path]) -> None:
        self._key: tuple[int, Path] | None = key

    @property
    def held(self) -> bool:
        return self._key is not None

    def release(self) -> None:
        key, self._key = self._key, None
        if key is None or key not in _HELD:
            return
        held = _HELD[key]
        held.count -= 1
        if held.count == 0:
            del _HELD[key]
            _unlock(held.fd)
            os.close(held.fd)


def _holder(fd: int) -> str:
    try:
        info = json.loads(os.pread(fd, 4096, 0) or b"{}")
        return f"process {int(info['pid'])} on {info.get('host', '?')}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another process (its PID is not recorded yet)"


def acquire(directory: Path, *, what: str = "run directory") -> DirLock:
    """Lock ``directory`` (which must exist) for this process, or raise :class:`RunInUseError`."""
    key = (os.getpid(), Path(os.path.abspath(directory)))
    if key in _HELD:
        _HELD[key].count += 1
        return DirLock(key)
    fd = os.open(key[1] / LOCK_NAME, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o666)
    if not _try_lock(fd):
        holder = _holder(fd)
        os.close(fd)
        raise RunInUseError(
            f"{what} {str(directory)!r} is in use by {holder}; wait for it to finish, "
            "or stop that process and run again."
        )
    record = json.dumps({"pid": os.getpid(), "host": socket.gethostname()}).encode()
    os.ftruncate(fd, 0)
    os.write(fd, record)
    _HELD[key] = _Held(fd, 1)
    return DirLock(key)
