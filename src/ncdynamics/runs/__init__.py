"""The run store: create, resume and read run directories (see ``docs/runs.md``)."""

from ._errors import RunCorruptError as RunCorruptError
from ._errors import RunExistsError as RunExistsError
from ._errors import RunInUseError as RunInUseError
from ._kernels import log_kernel as log_kernel
from ._store import FORMAT_VERSION as FORMAT_VERSION
from ._store import Run as Run
from ._store import create as create
from ._store import open_run as open_run

open = open_run  # noqa: A001  (the public name, docs/runs.md: ncdynamics.runs.open)

__all__ = [
    "FORMAT_VERSION",
    "Run",
    "RunCorruptError",
    "RunExistsError",
    "RunInUseError",
    "create",
    "log_kernel",
    "open",
    "open_run",
]
