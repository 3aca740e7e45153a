"""ncdynamics: measure, simulate and confront the training dynamics of neural collapse.

Subpackages: ``data``, ``models``, ``probes``, ``training``, ``runs``, ``theories``,
``experiments``, ``report``. The command-line entry point is ``ncdyn``.
"""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("ncdynamics")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = ["__version__"]
