"""A Hugging Face ``transformers`` ``Trainer`` callback that drives a Recorder.

::

    with ncdynamics.runs.create("runs/hf") as run:
        rec = Recorder(run, x_probe, y_probe, layer="classifier")
        trainer = Trainer(model=model, args=args, train_dataset=train,
                          callbacks=[transformers_callback(rec)])
        trainer.train()

The Trainer's model is what the Recorder probes: the probe inputs go in as the first
positional argument (``model(x)``; ``input_ids`` for a text model) and the logits are read
from the output (a tensor, or the ``logits`` of a ``ModelOutput`` or of a dict). The Trainer
has no hook for a failed ``train()``: create the run with ``with runs.create(...)`` as above,
and a crash marks it failed.

Needs ``transformers`` (and ``accelerate``, which its Trainer needs):
``pip install 'ncdynamics[transformers]'``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from .._validation import check_option
from .recorder import Recorder
from .sinks import finish_sink

__all__ = ["logits_of", "transformers_callback"]

Unit = Literal["epoch", "step"]
_UNITS: tuple[Unit, ...] = ("epoch", "step")


def _transformers_callback_base() -> type:
    try:
        from transformers import TrainerCallback
    except ImportError:
        raise ImportError(
            "transformers_callback needs Hugging Face transformers: "
            "pip install 'ncdynamics[transformers]'."
        ) from None
    return TrainerCallback


def logits_of(output: Any) -> torch.Tensor:
    """The logits in a model's output: the tensor itself, ``output.logits`` (a
    ``ModelOutput``) or ``output["logits"]`` (a dict).

    Raises
    ------
    TypeError
        If the output is none of these.
    """
    if isinstance(output, torch.Tensor):
        return output
    logits = getattr(output, "logits", None)
    if logits is None and isinstance(output, Mapping):
        logits = output.get("logits")
    if not isinstance(logits, torch.Tensor):
        raise TypeError(
            "the model's output must be the logits, or hold them as `.logits` or "
            f"['logits']; got {type(output).__name__}."
        )
    return logits


def transformers_callback(
    recorder: Recorder,
    *,
    unit: Unit = "epoch",
    log_metrics: bool = True,
    close_run: bool = True,
) -> Any:
    """A ``transformers.TrainerCallback`` that records with ``recorder`` during ``train()``.

    With ``unit="epoch"`` the Recorder's step counts finished epochs: step 0 when training
    begins (the initialisation), step ``e`` after epoch ``e``; with ``unit="step"`` it is
    the Trainer's ``global_step`` (optimiser steps). A step is recorded when the Recorder's
    schedule contains it. At the end of training the Recorder is flushed and, with
    ``close_run``, its run is marked completed and released.

    Parameters
    ----------
    recorder : Recorder
        Probes and sink. The callback reads the logits of outputs that are dicts or
        ``ModelOutput`` objects (see :func:`logits_of`) unless the Recorder was given its
        own output reader. Name the classifier with the Recorder's ``layer=`` when the model
        has no ``classifier`` attribute.
    unit : {"epoch", "step"}, default="epoch"
    log_metrics : bool, default=True
        Also store what the Trainer logs (``loss``, ``learning_rate``, ``grad_norm``,
        ``eval_*``) as ``hf/<name>``, at the step of the unit in which it was logged (for
        ``"epoch"``, the epoch in progress: its last value).
    close_run : bool, default=True
        Finish the Recorder's sink when training ends (see
        :func:`~ncdynamics.training.sinks.finish_sink`); ``False`` leaves it open.

    Returns
    -------
    transformers.TrainerCallback

    Raises
    ------
    ImportError
        If ``transformers`` is not installed (the message gives the pip command).
    TypeError
        If ``recorder`` is not a Recorder.
    """
    if not isinstance(recorder, Recorder):
        raise TypeError(f"`recorder` must be a Recorder; got {type(recorder).__name__}.")
    check_option(unit, "unit", _UNITS)
    base = _transformers_callback_base()
    if recorder.extract.output is None:
        recorder.extract.output = logits_of

    class RecorderCallback(base):  # type: ignore[misc, valid-type]
        """Drives a :class:`ncdynamics.training.Recorder` from the Trainer's events."""

        def __init__(self) -> None:
            super().__init__()
            self.recorder = recorder
            self._pending: dict[int, dict[str, float]] = {}

        def _position(self, state: Any) -> int:
            if unit == "step":
                return int(state.global_step)
            # the epoch in progress: 0.3 -> 1; a finished epoch e is exactly e
            return int(math.ceil(float(state.epoch or 0.0) - 1e-9))

        def _write_pending(self, before: int | None = None) -> None:
            for pos in sorted(self._pending):
                if before is None or pos < before:
                    self.recorder.log(pos, **self._pending.pop(pos))

        def on_train_begin(
            self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw: Any
        ) -> None:
            optimizer = kw.get("optimizer")
            if self.recorder.optimizer is None and optimizer is not None:
                self.recorder.use_optimizer(optimizer)  # its settings, lr at every record
            if model is not None:
                self.recorder.step(model, self._position(state))

        def on_epoch_end(
            self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw: Any
        ) -> None:
            if unit == "epoch" and model is not None:
                self.recorder.step(model, self._position(state))

        def on_step_end(
            self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw: Any
        ) -> None:
            if unit == "step" and model is not None:
                self.recorder.step(model, self._position(state))

        def on_log(
            self,
            args: Any,
            state: Any,
            control: Any,
            logs: Mapping[str, Any] | None = None,
            **kw: Any,
        ) -> None:
            if not log_metrics or not logs:
                return
            pos = self._position(state)
            self._write_pending(before=pos)
            scalars = {
                f"hf/{k}": float(v)
                for k, v in logs.items()
                if isinstance(v, (int, float, np.number)) and not isinstance(v, bool)
            }
            self._pending.setdefault(pos, {}).update(scalars)

        def on_train_end(
            self, args: Any, state: Any, control: Any, model: nn.Module | None = None, **kw: Any
        ) -> None:
            self._write_pending()
            self.recorder.close()
            if close_run:
                finish_sink(self.recorder.run)

    return RecorderCallback()
