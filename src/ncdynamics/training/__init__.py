"""Training loops, the Recorder, checkpoints and the trial pool."""

from .trials import TrialError as TrialError
from .trials import default_workers as default_workers
from .trials import run_trials as run_trials

__all__ = ["TrialError", "default_workers", "run_trials"]
