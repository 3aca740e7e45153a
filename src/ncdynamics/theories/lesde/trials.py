"""R independent LeNets trained at once with batch size 1 and plain SGD ([1], Sec. 4.1).

Every iteration m each trial r draws one training index uniformly (with replacement),
records the logits of that sample from the forward pass *before* the update, its training
label and its loss, then takes one SGD step. Validation loss and accuracy of every trial
are evaluated on a fixed validation subset before training and every ``eval_every``
iterations (after the update).

Two batched implementations of the same step (both checked against a loop over
``nn.Module`` copies in ``tests/theories/test_lesde_trials.py``):

- ``"fused"`` (default): the fast path :class:`.fast_lenet_step.LeNetSGD`, every layer of
  the R networks as one batched matrix product (convolutions through im2col, since each
  network sees one image), a hand-written backward pass and in-place updates, without
  autograd;
- ``"vmap"``: the reference :mod:`.reference_lenet_step`,
  ``torch.func.stack_module_state`` + ``vmap(grad(functional_call))``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_labels, check_option, check_scalar
from ...models.lenet import LeNet
from ...training.devices import device_for
from .fast_lenet_step import LeNetSGD
from .reference_lenet_step import stacked_gradients

__all__ = ["BatchedTrainer", "TrialRecords", "merge_records", "train_trials"]

METHODS = ("fused", "vmap")


@dataclass(frozen=True)
class TrialRecords:
    """What the LE-SDE estimators need from R training trials.

    Attributes
    ----------
    logits : ndarray of shape (T, R, K), float32
        Pre-update logits of the sample drawn at iteration m in trial r.
    labels : ndarray of shape (T, R), int64
        Its (possibly corrupted) training label.
    sample_idx : ndarray of shape (T, R), int64
    train_loss : ndarray of shape (T, R), float32
        Pre-update cross-entropy of the drawn sample.
    val_iters : ndarray of shape (E,), int64
        Number of updates done when validation was evaluated (0 = initialisation).
    val_loss, val_acc : ndarray of shape (E, R)
    """

    logits: NDArray[np.float32]
    labels: NDArray[np.int64]
    sample_idx: NDArray[np.int64]
    train_loss: NDArray[np.float32]
    val_iters: NDArray[np.int64]
    val_loss: NDArray[np.float64]
    val_acc: NDArray[np.float64]

    @property
    def n_trials(self) -> int:
        return int(self.logits.shape[1])


def merge_records(parts: list[TrialRecords]) -> TrialRecords:
    """Concatenate records of disjoint trial groups along the trial axis."""
    if not parts:
        raise ValueError("`parts` must hold at least one TrialRecords.")

    def cat(name: str, axis: int) -> Any:
        return np.concatenate([getattr(p, name) for p in parts], axis=axis)

    return replace(
        parts[0],
        logits=cat("logits", 1),
        labels=cat("labels", 1),
        sample_idx=cat("sample_idx", 1),
        train_loss=cat("train_loss", 1),
        val_loss=cat("val_loss", 1),
        val_acc=cat("val_acc", 1),
    )


def _conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """Grouped convolution of R nets: x (B, R*C, H, W), w (R, O, C, k, k), b (R, O)."""
    return F.conv2d(x, w.flatten(0, 1), b.flatten(), groups=w.shape[0])  # (B, R*O, h, w)


def _linear(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    # x (R, B, in), w (R, out, in), b (R, out) -> (R, B, out)
    return torch.baddbmm(b[:, None, :], x, w.transpose(1, 2))


def lenet_forward_batched(params: dict[str, torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    """Logits of R stacked LeNets, net r on batch ``x[:, r]``.

    params: stacked LeNet state (leading axis R); x (B, R, C, H, W) -> (R, B, K)
    """
    bsz, r = x.shape[:2]
    h = F.max_pool2d(
        F.relu(_conv(x.flatten(1, 2), params["body.0.weight"], params["body.0.bias"])), 2
    )  # (B, R*6, ., .)
    h = F.max_pool2d(F.relu(_conv(h, params["body.3.weight"], params["body.3.bias"])), 2)
    h = h.view(bsz, r, -1).transpose(0, 1)  # (R, B, 400)
    h = F.relu(_linear(h, params["body.7.weight"], params["body.7.bias"]))
    h = F.relu(_linear(h, params["body.9.weight"], params["body.9.bias"]))
    return _linear(h, params["classifier.weight"], params["classifier.bias"])


class BatchedTrainer:
    """R LeNets with stacked parameters, stepped together by plain SGD at batch size 1.

    Parameters
    ----------
    n_trials : int
    in_channels, n_classes, input_size : int
        LeNet shape (``n_classes`` is K in [1]) (:class:`ncdynamics.models.lenet.LeNet`).
    lr : float
        Learning rate (0.005 in [1]).
    generator : torch.Generator
        Source of the R independent PyTorch-default initialisations.
    method : {"fused", "vmap"}
    dtype : torch.dtype, default=torch.float32
    device : str or torch.device, default="cpu"
        Where the stacked parameters live and the steps run (e.g. ``"cuda"``); ``step``
        moves its inputs there, ``evaluate`` and ``module`` return CPU results.
    """

    def __init__(
        self,
        n_trials: int,
        *,
        in_channels: int = 1,
        n_classes: int = 3,
        input_size: int = 32,
        lr: float = 0.005,
        generator: torch.Generator,
        method: Literal["fused", "vmap"] = "fused",
        dtype: torch.dtype = torch.float32,
        device: str | torch.device = "cpu",
    ) -> None:
        from torch.func import stack_module_state

        self.n_trials = check_int(n_trials, "n_trials", low=1)
        self.lr = check_scalar(lr, "lr", low=0.0, closed="neither")
        self.method = check_option(method, "method", METHODS)
        nets = [
            LeNet(in_channels, n_classes, input_size=input_size, generator=generator).to(dtype)
            for _ in range(self.n_trials)
        ]
        params, _ = stack_module_state(nets)
        self.device = device_for(device)
        self._params = {k: v.detach().to(self.device, copy=True) for k, v in params.items()}
        self._template = copy.deepcopy(nets[0])
        self.dtype = dtype
        if method == "vmap":
            self._vmap_grad = stacked_gradients(copy.deepcopy(self._template).to("meta"))
        else:
            self._fused = LeNetSGD(self._params, lr=self.lr)

    @property
    def params(self) -> dict[str, torch.Tensor]:
        """Stacked parameters (leading axis R), with every SGD step so far applied."""
        if self.method == "fused":
            self._fused.flush()
        return self._params

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One SGD step of every net on its own sample.

        Parameters
        ----------
        x : tensor of shape (R, C, H, W)
        y : tensor of shape (R,), int64

        Returns
        -------
        logits : tensor of shape (R, K), pre-update
        loss : tensor of shape (R,), pre-update
        """
        x = x.to(device=self.device, dtype=self.dtype)
        y = y.to(self.device)
        with torch.no_grad():
            if self.method == "fused":
                return self._fused.step(x, y)
        grads, (loss, logits) = self._vmap_grad(self._params, x, y)
        with torch.no_grad():
            for k, v in self._params.items():
                v.add_(grads[k], alpha=-self.lr)
        return logits, loss

    @torch.no_grad()
    def evaluate(
        self, x: torch.Tensor, y: torch.Tensor, *, chunk: int = 256
    ) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Mean cross-entropy and accuracy of every net on the same data.

        x (N, C, H, W), y (N,) -> loss (R,), accuracy (R,)
        """
        losses, correct = [], []
        for s in range(0, x.shape[0], chunk):
            xb = x[s : s + chunk].to(device=self.device, dtype=self.dtype)
            xr = xb[:, None].expand(xb.shape[0], self.n_trials, *xb.shape[1:])
            out = lenet_forward_batched(self.params, xr)  # (R, B, K)
            yb = y[s : s + chunk].to(self.device)
            losses.append(
                F.cross_entropy(out.flatten(0, 1), yb.repeat(self.n_trials), reduction="none").view(
                    self.n_trials, -1
                )
            )
            correct.append(out.argmax(-1) == yb[None])
        loss = torch.cat(losses, 1).mean(1).double().cpu().numpy()
        acc = torch.cat(correct, 1).double().mean(1).cpu().numpy()
        return loss, acc

    def module(self, r: int) -> LeNet:
        """A standalone copy of net ``r`` as an ``nn.Module``, on the trainer's device."""
        r = check_int(r, "r", low=0, high=self.n_trials - 1)
        net = copy.deepcopy(self._template)
        net.load_state_dict({k: v[r].cpu().clone() for k, v in self.params.items()})
        return net.to(self.device)


TrialCallback = Callable[[BatchedTrainer, int], None]
"""``callback(trainer, iteration)``, called after each validation."""


def train_trials(
    x_train: Any,
    y_train: Any,
    x_val: Any,
    y_val: Any,
    *,
    n_trials: int,
    n_iter: int,
    seed: int,
    lr: float = 0.005,
    eval_every: int = 500,
    val_subset: int | None = 150,
    n_classes: int | None = None,
    callback: TrialCallback | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype = torch.float32,
) -> TrialRecords:
    """Train ``n_trials`` LeNets at batch size 1 and record what the estimators need.

    Parameters
    ----------
    x_train : ndarray of shape (N, C, H, W)
    y_train : ndarray of shape (N,)
        Training labels (corrupted ones when studying p_err).
    x_val, y_val : ndarray
        Clean validation data; a fixed random subset of ``val_subset`` images is used
        (``None``: all).
    n_trials, n_iter : int
    seed : int
        Seeds the initialisations, the sampling streams and the validation subset.
    eval_every : int
        Validation period in iterations.
    n_classes : int, optional
        K in [1]; default one more than the largest training label.
    callback : callable, optional
        ``callback(trainer, iteration)`` after each validation (e.g. an elasticity probe).
    device : str or torch.device, optional
        Where the nets train (``"cpu"``, ``"cuda"``...); by default the run's device
        (:func:`ncdynamics.training.current_device`). Records come back as NumPy either way.
    dtype : torch.dtype, default=torch.float32
        The nets' precision; ``torch.float64`` is the authors' setting (their LeNets train in
        double precision) and keeps the logit records in float64.

    The nets train with the fused step of :class:`BatchedTrainer`, on one
    intra-op thread (restored afterwards): batch-1 work on a CPU is much slower with more;
    parallelise across processes.

    Returns
    -------
    TrialRecords
    """
    old_threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        return _train_trials(
            x_train,
            y_train,
            x_val,
            y_val,
            n_trials=n_trials,
            n_iter=n_iter,
            seed=seed,
            lr=lr,
            eval_every=eval_every,
            val_subset=val_subset,
            n_classes=n_classes,
            callback=callback,
            device=device_for(device),
            dtype=dtype,
        )
    finally:
        torch.set_num_threads(old_threads)


def _train_trials(
    x_train: Any,
    y_train: Any,
    x_val: Any,
    y_val: Any,
    *,
    n_trials: int,
    n_iter: int,
    seed: int,
    lr: float,
    eval_every: int,
    val_subset: int | None,
    n_classes: int | None,
    callback: TrialCallback | None,
    device: torch.device,
    dtype: torch.dtype,
) -> TrialRecords:
    x_tr = check_array(x_train, "x_train", ndim=4, dtype=np.float32)
    k = n_classes if n_classes is not None else int(np.max(y_train)) + 1
    y_tr = check_labels(y_train, "y_train", n_samples=x_tr.shape[0], num_classes=k)
    x_va = check_array(x_val, "x_val", ndim=4, dtype=np.float32)
    y_va = check_labels(y_val, "y_val", n_samples=x_va.shape[0], num_classes=k)
    n_trials = check_int(n_trials, "n_trials", low=1)
    n_iter = check_int(n_iter, "n_iter", low=1)
    eval_every = check_int(eval_every, "eval_every", low=1)
    gen = torch.Generator().manual_seed(int(seed))
    rng = np.random.default_rng(seed)
    if val_subset is not None and val_subset < x_va.shape[0]:
        keep = rng.choice(x_va.shape[0], int(val_subset), replace=False)
        x_va, y_va = x_va[keep], y_va[keep]
    trainer = BatchedTrainer(
        n_trials,
        in_channels=x_tr.shape[1],
        n_classes=k,
        input_size=x_tr.shape[-1],
        lr=lr,
        generator=gen,
        device=device,
        dtype=dtype,
    )
    xt, yt = torch.from_numpy(x_tr).to(device), torch.from_numpy(y_tr).to(device)
    xv, yv = torch.from_numpy(x_va).to(device), torch.from_numpy(y_va).to(device)
    idx = rng.integers(0, x_tr.shape[0], size=(n_iter, n_trials))
    # float64 nets (the authors' setting) keep float64 logit records
    rec_dtype = np.float64 if dtype == torch.float64 else np.float32
    logits = np.empty((n_iter, n_trials, k), dtype=rec_dtype)
    losses = np.empty((n_iter, n_trials), dtype=np.float32)
    val_iters = [0, *range(eval_every, n_iter + 1, eval_every)]
    if val_iters[-1] != n_iter:
        val_iters.append(n_iter)
    val_loss = np.empty((len(val_iters), n_trials))
    val_acc = np.empty((len(val_iters), n_trials))
    val_loss[0], val_acc[0] = trainer.evaluate(xv, yv)
    if callback is not None:
        callback(trainer, 0)
    e = 1
    for m in range(n_iter):
        ii = torch.from_numpy(idx[m]).to(device)
        out, loss = trainer.step(xt[ii], yt[ii])
        logits[m], losses[m] = out.detach().cpu().numpy(), loss.float().cpu().numpy()
        if m + 1 == val_iters[e]:
            val_loss[e], val_acc[e] = trainer.evaluate(xv, yv)
            if not np.all(np.isfinite(val_loss[e])):
                raise FloatingPointError(f"validation loss became non-finite at iteration {m}.")
            if callback is not None:
                callback(trainer, m + 1)
            e += 1
    return TrialRecords(
        logits,
        y_tr[idx],
        idx.astype(np.int64),
        losses,
        np.asarray(val_iters, dtype=np.int64),
        val_loss,
        val_acc,
    )
