"""Training loops, the Recorder, checkpoints, the trial pool, and the sinks and callbacks
that connect the Recorder to other trackers (TensorBoard, MLflow, Weights & Biases) and
trainers (PyTorch Lightning, Hugging Face transformers)."""

from .devices import current_device as current_device
from .devices import device_for as device_for
from .devices import resolve_device as resolve_device
from .devices import use_device as use_device
from .hf_callback import transformers_callback as transformers_callback
from .loop import CheckpointStore as CheckpointStore
from .loop import TrainConfig as TrainConfig
from .loop import TrainResult as TrainResult
from .loop import param_groups as param_groups
from .loop import train as train
from .mlflow_sink import MLflowSink as MLflowSink
from .recorder import Recorder as Recorder
from .recorder import Schedule as Schedule
from .recorder import Sink as Sink
from .sinks import TeeSink as TeeSink
from .sinks import TensorBoardSink as TensorBoardSink
from .sinks import lightning_callback as lightning_callback
from .trials import TrialError as TrialError
from .trials import default_workers as default_workers
from .trials import run_trials as run_trials
from .wandb_sink import WandbSink as WandbSink

__all__ = [
    "CheckpointStore",
    "MLflowSink",
    "Recorder",
    "Schedule",
    "Sink",
    "TeeSink",
    "TensorBoardSink",
    "TrainConfig",
    "TrainResult",
    "TrialError",
    "current_device",
    "WandbSink",
    "default_workers",
    "lightning_callback",
    "param_groups",
    "device_for",
    "resolve_device",
    "run_trials",
    "train",
    "use_device",
    "transformers_callback",
]
