"""A seeded, resumable SGD training loop for classifiers.

One readable loop: SGD with momentum or Nesterov, weight decay on weights only (not biases
or normalisation parameters) unless asked, a multistep learning-rate schedule, MSE (½·mean)
or cross-entropy, plain or class-balanced batches, CUDA when present. With a ``store`` (a
:class:`ncdynamics.runs.Run`) it checkpoints every ``checkpoint_every`` epochs and resumes
from the newest checkpoint; batch order depends only on ``(seed, epoch)``, so a resumed run
repeats exactly what the killed one would have done.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from .._validation import check_int, check_option, check_scalar
from ..data import Dataset, class_balanced_batches
from ..models.modes import eval_mode
from ..probes.performance import LOSSES, classification_loss, loss_and_accuracy
from .recorder import Recorder

__all__ = ["TrainResult", "default_device", "param_groups", "train"]


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


def default_device() -> torch.device:
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def param_groups(model: nn.Module, weight_decay: float, *, decay_all: bool = False) -> list[dict]:
    """Optimizer groups: weight decay on weight matrices and kernels only.

    Parameters with one dimension (biases, norm-layer scales and shifts) get no decay unless
    ``decay_all``. Frozen parameters are left out.
    """
    decay, no_decay = [], []
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
    with eval_mode(model):
        if x.shape[0] <= batch_size:
            return loss_and_accuracy(model(x), y, loss)
        total_loss, correct = 0.0, 0.0
        for s in range(0, x.shape[0], batch_size):
            out = model(x[s : s + batch_size])
            value, accuracy = loss_and_accuracy(out, y[s : s + batch_size], loss)
            total_loss += value * out.shape[0]
            correct += accuracy * out.shape[0]
        return total_loss / x.shape[0], correct / x.shape[0]


def train(
    model: nn.Module,
    data: Dataset,
    *,
    epochs: int,
    loss: Literal["mse", "cross-entropy"] = "cross-entropy",
    lr: float = 0.05,
    momentum: float = 0.9,
    nesterov: bool = False,
    weight_decay: float = 0.0,
    decay_all: bool = False,
    milestones: tuple[int, ...] = (),
    gamma: float = 0.1,
    batch_size: int = 128,
    per_class: int | None = None,
    seed: int = 0,
    device: str | torch.device | None = None,
    recorder: Recorder | None = None,
    store: Any = None,
    tag: str = "main",
    checkpoint_every: int = 10,
    evaluate_test: bool = True,
    test_every: int = 1,
    progress: bool = True,
    desc: str = "train",
) -> TrainResult:
    """Train ``model`` on ``data`` with SGD and record along the way.

    Parameters
    ----------
    model : nn.Module
        Any classifier mapping inputs to ``(n, num_classes)`` logits; trained in place.
    data : Dataset
    epochs : int
        Total epochs (a resumed run continues up to this number).
    loss : {"mse", "cross-entropy"}
        MSE is ½·mean over samples of the squared error to one-hot targets.
    lr, momentum, nesterov, weight_decay, gamma
        SGD settings; the learning rate is multiplied by ``gamma`` at each epoch of
        ``milestones``.
    decay_all : bool, default=False
        Apply weight decay to biases and normalisation parameters too.
    batch_size : int, default=128
        Used when ``per_class`` is None.
    per_class : int, optional
        Class-balanced batches of exactly ``per_class`` samples of every class.
    seed : int
        Seeds batch order (per epoch) and dropout.
    device : str or torch.device, optional
        Defaults to CUDA when available.
    recorder : Recorder, optional
        Called after every epoch (``recorder.step(model, epoch)``) and once before training
        (epoch 0 is the initialisation; epoch e is the state after e epochs).
    store : Run, optional
        Where checkpoints go (``save_checkpoint``/``load_checkpoint``); enables resuming.
    tag : str, default="main"
        Checkpoint namespace within ``store`` (several trainings in one run).
    checkpoint_every : int, default=10
        Epochs between checkpoints (the last epoch is always checkpointed).
    evaluate_test : bool, default=True
        Log test loss and accuracy at recorded epochs that are multiples of ``test_every``
        (and at the last epoch).
    test_every : int, default=1
    progress : bool, default=True
        Show a progress bar.

    Returns
    -------
    TrainResult
    """
    epochs = check_int(epochs, "epochs", low=0)
    check_option(loss, "loss", LOSSES)
    check_scalar(lr, "lr", low=0.0, closed="neither")
    check_scalar(momentum, "momentum", low=0.0, high=1.0, closed="left")
    check_scalar(weight_decay, "weight_decay", low=0.0)
    batch_size = check_int(batch_size, "batch_size", low=1)
    checkpoint_every = check_int(checkpoint_every, "checkpoint_every", low=1)
    test_every = check_int(test_every, "test_every", low=1)
    if len(data.y_train) == 0:
        raise ValueError(
            "`data` must hold at least one training sample; got an empty training set."
        )
    if per_class is not None:
        per_class = check_int(per_class, "per_class", low=1)
    device = torch.device(device) if device is not None else default_device()
    model.to(device)
    dtype = next((p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32)
    x_tr = torch.as_tensor(data.x_train, dtype=dtype, device=device)
    y_tr = torch.as_tensor(data.y_train, device=device)
    x_te = torch.as_tensor(data.x_test, dtype=dtype, device=device)
    y_te = torch.as_tensor(data.y_test, device=device)
    optimizer = torch.optim.SGD(
        param_groups(model, weight_decay, decay_all=decay_all),
        lr=lr,
        momentum=momentum,
        nesterov=nesterov and momentum > 0,
    )
    scheduler = torch.optim.lr_scheduler.MultiStepLR(optimizer, list(milestones), gamma=gamma)
    start = 0
    ckpt = store.load_checkpoint(tag) if store is not None else None
    if ckpt is not None:
        model.load_state_dict(ckpt["model"])
        optimizer.load_state_dict(ckpt["optimizer"])
        scheduler.load_state_dict(ckpt["scheduler"])
        torch.set_rng_state(ckpt["torch_rng"])
        start = int(ckpt["step"])
    elif recorder is not None:
        _record(recorder, model, 0, loss, x_tr, y_tr, x_te, y_te, evaluate_test)

    history: dict[str, list[float]] = {"train/loss": [], "train/accuracy": []}
    from tqdm.auto import tqdm

    bar = tqdm(
        range(start, epochs),
        desc=desc,
        disable=not progress,
        leave=False,
        initial=start,
        total=epochs,
    )
    y_np = data.y_train
    for epoch in bar:
        model.train()
        rng = np.random.default_rng([seed, epoch])
        total, correct, count = 0.0, 0, 0
        for idx in _batches(y_np, data.num_classes, batch_size, per_class, rng):
            ib = torch.as_tensor(idx, device=device)
            xb, yb = x_tr[ib], y_tr[ib]
            out = model(xb)
            batch_loss = classification_loss(out, yb, loss)
            optimizer.zero_grad(set_to_none=True)
            batch_loss.backward()
            optimizer.step()
            total += float(batch_loss.detach()) * yb.shape[0]
            correct += int((out.argmax(1) == yb).sum())
            count += yb.shape[0]
        scheduler.step()
        train_loss, train_acc = total / max(count, 1), correct / max(count, 1)
        if not np.isfinite(train_loss):
            raise FloatingPointError(
                f"training diverged at epoch {epoch + 1}: loss is {train_loss}. "
                "Lower `lr` or check the data."
            )
        history["train/loss"].append(train_loss)
        history["train/accuracy"].append(train_acc)
        done = epoch + 1
        if recorder is not None:
            recorder.log(
                done,
                **{
                    "train/loss": train_loss,
                    "train/accuracy": train_acc,
                    "lr": optimizer.param_groups[0]["lr"],
                },
            )
            scalars = recorder.step(model, done) if done in recorder.schedule else None
            if scalars is not None and evaluate_test and (done % test_every == 0 or done == epochs):
                _log_test(recorder, model, done, loss, x_te, y_te)
            if scalars is not None and progress:
                bar.set_postfix(_postfix(recorder.last), refresh=False)
        if store is not None and (done % checkpoint_every == 0 or done == epochs):
            store.save_checkpoint(
                done,
                {
                    "model": model.state_dict(),
                    "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict(),
                    "torch_rng": torch.get_rng_state(),
                },
                tag=tag,
            )
    bar.close()
    final = dict(recorder.last) if recorder is not None else {}
    return TrainResult(epochs=epochs, history=history, final=final)


def _record(
    rec: Recorder,
    model: nn.Module,
    step: int,
    loss: str,
    x_tr: torch.Tensor,
    y_tr: torch.Tensor,
    x_te: torch.Tensor,
    y_te: torch.Tensor,
    test: bool,
) -> None:
    tl, ta = _evaluate(model, x_tr, y_tr, loss)
    rec.log(step, **{"train/loss": tl, "train/accuracy": ta})
    rec.record(model, step)
    if test:
        _log_test(rec, model, step, loss, x_te, y_te)


def _log_test(
    rec: Recorder, model: nn.Module, step: int, loss: str, x_te: torch.Tensor, y_te: torch.Tensor
) -> None:
    if x_te.shape[0] == 0:
        return
    tl, ta = _evaluate(model, x_te, y_te, loss)
    rec.log(step, **{"test/loss": tl, "test/accuracy": ta})
    rec.last.update({f"{rec.prefix}test/loss": tl, f"{rec.prefix}test/accuracy": ta})


def _postfix(last: dict[str, float]) -> dict[str, str]:
    out = {}
    for key, short in (("nc/nc1", "NC1"), ("probe/accuracy", "acc"), ("test/accuracy", "test")):
        for k, v in last.items():
            if k.endswith(key):
                out[short] = f"{v:.3g}"
    return out
