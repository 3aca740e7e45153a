"""Record into Weights & Biases: the Recorder's scalars as a W&B run's history, its arrays
as run files.

::

    with ncdynamics.runs.create("runs/mine", config=cfg) as run:
        sink = TeeSink(run, WandbSink(project="digits", config=cfg))
        rec = Recorder(sink, x_probe, y_probe)
        ...                                   # training, rec.step(model, epoch)
        sink.finish()

``mode="offline"`` writes the W&B run under ``<dir>/wandb/offline-run-*/`` without an
account or a network, for ``wandb sync`` later; ``mode="disabled"`` turns W&B off.

Needs the ``wandb`` package: ``pip install 'ncdynamics[wandb]'``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._reasons import one_line_reason
from .._validation import check_option
from .sinks import EndsOnce, flatten_config

__all__ = ["WandbSink"]

WandbMode = Literal["online", "offline", "disabled"]
_MODES: tuple[WandbMode, ...] = ("online", "offline", "disabled")


def _import_wandb() -> Any:
    try:
        import wandb
    except ImportError:
        raise ImportError(
            "WandbSink needs Weights & Biases: pip install 'ncdynamics[wandb]'."
        ) from None
    return wandb


class WandbSink(EndsOnce):
    """A Recorder sink writing one Weights & Biases run.

    Scalars go to ``run.log(values, step=step)`` (the Recorder's step is W&B's step, so
    records must come in increasing step order, as a Recorder writes them; W&B drops a
    record of an earlier step with a warning). Arrays are saved as ``.npy`` files
    ``arrays/<name>/<step:09d>.npy`` in the run's files (``run.save``), the layout of an
    ncdynamics run directory.

    Parameters
    ----------
    project : str, default="ncdynamics"
        W&B project.
    name : str, optional
        Display name of the run.
    config : mapping or dataclass, optional
        The run's config, e.g. an ncdynamics run's ``run.config`` (nested keys joined with
        ``.`` by :func:`~ncdynamics.training.sinks.flatten_config`).
    dir : path-like, optional
        Where W&B writes its local files (``<dir>/wandb/``); W&B's default otherwise.
    mode : {"online", "offline", "disabled"}, optional
        W&B's mode; by default W&B decides (``$WANDB_MODE``, else online).
    run : wandb Run, optional
        Log into this run (from ``wandb.init``) instead of starting one; it is then left
        open by :meth:`finish`.
    tags : sequence of str, optional

    Raises
    ------
    ImportError
        If ``wandb`` is not installed (the message gives the pip command).
    """

    def __init__(
        self,
        project: str = "ncdynamics",
        *,
        name: str | None = None,
        config: Mapping[str, Any] | Any | None = None,
        dir: str | os.PathLike[str] | None = None,
        mode: WandbMode | None = None,
        run: Any = None,
        tags: list[str] | tuple[str, ...] | None = None,
    ) -> None:
        if mode is not None:
            check_option(mode, "mode", _MODES)
        wandb = _import_wandb()
        self._owns_run = run is None
        if run is None:
            options: dict[str, Any] = {"project": project, "reinit": "create_new"}
            if name is not None:
                options["name"] = name
            if config is not None:
                options["config"] = flatten_config(config, "config")
            if dir is not None:
                Path(dir).mkdir(parents=True, exist_ok=True)
                options["dir"] = os.fspath(dir)
            if mode is not None:
                options["mode"] = mode
            if tags is not None:
                options["tags"] = list(tags)
            run = wandb.init(**options)
        elif config is not None:
            run.config.update(flatten_config(config, "config"), allow_val_change=True)
        self.run = run
        self._finished = False

    # ---------------------------------------------------------------- the Sink protocol
    def log(self, step: int, values: Mapping[str, float] | None = None, **kw: float) -> None:
        """Log scalars at ``step``."""
        items = {str(k): float(v) for k, v in dict(values or {}, **kw).items()}
        if items:
            self.run.log(items, step=int(step))

    def save_array(self, name: str, step: int, array: ArrayLike | torch.Tensor) -> Path:
        """Save ``array`` as the run file ``arrays/<name>/<step:09d>.npy``; returns its path."""
        arr = np.asarray(array.detach().cpu() if isinstance(array, torch.Tensor) else array)
        root = Path(self.run.dir)
        path = root / "arrays" / name / f"{int(step):09d}.npy"
        path.parent.mkdir(parents=True, exist_ok=True)
        np.save(path, arr)
        self.run.save(str(path), base_path=str(root), policy="now")
        return path

    def flush(self) -> None:
        """Nothing to do: W&B sends records in the background."""

    def record_settings(self, settings: Mapping[str, Any], *, stream: str | None = None) -> None:
        """Add the training settings a Recorder found (optimizer, lr, loss, ...) to the run's
        config (``<stream>.<key>`` with a stream); a key it already has is left as it is."""
        flat = flatten_config({stream: dict(settings)} if stream else dict(settings), "settings")
        new = {k: v for k, v in flat.items() if k not in self.run.config}
        if new:
            self.run.config.update(new)

    # ---------------------------------------------------------------- ending the run
    def _end(self, error: BaseException | str | None) -> None:
        """Finish the W&B run (exit code 1 and the summary key ``ncdynamics/error`` when
        ``error`` is given). Idempotent; a run passed in with ``run=`` is left open."""
        if error is not None:
            self.run.summary["ncdynamics/error"] = one_line_reason(error)
        if self._owns_run:
            self.run.finish(exit_code=1 if error is not None else 0)

    def __repr__(self) -> str:
        return f"WandbSink(run={getattr(self.run, 'id', None)!r})"
