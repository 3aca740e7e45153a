"""A seeded, resumable SGD training loop for classifiers.

One readable loop: SGD with momentum or Nesterov, weight decay on weights only (not biases
or normalisation parameters) unless asked, a multistep learning-rate schedule, MSE (½·mean)
or cross-entropy, plain or class-balanced batches, CUDA when present. With a ``store`` (a
:class:`ncdynamics.runs.Run`) it checkpoints every ``checkpoint_every`` epochs and resumes
from the newest checkpoint; batch order depends only on ``(seed, epoch)``, so a resumed run
repeats exactly what the killed one would have done.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import torch
from torch import nn

from .._validation import check_int, check_option, check_scalar
from ..data import Dataset, class_balanced_batches
from ..models.modes import eval_mode
from ..probes.performance import LOSSES, classification_loss, loss_and_accuracy
from .devices import device_for
from .inputs import LabelledData, as_dataset
from .recorder import Evaluation, Recorder

__all__ = [
    "CheckpointStore",
    "TrainConfig",
    "TrainResult",
    "param_groups",
    "train",
]


@dataclass(frozen=True)
class TrainResult:
    """Outcome of :func:`train`.

    Attributes
    ----------
    epochs : int
        Epochs completed in total (resumed ones included).
    history : dict of str to list of float
        Per-epoch ``train/loss``, ``train/accuracy``, ``test/loss``, ``test/accuracy`` of the
        epochs run in this call.
    final : dict of str to float
        The last recorded scalars (probes included).
    """

    epochs: int
    history: dict[str, list[float]] = field(default_factory=dict)
    final: dict[str, float] = field(default_factory=dict)


def param_groups(model: nn.Module, weight_decay: float, *, decay_all: bool = False) -> list[dict]:
    """Optimizer groups: weight decay on weight matrices and kernels only.

    Parameters with one dimension (biases, norm-layer scales and shifts) get no decay unless
    ``decay_all``. Frozen parameters are left out.
    """
    decay: list[nn.Parameter] = []
    no_decay: list[nn.Parameter] = []
    for p in model.parameters():
        if not p.requires_grad:
            continue
        (decay if decay_all or p.ndim > 1 else no_decay).append(p)
    groups = [{"params": decay, "weight_decay": weight_decay}]
    if no_decay:
        groups.append({"params": no_decay, "weight_decay": 0.0})
    return groups


def _batches(
    y: np.ndarray,
    num_classes: int,
    batch_size: int,
    per_class: int | None,
    rng: np.random.Generator,
) -> list[np.ndarray]:
    if per_class is not None:
        return list(class_balanced_batches(y, per_class, rng, num_classes=num_classes))
    order = rng.permutation(y.size)
    return [order[s : s + batch_size] for s in range(0, y.size, batch_size)]


@torch.no_grad()
def _evaluate(
    model: nn.Module, x: torch.Tensor, y: torch.Tensor, loss: str, batch_size: int = 2048
) -> tuple[float, float]:
    """Mean loss and accuracy of the model on (x, y), in eval mode, in batches."""
    with eval_mode(model), torch.no_grad():
        if x.shape[0] <= batch_size:
            return loss_and_accuracy(model(x), y, loss)
        total_loss, correct = 0.0, 0.0
        for s in range(0, x.shape[0], batch_size):
            out = model(x[s : s + batch_size])
            value, accuracy = loss_and_accuracy(out, y[s : s + batch_size], loss)
            total_loss += value * out.shape[0]
            correct += accuracy * out.shape[0]
        return total_loss / x.shape[0], correct / x.shape[0]


class CheckpointStore(Protocol):
    """Where :func:`train` keeps its checkpoints (a :class:`ncdynamics.runs.Run` is one)."""

    def save_checkpoint(self, step: int, state: Mapping[str, object], *, tag: str = ...) -> object:
        """Save ``state`` as the checkpoint of ``step`` under ``tag``."""
        ...

    def load_checkpoint(self, tag: str = ...) -> dict[str, Any] | None:
        """The newest checkpoint of ``tag`` (a dict with ``step``), or ``None``."""
        ...


@dataclass(frozen=True)
class TrainConfig:
    """The settings of :func:`train` (everything but the model, data and where things go):
    ``train(model, data, TrainConfig(epochs=5))``, or the same fields as keywords of ``train``.

    Attributes
    ----------
    epochs : int
        Total epochs (a resumed run continues up to this number).
    loss : {"mse", "cross-entropy"}, default="cross-entropy"
        MSE is ½·mean over samples of the squared error to one-hot targets.
    lr, momentum, nesterov, weight_decay, gamma
        SGD settings (defaults 0.05, 0.9, False, 0.0, 0.1); the learning rate is multiplied
        by ``gamma`` at each epoch of ``milestones``. Nesterov applies only with momentum.
    decay_all : bool, default=False
        Apply weight decay to biases and normalisation parameters too.
    milestones : tuple of int, default=()
    batch_size : int, default=128
        Used when ``per_class`` is None.
    per_class : int, optional
        Class-balanced batches of exactly ``per_class`` samples of every class.
    seed : int, default=0
        Seeds batch order (per epoch).
    tag : str, default="main"
        Checkpoint namespace within the store (several trainings in one run).
    checkpoint_every : int, default=10
        Epochs between checkpoints (the last epoch is always checkpointed).
    evaluate_test : bool, default=True
        Log test loss and accuracy at recorded epochs that are multiples of ``test_every``
        (and at the last epoch).
    test_every : int, default=1
    progress : bool, default=True
        Show a progress bar, labelled ``desc`` (default "train").

    Raises
    ------
    ValueError
        A value out of range (the message names the field).
    """

    epochs: int
    loss: Literal["mse", "cross-entropy"] = "cross-entropy"
    lr: float = 0.05
    momentum: float = 0.9
    nesterov: bool = False
    weight_decay: float = 0.0
    decay_all: bool = False
    milestones: tuple[int, ...] = ()
    gamma: float = 0.1
    batch_size: int = 128
    per_class: int | None = None
    seed: int = 0
    tag: str = "main"
    checkpoint_every: int = 10
    evaluate_test: bool = True
    test_every: int = 1
    progress: bool = True
    desc: str = "train"

    def __post_init__(self) -> None:
        checked: dict[str, object] = {"epochs": check_int(self.epochs, "epochs", low=0)}
        check_option(self.loss, "loss", LOSSES)
        check_scalar(self.lr, "lr", low=0.0, closed="neither")
        check_scalar(self.momentum, "momentum", low=0.0, high=1.0, closed="left")
        check_scalar(self.weight_decay, "weight_decay", low=0.0)
        checked["batch_size"] = check_int(self.batch_size, "batch_size", low=1)
        checked["checkpoint_every"] = check_int(self.checkpoint_every, "checkpoint_every", low=1)
        checked["test_every"] = check_int(self.test_every, "test_every", low=1)
        if self.per_class is not None:
            checked["per_class"] = check_int(self.per_class, "per_class", low=1)
        for name, value in checked.items():  # plain ints (a NumPy integer is accepted)
            object.__setattr__(self, name, value)


def _config_of(config: TrainConfig | None, settings: dict[str, Any]) -> TrainConfig:
    """``config`` with ``settings`` (fields of :class:`TrainConfig`) in place of its own."""
    if config is not None and not isinstance(config, TrainConfig):
        raise TypeError(f"`config` must be a TrainConfig; got {type(config).__name__}.")
    names = [f.name for f in dataclasses.fields(TrainConfig)]
    unknown = sorted(set(settings) - set(names))
    if unknown:
        raise TypeError(
            f"`{unknown[0]}` is not a setting of train(); the settings are the fields of "
            f"TrainConfig: {', '.join(names)}."
        )
    if config is not None:
        return dataclasses.replace(config, **settings)
    if "epochs" not in settings:
        raise ValueError(
            "`epochs` must be given, as train(model, data, TrainConfig(epochs=...)) or "
            "train(model, data, epochs=...); got neither."
        )
    return TrainConfig(**settings)


@dataclass(frozen=True)
class _Split:
    """The training and test sets as tensors on the model's device and in its dtype."""

    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor


def _to_device(model: nn.Module, data: Dataset, device: torch.device) -> _Split:
    model.to(device)
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    return _Split(
        torch.as_tensor(data.x_train, dtype=dtype, device=device),
        torch.as_tensor(data.y_train, device=device),
        torch.as_tensor(data.x_test, dtype=dtype, device=device),
        torch.as_tensor(data.y_test, device=device),
    )


def _optimizer(
    model: nn.Module, config: TrainConfig
) -> tuple[torch.optim.SGD, torch.optim.lr_scheduler.MultiStepLR]:
    """SGD over :func:`param_groups` and its multistep learning-rate schedule."""
    optimizer = torch.optim.SGD(
        param_groups(model, config.weight_decay, decay_all=config.decay_all),
        lr=config.lr,
        momentum=config.momentum,
        nesterov=config.nesterov and config.momentum > 0,
    )
    milestones = list(config.milestones)
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, milestones, gamma=config.gamma)
    return optimizer, scheduler


def _resume(
    store: CheckpointStore | None,
    tag: str,
    model: nn.Module,
    optimizer: torch.optim.SGD,
    scheduler: torch.optim.lr_scheduler.MultiStepLR,
) -> int | None:
    """Load the newest checkpoint of ``tag`` into the training state; its epoch, or None."""
    ckpt = store.load_checkpoint(tag) if store is not None else None
    if ckpt is None:
        return None
    model.load_state_dict(ckpt["model"])
    optimizer.load_state_dict(ckpt["optimizer"])
    scheduler.load_state_dict(ckpt["scheduler"])
    torch.set_rng_state(ckpt["torch_rng"])
    return int(ckpt["step"])


def _train_epoch(
    model: nn.Module,
    split: _Split,
    data: Dataset,
    config: TrainConfig,
    optimizer: torch.optim.SGD,
    epoch: int,
) -> tuple[float, float]:
    """One epoch of SGD steps, batches drawn from ``(seed, epoch)``; mean loss and accuracy."""
    model.train()
    rng = np.random.default_rng([config.seed, epoch])
    total, correct, count = 0.0, 0, 0
    batches = _batches(data.y_train, data.num_classes, config.batch_size, config.per_class, rng)
    for idx in batches:
        ib = torch.as_tensor(idx, device=split.x_train.device)
        xb, yb = split.x_train[ib], split.y_train[ib]  # (B, *input_shape), (B,)
        out = model(xb)  # (B, C)
        batch_loss = classification_loss(out, yb, config.loss)
        optimizer.zero_grad(set_to_none=True)
        batch_loss.backward()
        optimizer.step()
        total += float(batch_loss.detach()) * yb.shape[0]
        correct += int((out.argmax(1) == yb).sum())
        count += yb.shape[0]
    return total / max(count, 1), correct / max(count, 1)


def _record_epoch(
    recorder: Recorder,
    model: nn.Module,
    done: int,
    train_loss: float,
    train_acc: float,
    lr: float,
    split: _Split,
    config: TrainConfig,
) -> bool:
    """Log the epoch's training scalars and run the probes if the schedule says so;
    whether they ran."""
    recorder.log(done, **{"train/loss": train_loss, "train/accuracy": train_acc, "lr": lr})
    if done not in recorder.schedule:
        return False
    due = config.evaluate_test and (done % config.test_every == 0 or done == config.epochs)
    test = _test_evaluation(config.loss, split) if due else None
    recorder.step(model, done, evaluate=test)
    return True


def train(
    model: nn.Module,
    data: Dataset | LabelledData,
    config: TrainConfig | None = None,
    *,
    device: str | torch.device | None = None,
    recorder: Recorder | None = None,
    store: CheckpointStore | None = None,
    **settings: Any,
) -> TrainResult:
    """Train ``model`` on ``data`` with SGD and record along the way.

    Parameters
    ----------
    model : nn.Module
        Any classifier mapping inputs to ``(n, num_classes)`` logits; trained in place.
    data : Dataset, torch Dataset or DataLoader
        An :class:`ncdynamics.data.Dataset`, or the training samples in another container
        of :mod:`ncdynamics.training.inputs` (a torch ``Dataset`` of ``(x, y)`` items, a
        ``DataLoader``, a pair ``(x, y)``): read into memory once, with an empty test split;
        batches are then drawn by this loop (the loader's own batching is not used).
    config : TrainConfig, optional
        The settings (epochs, loss, SGD, batches, seed, checkpoints, progress).
    device : str or torch.device, optional
        Checked by :func:`ncdynamics.training.devices.device_for`; defaults to the run's
        device (``ncdyn run --device``), else CUDA when available.
    recorder : Recorder, optional
        Called after every epoch (``recorder.step(model, epoch)``) and once before training
        (epoch 0 is the initialisation; epoch e is the state after e epochs).
    store : Run, optional
        Where checkpoints go (``save_checkpoint``/``load_checkpoint``); enables resuming.
    **settings
        Fields of :class:`TrainConfig`, forwarded to it: ``train(model, data, epochs=5,
        lr=0.1)`` is ``train(model, data, TrainConfig(epochs=5, lr=0.1))``; beside a
        ``config`` they replace its fields.

    Returns
    -------
    TrainResult

    Raises
    ------
    TypeError
        A keyword that is no field of :class:`TrainConfig`, or a ``config`` of another type.
    ValueError
        A setting out of range (see :class:`TrainConfig`), a device this machine does not
        have, or an empty training set.
    FloatingPointError
        The training loss is not finite (the message names the epoch).
    """
    config = _config_of(config, settings)
    data = as_dataset(data)
    if len(data.y_train) == 0:
        raise ValueError(
            "`data` must hold at least one training sample; got an empty training set."
        )
    split = _to_device(model, data, device_for(device))
    optimizer, scheduler = _optimizer(model, config)
    start = _resume(store, config.tag, model, optimizer, scheduler)
    if start is None:
        start = 0
        if recorder is not None:
            _record(recorder, model, 0, config.loss, split, config.evaluate_test)

    history: dict[str, list[float]] = {"train/loss": [], "train/accuracy": []}
    from tqdm.auto import tqdm

    bar = tqdm(
        range(start, config.epochs),
        desc=config.desc,
        disable=not config.progress,
        leave=False,
        initial=start,
        total=config.epochs,
    )
    for epoch in bar:
        train_loss, train_acc = _train_epoch(model, split, data, config, optimizer, epoch)
        scheduler.step()
        if not np.isfinite(train_loss):
            raise FloatingPointError(
                f"training diverged at epoch {epoch + 1}: loss is {train_loss}. "
                "Lower `lr` or check the data."
            )
        history["train/loss"].append(train_loss)
        history["train/accuracy"].append(train_acc)
        done = epoch + 1
        if recorder is not None:
            lr = optimizer.param_groups[0]["lr"]
            recorded = _record_epoch(
                recorder, model, done, train_loss, train_acc, lr, split, config
            )
            if recorded and config.progress:
                bar.set_postfix(_postfix(recorder.latest), refresh=False)
        if store is not None and (done % config.checkpoint_every == 0 or done == config.epochs):
            store.save_checkpoint(
                done,
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                },
                tag=config.tag,
            )
    bar.close()
    final = dict(recorder.last) if recorder is not None else {}
    return TrainResult(epochs=config.epochs, history=history, final=final)


def _record(
    rec: Recorder, model: nn.Module, step: int, loss: str, split: _Split, test: bool
) -> None:
    """The record of the initialisation (step 0): training-set loss, probes, test set."""
    tl, ta = _evaluate(model, split.x_train, split.y_train, loss)
    rec.log(step, **{"train/loss": tl, "train/accuracy": ta})
    rec.record(model, step, evaluate=_test_evaluation(loss, split) if test else None)


def _test_evaluation(loss: str, split: _Split) -> Evaluation | None:
    """The test-set loss and accuracy of a model, for :meth:`Recorder.record` to compute on
    the recorded model state (on the snapshot, in background mode); ``None`` without a test
    set."""
    x_te, y_te = split.x_test, split.y_test
    if x_te.shape[0] == 0:
        return None

    def evaluate(model: nn.Module) -> dict[str, float]:
        tl, ta = _evaluate(model, x_te, y_te, loss)
        return {"test/loss": tl, "test/accuracy": ta}

    return evaluate


def _postfix(last: dict[str, float]) -> dict[str, str]:
    out: dict[str, str] = {}
    for key, short in (("nc/nc1", "NC1"), ("probe/accuracy", "acc"), ("test/accuracy", "test")):
        for k, v in last.items():
            if k.endswith(key):
                out[short] = f"{v:.3g}"
    return out
