"""The run store: create, resume and read run directories (see ``docs/runs.md``)."""

from ._store import FORMAT_VERSION as FORMAT_VERSION
from ._store import Run as Run
from ._store import RunExistsError as RunExistsError
from ._store import create as create
from ._store import open_run as open_run

open = open_run  # noqa: A001  (the public name of DESIGN.md: ncdynamics.runs.open)

__all__ = ["FORMAT_VERSION", "Run", "RunExistsError", "create", "open", "open_run"]
