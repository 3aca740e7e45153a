"""The experiment registry and runner: every theory's experiments, by name, with presets."""

from .._spec import PRESETS as PRESETS
from .._spec import ExperimentSpec as ExperimentSpec
from ._registry import config_of as config_of
from ._registry import get as get
from ._registry import list_experiments as list_experiments
from ._registry import run as run

__all__ = ["PRESETS", "ExperimentSpec", "config_of", "get", "list_experiments", "run"]
