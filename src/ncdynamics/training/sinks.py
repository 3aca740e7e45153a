"""Extra places for the Recorder's records: TensorBoard, several sinks at once, Lightning.

A *sink* has ``log(step, mapping)``, ``save_array(name, step, array)`` and ``flush()`` (see
:class:`ncdynamics.training.Sink`). To record into a run directory and TensorBoard at once::

    run = ncdynamics.runs.create("runs/mine")
    sink = TeeSink(run, TensorBoardSink("runs/mine/tb"))
    rec = Recorder(sink, x_probe, y_probe)

With PyTorch Lightning, :func:`lightning_callback` drives a Recorder from the trainer's
epoch hooks. Both integrations are optional: TensorBoard needs ``tensorboard`` (``pip
install 'ncdynamics[tensorboard]'``), the callback ``lightning`` or ``pytorch_lightning``.
"""

from __future__ import annotations

import abc
import dataclasses
import os
from collections.abc import Mapping
from types import TracebackType
from typing import Any, Self

import numpy as np
import torch
from numpy.typing import ArrayLike
from torch import nn

from .recorder import Recorder, Sink

__all__ = [
    "TeeSink",
    "TensorBoardSink",
    "finish_sink",
    "flatten_config",
    "lightning_callback",
]


class TeeSink:
    """Forward every record to each of ``sinks`` in turn.

    ``save_array`` returns what the first sink returned (a path for a run).
    """

    def __init__(self, *sinks: Sink) -> None:
        if not sinks:
            raise ValueError("`sinks` must hold at least one sink; got none.")
        for s in sinks:
            for method in ("log", "save_array", "flush"):
                if not callable(getattr(s, method, None)):
                    raise TypeError(
                        f"`sinks` must have log/save_array/flush; got {type(s).__name__} "
                        f"without `{method}`."
                    )
        self.sinks = sinks

    def log(self, step: int, values: Mapping[str, float] | None = None, **kw: float) -> None:
        items = dict(values or {}, **kw)
        for s in self.sinks:
            s.log(step, items)

    def save_array(self, name: str, step: int, array: np.ndarray) -> object:
        results = [s.save_array(name, step, array) for s in self.sinks]
        return results[0]

    def flush(self) -> None:
        for s in self.sinks:
            s.flush()

    def record_settings(self, settings: Mapping[str, Any], *, stream: str | None = None) -> None:
        """Hand the training settings to every sink that stores them."""
        for s in self.sinks:
            record = getattr(s, "record_settings", None)
            if callable(record):
                record(settings, stream=stream)

    def persist(self) -> None:
        """Put the records on disk now in every sink that can (a run's journal)."""
        for s in self.sinks:
            persist = getattr(s, "persist", None)
            if callable(persist):
                persist()

    def close(self) -> None:
        for s in self.sinks:
            close = getattr(s, "close", None)
            if callable(close):
                close()

    def finish(self, error: BaseException | None = None) -> None:
        """Finish every sink: :func:`finish_sink` on each (a run is marked and released)."""
        for s in self.sinks:
            finish_sink(s, error)


class EndsOnce(abc.ABC):
    """Base of a tracker's sink whose run ends once: :meth:`finish` (with the error, if
    any), :meth:`close`, and ``with sink:`` (which finishes with the block's exception).
    Subclasses implement :meth:`_end` and set ``self._finished = False``."""

    _finished: bool = False

    @abc.abstractmethod
    def _end(self, error: BaseException | str | None) -> None:
        """End the tracker's run, once (``error``: what ended training, if anything)."""

    def finish(self, error: BaseException | str | None = None) -> None:
        """End the tracker's run (see :meth:`_end`); later calls do nothing."""
        if self._finished:
            return
        self._finished = True
        self._end(error)

    def close(self) -> None:
        """Same as :meth:`finish` without an error."""
        self.finish()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.finish(exc)


def flatten_config(config: Mapping[str, Any] | Any, name: str = "config") -> dict[str, Any]:
    """A config as one flat mapping: nested mappings (and dataclasses) joined with ``.``.

    A dataclass instance (an experiment's config) is read through ``dataclasses.asdict``;
    the values are kept as they are. ``name`` is the argument named in the error.

    Raises
    ------
    TypeError
        If ``config`` is neither a mapping nor a dataclass instance.
    """
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = dataclasses.asdict(config)
    if not isinstance(config, Mapping):
        raise TypeError(
            f"`{name}` must be a mapping or a dataclass instance; got {type(config).__name__}."
        )
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, Mapping) or (
            dataclasses.is_dataclass(value) and not isinstance(value, type)
        ):
            out.update({f"{key}.{k}": v for k, v in flatten_config(value, name).items()})
        else:
            out[str(key)] = value
    return out


def finish_sink(sink: object, error: BaseException | None = None) -> None:
    """End the records of ``sink``: its ``finish(error)`` if it has one, else ``close()``.

    A :class:`ncdynamics.runs.Run` that this process writes is then marked completed
    (``error`` is ``None``) or failed with the exception's one-line reason, and its lock is
    released; a :class:`TeeSink` finishes each of its sinks.
    """
    finish = getattr(sink, "finish", None)
    if callable(finish):
        finish(error)
        return
    close = getattr(sink, "close", None)
    if callable(close):
        close()


class TensorBoardSink:
    """Write scalars to TensorBoard event files in ``log_dir``.

    Scalars go to ``SummaryWriter.add_scalar(name, value, step)``, so metric names such as
    ``mse/nc/nc1`` appear grouped by their prefix. Arrays are for the run directory:
    :meth:`save_array` writes only the scalar summaries ``<name>/norm`` (Frobenius norm) so
    their evolution can be followed in TensorBoard too.

    Parameters
    ----------
    log_dir : path-like
        Directory of the event files.
    flush_secs : int, default=30
        How often the writer flushes by itself.

    Raises
    ------
    ImportError
        If ``tensorboard`` is not installed.
    """

    def __init__(self, log_dir: str | os.PathLike[str], *, flush_secs: int = 30) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ImportError(
                "TensorBoardSink needs the `tensorboard` package: "
                "pip install 'ncdynamics[tensorboard]'."
            ) from None
        self.log_dir = os.fspath(log_dir)
        self.writer = SummaryWriter(log_dir=self.log_dir, flush_secs=flush_secs)

    def log(self, step: int, values: Mapping[str, float] | None = None, **kw: float) -> None:
        for name, value in dict(values or {}, **kw).items():
            self.writer.add_scalar(str(name), float(value), int(step))

    def save_array(self, name: str, step: int, array: ArrayLike) -> None:
        arr = np.asarray(array.detach().cpu() if isinstance(array, torch.Tensor) else array)
        self.writer.add_scalar(
            f"{name}/norm", float(np.linalg.norm(arr.astype(np.float64))), int(step)
        )

    def flush(self) -> None:
        self.writer.flush()

    def close(self) -> None:
        self.writer.close()


def _lightning_callback_base() -> type:
    try:
        from lightning.pytorch import Callback
    except ImportError:
        try:
            from pytorch_lightning import Callback
        except ImportError:
            raise ImportError(
                "lightning_callback needs PyTorch Lightning: pip install 'ncdynamics[lightning]'."
            ) from None
    return Callback


def lightning_callback(
    recorder: Recorder, *, log_metrics: bool = True, close_run: bool = True
) -> Any:
    """A Lightning ``Callback`` that records with ``recorder`` on the trainer's epochs.

    The Recorder's step is the number of finished epochs: step 0 at the start of training
    (the initialisation), step ``e`` after epoch ``e``, recorded when the Recorder's schedule
    contains it. At the end of training the Recorder is flushed and, with ``close_run``, its
    run is marked completed and released; when ``fit`` raises, Lightning's
    ``on_exception`` hook marks the run failed with the exception's one-line reason (what
    was recorded before stays).

    Parameters
    ----------
    recorder : Recorder
        Probes and sink; the LightningModule is the model it probes (give ``layer=`` to the
        Recorder if the module has no ``features``/``classifier``).
    log_metrics : bool, default=True
        Also store the trainer's scalar ``callback_metrics`` (e.g. what ``self.log`` logged)
        as ``lightning/<name>`` beside the probes' scalars.
    close_run : bool, default=True
        Finish the Recorder's sink when training ends or fails (see :func:`finish_sink`);
        ``False`` leaves the run running, to record more after ``fit``.

    Raises
    ------
    ImportError
        If neither ``lightning`` nor ``pytorch_lightning`` is installed.
    """
    if not isinstance(recorder, Recorder):
        raise TypeError(f"`recorder` must be a Recorder; got {type(recorder).__name__}.")
    base = _lightning_callback_base()

    class RecorderCallback(base):  # type: ignore[misc, valid-type]
        """Drives a :class:`ncdynamics.training.Recorder` from Lightning's epoch hooks."""

        def __init__(self) -> None:
            super().__init__()
            self.recorder = recorder

        def _extra(self, trainer: Any) -> dict[str, float]:
            if not log_metrics:
                return {}
            out = {}
            for k, v in trainer.callback_metrics.items():
                value = v.detach().cpu() if hasattr(v, "detach") else v
                if np.ndim(value) == 0:
                    out[f"lightning/{k}"] = float(value)
            return out

        def on_train_start(self, trainer: Any, pl_module: nn.Module) -> None:
            optimizers = getattr(trainer, "optimizers", None) or []
            if self.recorder.optimizer is None and optimizers:
                self.recorder.use_optimizer(optimizers[0])  # its settings, lr at every record
            self.recorder.step(pl_module, 0)

        def on_train_epoch_end(self, trainer: Any, pl_module: nn.Module) -> None:
            step = trainer.current_epoch + 1
            self.recorder.step(pl_module, step, evaluate=None, **self._extra(trainer))

        def on_train_end(self, trainer: Any, pl_module: nn.Module) -> None:
            self.recorder.close()
            if close_run:
                finish_sink(self.recorder.run)

        def on_exception(
            self, trainer: Any, pl_module: nn.Module, exception: BaseException
        ) -> None:
            if close_run:
                finish_sink(self.recorder.run, exception)
            else:
                self.recorder.close()

    return RecorderCallback()
