"""How the reports open a run: its JSON files checked by the run store's safe reader first.

:func:`ncdynamics.experiments.streams.read_run` checks that the JSON files hold objects;
before it, :func:`read_run` here reads each of ``status.json``, ``config.json`` and
``summary.json`` that exists with :func:`ncdynamics.runs._io.read_json`, which refuses a
symbolic link, a FIFO or device, a file over the size bound and JSON nested too deep, each
as a one-line :class:`~ncdynamics.runs.RunCorruptError` naming the file (a ``ValueError``,
so one such run is one "unreadable" row of ``report --index``, not the end of it).
"""

from __future__ import annotations

import os
from pathlib import Path

from ..experiments.streams import read_run as _read_run
from ..runs import Run
from ..runs._io import read_json

__all__ = ["read_run"]


def read_run(path: str | os.PathLike[str]) -> Run:
    """The run at ``path``, opened for reading once its JSON files are known to be safe."""
    p = Path(path)
    for name in ("status.json", "config.json", "summary.json"):
        if os.path.lexists(p / name):
            read_json(p / name)
    return _read_run(p)
