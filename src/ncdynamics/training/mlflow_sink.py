"""Record into MLflow: the Recorder's scalars as MLflow metrics, its arrays as artifacts.

::

    with ncdynamics.runs.create("runs/mine", config=cfg) as run:
        sink = TeeSink(run, MLflowSink(experiment="digits", params=cfg))
        rec = Recorder(sink, x_probe, y_probe)
        ...                                   # training, rec.step(model, epoch)
        sink.finish()                         # MLflow run FINISHED, ncdynamics run completed

By default the records go to a local MLflow file store, the directory ``mlruns/`` of the
working directory, which ``mlflow ui --backend-store-uri mlruns`` opens (MLflow 3 keeps the
file store in maintenance mode: the sink sets ``MLFLOW_ALLOW_FILE_STORE=true`` in this
process when it is not set; the same variable must be set for ``mlflow ui``). Any other
tracking URI (``sqlite:///mlflow.db``, ``http://host:5000``) is passed to MLflow as it is.

Needs the ``mlflow-skinny`` (or ``mlflow``) package: ``pip install 'ncdynamics[mlflow]'``.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._reasons import one_line_reason
from .sinks import EndsOnce, flatten_config

__all__ = ["MLflowSink", "flatten_params"]

_METRICS_PER_CALL = 1000  # MLflow's limit for one log_batch
_PARAMS_PER_CALL = 100


def _import_mlflow() -> Any:
    try:
        import mlflow.entities
        import mlflow.tracking
    except ImportError:
        raise ImportError("MLflowSink needs MLflow: pip install 'ncdynamics[mlflow]'.") from None
    return mlflow


def flatten_params(params: Mapping[str, Any] | Any) -> dict[str, str]:
    """A config as MLflow parameters: :func:`~ncdynamics.training.sinks.flatten_config`
    (nested keys joined with ``.``), every value as text (lists as ``[a, b]``)."""

    def text(v: Any) -> str:
        return "[" + ", ".join(str(x) for x in v) + "]" if isinstance(v, (list, tuple)) else str(v)

    return {k: text(v) for k, v in flatten_config(params, "params").items()}


def _resolve_uri(tracking_uri: str | os.PathLike[str] | None) -> tuple[str, bool]:
    """The tracking URI and whether it is a local file store."""
    if tracking_uri is None:
        tracking_uri = os.environ.get("MLFLOW_TRACKING_URI") or "mlruns"
    text = os.fspath(tracking_uri)
    scheme = urlparse(text).scheme
    if len(scheme) <= 1:  # a plain path (or a Windows drive letter): a local file store
        return Path(text).resolve().as_uri(), True
    return text, scheme == "file"


class MLflowSink(EndsOnce):
    """A Recorder sink writing one MLflow run.

    Scalars go to ``log_batch`` as metrics with the record's step (names such as
    ``mse/nc/nc1`` are kept); arrays go to the run's artifacts as
    ``arrays/<name>/<step:09d>.npy``, the layout of an ncdynamics run directory.

    Parameters
    ----------
    tracking_uri : str or path-like, optional
        Where MLflow stores the run: a directory (a local file store) or any MLflow tracking
        URI. Default: ``$MLFLOW_TRACKING_URI`` when set, else ``./mlruns``.
    experiment : str, default="ncdynamics"
        MLflow experiment name (created when missing).
    run_name : str, optional
        Name of the MLflow run (MLflow picks one when not given).
    params : mapping or dataclass, optional
        Parameters of the run, e.g. an ncdynamics run's ``run.config`` or an experiment's
        config dataclass (flattened by :func:`flatten_params`).
    tags : mapping of str to str, optional
        MLflow tags of the run.
    run_id : str, optional
        Log into this existing MLflow run instead of creating one (it is then left open by
        :meth:`finish`).

    Attributes
    ----------
    run_id, experiment_id, tracking_uri : str
    client : mlflow.tracking.MlflowClient

    Raises
    ------
    ImportError
        If MLflow is not installed (the message gives the pip command).
    """

    def __init__(
        self,
        tracking_uri: str | os.PathLike[str] | None = None,
        *,
        experiment: str = "ncdynamics",
        run_name: str | None = None,
        params: Mapping[str, Any] | Any | None = None,
        tags: Mapping[str, str] | None = None,
        run_id: str | None = None,
    ) -> None:
        mlflow = _import_mlflow()
        if not isinstance(experiment, str) or not experiment:
            raise ValueError(f"`experiment` must be a non-empty str; got {experiment!r}.")
        flat = flatten_params(params) if params is not None else {}
        self.tracking_uri, is_file_store = _resolve_uri(tracking_uri)
        if is_file_store:
            os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
        self._entities = mlflow.entities
        self.client = mlflow.tracking.MlflowClient(tracking_uri=self.tracking_uri)
        self._owns_run = run_id is None
        if run_id is None:
            found = self.client.get_experiment_by_name(experiment)
            self.experiment_id = (
                found.experiment_id
                if found is not None
                else self.client.create_experiment(experiment)
            )
            info = self.client.create_run(
                self.experiment_id, run_name=run_name, tags=dict(tags or {})
            ).info
        else:
            info = self.client.get_run(run_id).info
            self.experiment_id = info.experiment_id
            for key, value in (tags or {}).items():
                self.client.set_tag(info.run_id, key, value)
        self.run_id: str = info.run_id
        self._finished = False
        items = [self._entities.Param(k, v) for k, v in flat.items()]
        for i in range(0, len(items), _PARAMS_PER_CALL):
            self.client.log_batch(self.run_id, params=items[i : i + _PARAMS_PER_CALL])

    # ---------------------------------------------------------------- the Sink protocol
    def log(self, step: int, values: Mapping[str, float] | None = None, **kw: float) -> None:
        """Log scalars at ``step`` (one ``log_batch`` per 1000 values)."""
        stamp = int(time.time() * 1000)
        metric = self._entities.Metric
        items = [
            metric(str(k), float(v), stamp, int(step)) for k, v in dict(values or {}, **kw).items()
        ]
        for i in range(0, len(items), _METRICS_PER_CALL):
            self.client.log_batch(self.run_id, metrics=items[i : i + _METRICS_PER_CALL])

    def save_array(self, name: str, step: int, array: ArrayLike | torch.Tensor) -> str:
        """Store ``array`` as the artifact ``arrays/<name>/<step:09d>.npy``; returns its path."""
        arr = np.asarray(array.detach().cpu() if isinstance(array, torch.Tensor) else array)
        folder = f"arrays/{name}"
        file_name = f"{int(step):09d}.npy"
        with tempfile.TemporaryDirectory(prefix="ncdyn-mlflow-") as tmp:
            path = Path(tmp) / file_name
            np.save(path, arr)
            self.client.log_artifact(self.run_id, str(path), artifact_path=folder)
        return f"{folder}/{file_name}"

    def flush(self) -> None:
        """Nothing to do: every call above is written when made."""

    def record_settings(self, settings: Mapping[str, Any], *, stream: str | None = None) -> None:
        """Log the training settings a Recorder found (optimizer, lr, loss, ...) as params
        (``<stream>.<key>`` with a stream); a param the run already has is left as it is."""
        flat = flatten_params({stream: dict(settings)} if stream else dict(settings))
        have = self.client.get_run(self.run_id).data.params
        items = [self._entities.Param(k, v) for k, v in flat.items() if k not in have]
        for i in range(0, len(items), _PARAMS_PER_CALL):
            self.client.log_batch(self.run_id, params=items[i : i + _PARAMS_PER_CALL])

    # ---------------------------------------------------------------- ending the run
    def _end(self, error: BaseException | str | None) -> None:
        """End the MLflow run: ``FINISHED``, or ``FAILED`` with the error's one-line reason
        as the tag ``ncdynamics.error``. Idempotent; a run given by ``run_id`` is left open."""
        if error is not None:
            self.client.set_tag(self.run_id, "ncdynamics.error", one_line_reason(error)[:5000])
        if self._owns_run:
            self.client.set_terminated(self.run_id, "FAILED" if error is not None else "FINISHED")

    def __repr__(self) -> str:
        return f"MLflowSink(run_id={self.run_id!r}, tracking_uri={self.tracking_uri!r})"
