"""ncdynamics: measure, simulate and confront the training dynamics of neural collapse.

Subpackages: ``data``, ``models``, ``probes``, ``training``, ``runs``, ``theories``,
``experiments``, ``report``. Each is imported on first use, so ``import ncdynamics`` stays
fast (it imports neither torch nor any subpackage) while ``ncdynamics.runs.create(...)``
works after it. The command-line entry point is ``ncdyn``.
"""

from __future__ import annotations

import importlib
from importlib.metadata import PackageNotFoundError, version
from types import ModuleType
from typing import TYPE_CHECKING

try:
    __version__ = version("ncdynamics")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

if TYPE_CHECKING:  # static checkers see the subpackages as attributes
    from . import data as data
    from . import experiments as experiments
    from . import models as models
    from . import probes as probes
    from . import report as report
    from . import runs as runs
    from . import theories as theories
    from . import training as training

_SUBPACKAGES = (
    "data",
    "models",
    "probes",
    "runs",
    "training",
    "theories",
    "experiments",
    "report",
)

__all__ = ["__version__"]


def __getattr__(name: str) -> ModuleType:
    """Import the subpackage ``name`` on first access (PEP 562)."""
    if name in _SUBPACKAGES:
        module = importlib.import_module(f"{__name__}.{name}")
        globals()[name] = module  # later lookups skip this function
        return module
    raise AttributeError(
        f"module {__name__!r} has no attribute {name!r}; its subpackages are "
        f"{', '.join(_SUBPACKAGES)}."
    )


def __dir__() -> list[str]:
    return sorted({*globals(), *_SUBPACKAGES})
