"""One writer per directory: an exclusive OS lock on a file inside it.

:func:`acquire` takes ``fcntl.flock(LOCK_EX | LOCK_NB)`` on ``<dir>/.lock`` and writes the
holder's PID and host into that file. The kernel drops the lock when the process ends, however
it ends (SIGKILL and power loss included), so a lock never outlives its holder and there is no
stale lock to clean up. A second process gets :class:`RunInUseError` naming the holder's PID.

Within one process the lock is re-entrant: every :func:`acquire` of the same directory shares
one open file and the lock is released when the last handle is released (or when the process
ends). Locks are advisory: they stop other ncdynamics writers, not other programs. On systems
without ``fcntl`` (Windows) no lock is taken.

A run directory may come from someone else, so the lock file is opened without following a
symbolic link (``O_NOFOLLOW``) and without blocking, and it is used only when it is a regular
file with one link that is empty or holds the ``{"pid", "host"}`` record this module writes;
anything else (a link to a file elsewhere, a hard link, a FIFO, a user's file named
``.lock``) is refused with :class:`RunExistsError` before a byte is written.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from ._errors import RunExistsError, RunInUseError

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
    fd = _open_lock_file(key[1] / LOCK_NAME, what)
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


#: A lock record is a short JSON object; a longer ``.lock`` is not one this module wrote.
_RECORD_MAX = 4096


def _open_lock_file(path: Path, what: str) -> int:
    """An open descriptor on the lock file ``path`` (created if absent), or
    :class:`RunExistsError` when ``path`` is anything but a lock file this module wrote."""
    flags = os.O_RDWR | os.O_CLOEXEC | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags | os.O_CREAT | os.O_EXCL, 0o666)
    except FileExistsError:
        pass
    try:
        fd = os.open(path, flags)
    except OSError as exc:  # ELOOP: a symbolic link; ENXIO and the like: not a file
        raise _not_a_lock(path, what, f"it cannot be opened as a file: {exc.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_a_lock(path, what, "it is not a regular file")
        if info.st_nlink != 1:
            raise _not_a_lock(path, what, f"it has {info.st_nlink} hard links")
        if info.st_size and not _is_record(os.pread(fd, _RECORD_MAX + 1, 0)):
            raise _not_a_lock(path, what, "it does not hold a lock record")
    except BaseException:
        os.close(fd)
        raise
    return fd


def _is_record(data: bytes) -> bool:
    if len(data) > _RECORD_MAX:
        return False
    try:
        value = json.loads(data)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) <= {"pid", "host"}


def _not_a_lock(path: Path, what: str, why: str) -> RunExistsError:
    return RunExistsError(
        f"{what} {str(path.parent)!r} holds {LOCK_NAME!r} that ncdynamics did not write "
        f"({why}); nothing was written to it: remove it if the directory is yours, or "
        "choose another directory."
    )
