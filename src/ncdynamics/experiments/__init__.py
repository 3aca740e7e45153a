"""The experiment registry and runner: every theory's experiments, by name, with presets;
theory against run (:func:`compare`, :func:`forecast`, :func:`compare_runs`)."""

from ..theories.experiment import PRESETS as PRESETS
from ..theories.experiment import ExperimentSpec as ExperimentSpec
from ._registry import config_of as config_of
from ._registry import get as get
from ._registry import list_experiments as list_experiments
from ._registry import run as run
from .atlas import atlas as atlas
from .compare import CompareEntry as CompareEntry
from .compare import compare as compare
from .compare_many import RunResult as RunResult
from .compare_many import compare_runs as compare_runs
from .dependence import fit_dependence as fit_dependence
from .executors import Executor as Executor
from .executors import LocalExecutor as LocalExecutor
from .executors import Outcome as Outcome
from .executors import RayExecutor as RayExecutor
from .executors import Task as Task
from .executors import make_executor as make_executor
from .forecast import ForecastEntry as ForecastEntry
from .forecast import forecast as forecast
from .streams import read_run as read_run
from .sweep import SweepPoint as SweepPoint
from .sweep import SweepResult as SweepResult
from .sweep import expand_grid as expand_grid
from .sweep import is_sweep as is_sweep
from .sweep import read_sweep_table as read_sweep_table
from .sweep import sweep as sweep
from .sweep import write_sweep_table as write_sweep_table

__all__ = [
    "CompareEntry",
    "ForecastEntry",
    "RunResult",
    "atlas",
    "compare",
    "compare_runs",
    "fit_dependence",
    "forecast",
    "read_run",
    "PRESETS",
    "Executor",
    "ExperimentSpec",
    "LocalExecutor",
    "Outcome",
    "RayExecutor",
    "SweepPoint",
    "SweepResult",
    "Task",
    "config_of",
    "expand_grid",
    "get",
    "is_sweep",
    "list_experiments",
    "make_executor",
    "read_sweep_table",
    "run",
    "sweep",
    "write_sweep_table",
]
