"""Errors of the run store; each message is one line that names the directory or file."""

from __future__ import annotations

__all__ = ["RunCorruptError", "RunExistsError", "RunInUseError"]


class RunExistsError(FileExistsError):
    """The directory holds something that this call may not replace.

    A completed run (without ``overwrite``), an unfinished run (without ``resume`` or
    ``overwrite``), or files the run store did not write.
    """


class RunInUseError(RunExistsError):
    """Another live process holds the run directory's lock (its PID is in the message)."""


class RunCorruptError(ValueError):
    """A file of a run cannot be read back as written (damaged, truncated or unsafe)."""
