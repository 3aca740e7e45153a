"""The ``atlas`` experiment: one cell of the regime atlas, trained and recorded for every theory.

A network (the base model, :data:`BASE_MODELS`) is trained on ``train_per_class`` samples of
each of the first ``n_classes`` classes of a dataset, with one of four optimisers
(:data:`OPTIMIZERS`):

``gd``
    full-batch gradient descent (one step per epoch on every training sample);
``sgd``
    plain stochastic gradient descent on batches of ``batch_size``;
``momentum``
    the same with heavy-ball momentum ``momentum``;
``adam``
    Adam on batches of ``batch_size`` (default betas).

The learning rate is constant and there is no weight decay, so the only departures from a
theory's regime are the ones the cell's settings choose. Every parameter of the default
initialisation is multiplied by ``init_scale`` (``1`` keeps PyTorch's default).

Every ``record_every`` epochs (and at epoch 0) the recorder writes, under the prefix ``net/``,
what every theory's confrontation reads: the collapse metrics, the class means of features and
logits (``class_means``: the Hadamard and LE-SDE theories), the pair observables of two probe
points of different classes (``pair_alignment``: the two-point alignment theory), the probe
loss and accuracy, and with ``record_ntk`` the end-of-training invariant (``ntk_invariant``:
the NTK-collapse flow). The settings each theory's regime checks read are stated under
``streams["net"]`` (:meth:`ncdynamics.theories.confrontation.Stream.setting`), and
``not_recorded`` says why a theory's records are missing when ``record_ntk`` is off.

A run whose loss or parameters stop being finite stops there; its summary says so
(``diverged``, ``diverged_at``) and the records up to that epoch stay.

The base model ``ufm`` is the unconstrained features model of the Hadamard theory (and of
most of the collapse literature): a two-layer linear network without biases whose inputs are
the one-hot codes of its ``n_classes * train_per_class`` samples (dataset ``one-hot``,
:data:`ONE_HOT`), so the features ``H`` (``width x K n``) and the classifier ``W``
(``K x width``) are free parameters; its default initialisation draws every entry from
``N(0, 1/K)`` (the theory's standard scale; ``init_scale = e^-delta`` gives its ``e^-delta``
scale). It records every sample (``probe_per_class == train_per_class``), so its class means
are the model's own.

Adding a base model: add a builder ``(in_features, n_classes, config, generator) -> nn.Module``
to :data:`BASE_MODELS` (the model must expose ``features`` and ``classifier`` as
:class:`ncdynamics.models.MLP` does, or work with the recorder's feature extractor);
``docs/atlas.md`` shows it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from torch import nn

from .. import data as nc_data
from .._validation import check_int, check_option, check_scalar
from ..models import MLP, SmallCNN
from ..probes import PairAlignmentProbe, PerformanceProbe
from ..probes.performance import LOSSES, classification_loss
from ..theories.experiment import ExperimentSpec, RunWriter
from ..training import Recorder

__all__ = [
    "BASE_MODELS",
    "EXPERIMENTS",
    "ONE_HOT",
    "OPTIMIZERS",
    "PREFIX",
    "AtlasCellConfig",
    "run_cell",
]

#: The optimisers of the atlas (module docstring).
OPTIMIZERS = ("gd", "sgd", "momentum", "adam")
#: The prefix of the cell's one stream of records.
PREFIX = "net/"
#: The dataset of the ``ufm`` base model: the one-hot codes of its samples (module docstring).
ONE_HOT = "one-hot"

_NTK_OFF = (
    "the cell was run with record_ntk=false (the ntk_invariant probe computes an empirical "
    "NTK at every record); set record_ntk=true to confront the NTK-collapse flow"
)


def _mlp(in_features: int, n_classes: int, cfg: AtlasCellConfig, gen: torch.Generator) -> nn.Module:
    return MLP(in_features, n_classes, depth=cfg.depth, width=cfg.width, generator=gen)


class _FlatImages(nn.Module):
    """A :class:`~ncdynamics.models.SmallCNN` fed the cell's flattened inputs, read as square
    one-channel images; ``features`` and ``classifier`` as the recorder expects."""

    def __init__(self, net: SmallCNN) -> None:
        super().__init__()
        self.net = net
        self.classifier = net.classifier

    def features(self, x: torch.Tensor) -> torch.Tensor:
        s = self.net.input_size
        return self.net.features(x.reshape(x.shape[0], 1, s, s))  # (n, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))  # (n, n_classes)


def _cnn(in_features: int, n_classes: int, cfg: AtlasCellConfig, gen: torch.Generator) -> nn.Module:
    side = math.isqrt(in_features)
    if side * side != in_features or side < 4:
        raise ValueError(
            f"model 'cnn' needs square one-channel images of side >= 4; the dataset gives "
            f"{in_features} input features."
        )
    return _FlatImages(SmallCNN(1, n_classes, width=cfg.width, input_size=side, generator=gen))


class _UFM(nn.Module):
    """The unconstrained features model as a network: ``features`` maps the one-hot code of
    sample ``i`` to column ``i`` of ``H`` (``width x N``), ``classifier`` is ``W``
    (``K x width``); no biases, entries drawn from ``N(0, 1/K)``."""

    def __init__(self, n_samples: int, n_classes: int, width: int, gen: torch.Generator):
        super().__init__()
        self.features = nn.Linear(n_samples, width, bias=False)
        self.classifier = nn.Linear(width, n_classes, bias=False)
        std = 1.0 / math.sqrt(n_classes)
        with torch.no_grad():
            for layer in (self.features, self.classifier):
                layer.weight.copy_(torch.randn(layer.weight.shape, generator=gen) * std)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))  # (n, n_classes)


def _ufm(in_features: int, n_classes: int, cfg: AtlasCellConfig, gen: torch.Generator) -> nn.Module:
    return _UFM(in_features, n_classes, cfg.width, gen)


#: Base models by name: ``builder(in_features, n_classes, config, generator)``; ``cnn`` is
#: :class:`~ncdynamics.models.SmallCNN` (two conv stages, ``width`` features) on square
#: one-channel images (digits, mnist-5k), ``depth`` unused; ``ufm`` is the unconstrained
#: features model on dataset ``one-hot`` (module docstring), ``depth`` unused.
BASE_MODELS: dict[str, Callable[[int, int, AtlasCellConfig, torch.Generator], nn.Module]] = {
    "mlp": _mlp,
    "cnn": _cnn,
    "ufm": _ufm,
}


@dataclass(frozen=True)
class AtlasCellConfig:
    """Settings of one atlas cell (defaults: the ``cpu`` preset's base point)."""

    model: str = "mlp"
    dataset: str = "digits"
    n_classes: int = 4
    train_per_class: int = 32
    loss: Literal["mse", "cross-entropy"] = "mse"
    optimizer: str = "gd"
    lr: float = 0.1
    momentum: float = 0.9
    batch_size: int = 16
    depth: int = 2
    width: int = 64
    init_scale: float = 1.0
    epochs: int = 300
    record_every: int = 5
    probe_per_class: int = 8
    record_ntk: bool = False
    #: Derived, not an option: the stream's settings (module docstring).
    streams: dict[str, dict[str, Any]] | None = None
    #: Derived, not an option: theory -> why the cell does not record what it needs.
    not_recorded: dict[str, str] | None = None

    def _check(self) -> None:
        check_option(self.model, "model", tuple(BASE_MODELS))
        check_option(self.dataset, "dataset", (*nc_data.available(), ONE_HOT))
        if self.model == "ufm" and self.dataset != ONE_HOT:
            raise ValueError(
                f"model 'ufm' needs dataset {ONE_HOT!r} (its inputs are the one-hot codes of "
                f"its samples); got dataset {self.dataset!r}."
            )
        if self.dataset == ONE_HOT and self.model != "ufm":
            raise ValueError(
                f"dataset {ONE_HOT!r} is the input of model 'ufm' only; got model {self.model!r}."
            )
        check_int(self.n_classes, "n_classes", low=2)
        check_int(self.train_per_class, "train_per_class", low=2)
        check_option(self.loss, "loss", LOSSES)
        check_option(self.optimizer, "optimizer", OPTIMIZERS)
        check_scalar(self.lr, "lr", low=0.0, closed="neither")
        check_scalar(self.momentum, "momentum", low=0.0, high=1.0, closed="left")
        check_scalar(self.init_scale, "init_scale", low=0.0, closed="neither")
        for name in ("batch_size", "depth", "width", "epochs", "record_every"):
            check_int(getattr(self, name), name, low=1)
        check_int(self.probe_per_class, "probe_per_class", low=2)
        if self.probe_per_class > self.train_per_class:
            raise ValueError(
                f"option `probe_per_class` must be at most train_per_class "
                f"({self.train_per_class}); got {self.probe_per_class}."
            )
        if self.model == "ufm" and self.probe_per_class != self.train_per_class:
            raise ValueError(
                f"model 'ufm' records every sample: option `probe_per_class` must equal "
                f"train_per_class ({self.train_per_class}); got {self.probe_per_class}."
            )

    def effective_batch(self) -> int:
        """Samples per step: every training sample for ``gd``, else ``batch_size``."""
        n = self.n_classes * self.train_per_class
        return n if self.optimizer == "gd" else min(self.batch_size, n)

    def _stream_settings(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "loss": self.loss,
            "optimizer": "adam" if self.optimizer == "adam" else "sgd",
            "lr": self.lr,
            "lr_schedule": "constant",
            "milestones": [],
            "weight_decay": 0.0,
            "nesterov": False,
            "batch_size": self.effective_batch(),
            "epochs": self.epochs,
            "train_per_class": self.train_per_class,
            "init_scale": self.init_scale,
        }
        if self.optimizer != "adam":  # Adam's betas are not a heavy-ball momentum
            out["momentum"] = self.momentum if self.optimizer == "momentum" else 0.0
        return out

    def __post_init__(self) -> None:
        """Refuse a bad value when the config is built (before a run directory exists)."""
        self._check()
        derived = {
            "streams": {PREFIX.rstrip("/"): self._stream_settings()},
            "not_recorded": {} if self.record_ntk else {"ntk_collapse": _NTK_OFF},
        }
        for name, value in derived.items():
            given = getattr(self, name)
            if given is not None and given != value:
                raise ValueError(
                    f"option `{name}` is derived from the other options and cannot be set; "
                    f"got {given!r}."
                )
            object.__setattr__(self, name, value)


def cell_data(config: AtlasCellConfig) -> tuple[np.ndarray, np.ndarray]:
    """The cell's training set: ``(x, y)``, ``train_per_class`` samples of each of the first
    ``n_classes`` classes (the same for every seed), inputs flattened; for dataset
    ``one-hot`` (model ``ufm``) the identity's rows, ``train_per_class`` per class in order.

    Raises
    ------
    ValueError
        When the dataset has fewer classes, or a class fewer samples, than asked for.
    """
    if config.dataset == ONE_HOT:
        n = config.n_classes * config.train_per_class
        y_hot = np.repeat(np.arange(config.n_classes, dtype=np.int64), config.train_per_class)
        return np.eye(n, dtype=np.float32), y_hot
    options: dict[str, Any] = {}
    if config.dataset == "gaussian-clusters":
        options = {"num_classes": config.n_classes, "n_train_per_class": config.train_per_class}
    ds = nc_data.load(config.dataset, **options)
    if ds.num_classes < config.n_classes:
        raise ValueError(
            f"option `n_classes` must be at most the {ds.num_classes} classes of dataset "
            f"{config.dataset!r}; got {config.n_classes}."
        )
    keep = ds.y_train < config.n_classes
    x, y = ds.x_train[keep], ds.y_train[keep]
    counts = np.bincount(y, minlength=config.n_classes)
    if counts.min() < config.train_per_class:
        raise ValueError(
            f"option `train_per_class` must be at most {int(counts.min())} for dataset "
            f"{config.dataset!r} with {config.n_classes} classes; got {config.train_per_class}."
        )
    idx = nc_data.balanced_subset(
        y, config.train_per_class, np.random.default_rng(0), num_classes=config.n_classes
    )
    idx = np.sort(idx)
    return x[idx].reshape(idx.size, -1).astype(np.float32), y[idx].astype(np.int64)


def _finite(model: nn.Module) -> bool:
    return all(bool(torch.isfinite(p).all()) for p in model.parameters())


def run_cell(config: AtlasCellConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Train and record one cell (module docstring)."""
    from ..training.devices import current_device

    device = current_device()
    x_np, y_np = cell_data(config)
    rng = np.random.default_rng(seed)
    probe = nc_data.balanced_subset(y_np, config.probe_per_class, rng, num_classes=config.n_classes)
    probe = np.sort(probe)
    y_probe = y_np[probe]
    pair = (int(np.flatnonzero(y_probe == 0)[0]), int(np.flatnonzero(y_probe == 1)[0]))
    gen = torch.Generator().manual_seed(seed)
    model = BASE_MODELS[config.model](x_np.shape[1], config.n_classes, config, gen)
    with torch.no_grad():
        for p in model.parameters():
            p.mul_(config.init_scale)
    model = model.to(device)
    probes: list[Any] = [
        "collapse",
        PerformanceProbe(loss=config.loss),
        "class_means",
        PairAlignmentProbe(pair=pair),
    ]
    if config.record_ntk:
        from ..probes.invariant import InvariantProbe

        probes.append(InvariantProbe(per_class=config.probe_per_class))
    rec = Recorder(
        run,
        x_np[probe],
        y_probe,
        probes=probes,
        schedule=config.record_every,
        num_classes=config.n_classes,
        prefix=PREFIX,
    )
    if config.optimizer == "adam":
        opt: torch.optim.Optimizer = torch.optim.Adam(model.parameters(), lr=config.lr)
    else:
        mu = config.momentum if config.optimizer == "momentum" else 0.0
        opt = torch.optim.SGD(model.parameters(), lr=config.lr, momentum=mu)
    x = torch.from_numpy(x_np).to(device)
    y = torch.from_numpy(y_np).to(device)
    batch = config.effective_batch()
    diverged_at: int | None = None
    last_loss = math.nan
    rec.step(model, 0)
    from tqdm.auto import tqdm

    for epoch in tqdm(range(1, config.epochs + 1), desc="atlas cell", disable=not progress):
        model.train()
        order = np.random.default_rng([seed, epoch]).permutation(y_np.size)
        total = 0.0
        for start in range(0, y_np.size, batch):
            ib = torch.from_numpy(order[start : start + batch]).to(device)
            out = model(x[ib])  # (B, n_classes)
            loss = classification_loss(out, y[ib], config.loss)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            total += float(loss.detach()) * ib.numel()
        last_loss = total / y_np.size
        if not (math.isfinite(last_loss) and _finite(model)):
            diverged_at = epoch
            break
        run.log(epoch, {f"{PREFIX}train/loss": last_loss})
        rec.step(model, epoch)
    rec.close()
    run.flush()
    run.save_summary(
        {
            "diverged": diverged_at is not None,
            "diverged_at": diverged_at if diverged_at is not None else -1,
            "final_train_loss": last_loss,
            "n_train": int(y_np.size),
        }
    )


EXPERIMENTS = (
    ExperimentSpec(
        name="atlas",
        theory="core",
        summary="one cell of the regime atlas: a network trained and recorded for every theory",
        config=AtlasCellConfig,
        presets={
            "smoke": {
                "epochs": 40,
                "width": 16,
                "train_per_class": 8,
                "probe_per_class": 4,
                "record_every": 2,
            },
            "cpu": {},
            "paper": {"epochs": 2000, "width": 256, "train_per_class": 100, "record_ntk": True},
        },
        run=run_cell,
        resumable=False,
    ),
)
