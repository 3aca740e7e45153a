"""The network training recipe of [1] (Sec. 6, App. C) shared by Figs. 1, 2 and 12.

One run trains a network with class-balanced batches (``per_class`` samples of every class),
SGD with (Nesterov) momentum, weight decay on weights only, the learning rate divided by 10
at fixed fractions of training, and MSE as 1/2 mean (or cross-entropy). A Recorder measures,
on a fixed class-balanced probe subset of the training set, NC1-NC3 as the paper computes
them (``collapse`` probe) and, on its first ``kernel_per_class`` samples of every class, the
feature and logit kernels, their block values and alignments and the invariant
(``ntk_invariant`` probe). Runs execute in worker processes and return their records, which
the parent writes into the run directory under a per-run prefix (:func:`write_records`).

The network training loop itself is :func:`ncdynamics.training.train`; this module only
chooses its settings, the data, the model and what the Recorder measures.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import pandas as pd
import torch
from numpy.typing import NDArray

from ... import data as nc_data
from ...models import VGG, DenseNetBC, ResNet20
from ...probes import InvariantProbe, Probe, ProbeInput, ProbeOutput, empirical_ntk, make_probe
from ...probes.kernels import block_norms
from ...probes.ntk_probes import class_ordered_subset
from ...training import Recorder, Schedule, train
from ..experiment import RunWriter

__all__ = [
    "FINAL_KEYS",
    "TRAIN_PRESETS",
    "TrainConfig",
    "build_model",
    "final_values",
    "train_one",
    "write_records",
]

MODELS = ("resnet20", "vgg11", "vgg16", "densenet40")


@dataclass(frozen=True)
class TrainConfig:
    """Settings of the training experiments (defaults: the ``cpu`` preset).

    ``lrs`` and ``inits`` span the sweep of Figure 2 (one run per pair); Figure 1 uses
    ``lr`` and ``init``. NC metrics are recorded every ``record_every`` epochs and the
    kernels every ``kernel_every`` epochs (and at the end). ``width_multiplier`` scales the
    paper's widths (ResNet20: 16 channels; VGG; DenseNet growth 12). ``lr_drops`` are
    fractions of ``epochs`` where the learning rate is divided by 10 (the paper: 120, 240,
    360 of 400).

    The ``cpu`` defaults train on ``mnist-5k`` (real 28x28 MNIST digits) averaged down to
    14x14 (``resize=14``: bilinear at half size is the mean of each 2x2 pixel block) with
    135 training images per class, the per-class count of the 8x8 ``digits`` set it
    replaces, so an epoch keeps its ~11 balanced batches. ``kernel_every=6`` puts kernel
    records at epochs 18, 24 and 30 of the stretch between the LR drops at 18 and 36, so a
    confrontation (``ncdyn compare``) has three records at one learning rate to fit.
    ``root`` and ``download`` go to :func:`ncdynamics.data.load` for file-backed sets.
    """

    dataset: str = "mnist-5k"
    root: str | None = None
    download: bool = False
    resize: int | None = 14
    model: Literal["resnet20", "vgg11", "vgg16", "densenet40"] = "resnet20"
    width_multiplier: float = 0.25
    bn_momentum: float = 0.1
    inits: tuple[str, ...] = ("lecun-normal", "pytorch-default", "he-fan-out")
    init: str = "pytorch-default"
    lr: float = 0.049
    lrs: tuple[float, ...] = (0.0096, 0.0185, 0.0355, 0.049)
    loss: Literal["mse", "cross-entropy"] = "mse"
    epochs: int = 60
    lr_drops: tuple[float, ...] = (0.3, 0.6, 0.9)
    per_class: int = 12
    train_per_class: int | None = 135
    momentum: float = 0.9
    nesterov: bool = True
    weight_decay: float = 5e-4
    probe_per_class: int = 30
    kernel_per_class: int = 12
    record_every: int = 2
    kernel_every: int = 6
    workers: int = 2
    #: Block values and alignment of the kernel probe: ``"half-split"`` is the estimator of
    #: the authors' code behind the paper's figures (mselezniova/ntk_collapse
    #: ``resnet_ntk_collapse.py`` ``compute_metrics``, lines 456-551), ``"exact"`` the means
    #: over every entry (:func:`ncdynamics.probes.kernels.block_values`).
    kernel_estimator: Literal["exact", "half-split"] = "half-split"


_SMOKE: dict[str, Any] = {
    "dataset": "digits",  # scikit-learn's bundled set: no optional dependency
    "resize": None,
    "epochs": 2,
    "record_every": 1,
    "kernel_every": 1,
    "train_per_class": 24,
    "probe_per_class": 6,
    "kernel_per_class": 3,
    "per_class": 6,
    "width_multiplier": 0.25,
    "workers": 1,
    "lr": 0.0185,
    "lrs": (0.0096, 0.0185),
    "inits": ("pytorch-default",),
}
_PAPER: dict[str, Any] = {
    "dataset": "mnist",  # the full set: ``--set root=DIR`` (``--set download=true`` fetches it)
    "resize": None,
    "train_per_class": None,  # all of it; balanced batches truncate to the smallest class
    "model": "resnet20",
    "width_multiplier": 1.0,
    "bn_momentum": 0.01,
    "epochs": 400,
    "lr": 0.131,
    # the authors' EPOCH_STEP = 1 (resnet_ntk_collapse.py line 59): metrics every epoch
    "record_every": 1,
    "kernel_every": 1,
    "init": "lecun-normal",
    "lrs": tuple(float(v) for v in 10.0 ** (-4.0 + 4.25 * np.arange(30) / 30.0)),
    "probe_per_class": 12,
    "kernel_per_class": 12,
    "workers": 1,
}
#: The paper's recipe (network, epochs, LR grid and drops, inits, probes) on ``mnist-5k``, the
#: real MNIST images a device machine holds (4,000 training images, about 400 per class,
#: instead of 60,000), at full 28x28 resolution; 8 trainings share the GPU at a time.
_GPU: dict[str, Any] = {**_PAPER, "dataset": "mnist-5k", "workers": 8}
#: Presets of the training experiments (Figs. 1, 2, 12): overrides of :class:`TrainConfig`.
TRAIN_PRESETS: dict[str, dict[str, Any]] = {
    "smoke": _SMOKE,
    "cpu": {},
    "paper": _PAPER,
    "gpu": _GPU,
}


def _load(cfg: TrainConfig) -> nc_data.Dataset:
    opts: dict[str, Any] = {} if cfg.root is None else {"root": cfg.root}
    if cfg.download:
        opts["download"] = True
    ds = nc_data.load(cfg.dataset, **opts)
    x_tr, x_te = ds.x_train, ds.x_test
    if x_tr.ndim == 2:  # flat inputs: square images with one channel
        side = int(round(np.sqrt(x_tr.shape[1])))
        x_tr, x_te = (a.reshape(-1, 1, side, side) for a in (x_tr, x_te))
    if cfg.resize is not None:
        import torch.nn.functional as F

        rs = lambda a: F.interpolate(
            torch.as_tensor(a), size=(cfg.resize, cfg.resize), mode="bilinear", align_corners=False
        ).numpy()
        x_tr, x_te = rs(x_tr), rs(x_te)
    y_tr = ds.y_train
    if cfg.train_per_class is not None:
        idx = nc_data.balanced_subset(y_tr, cfg.train_per_class, num_classes=ds.num_classes)
        x_tr, y_tr = x_tr[idx], y_tr[idx]
    return dataclasses.replace(ds, x_train=x_tr, y_train=y_tr, x_test=x_te)


def build_model(
    cfg: TrainConfig, ds: nc_data.Dataset, init: str, generator: torch.Generator
) -> torch.nn.Module:
    """The network of ``cfg.model`` for the inputs of ``ds`` with init scheme ``init``."""
    c_in, size = ds.x_train.shape[1], ds.x_train.shape[2]
    C, mult = ds.num_classes, cfg.width_multiplier
    if cfg.model == "resnet20":
        return ResNet20(
            c_in,
            C,
            width=max(1, round(16 * mult)),
            input_size=size,
            bn_momentum=cfg.bn_momentum,
            init=init,
            generator=generator,
        )
    if cfg.model in ("vgg11", "vgg16"):
        return VGG(
            cfg.model,
            c_in,
            C,
            width_multiplier=mult,
            input_size=size,
            bn_momentum=cfg.bn_momentum,
            init=init,
            generator=generator,
        )
    return DenseNetBC(
        c_in,
        C,
        width_multiplier=mult,
        input_size=size,
        bn_momentum=cfg.bn_momentum,
        init=init,
        generator=generator,
    )


class _MemorySink:
    """Collects Recorder output in memory (runs in worker processes)."""

    def __init__(self) -> None:
        self.records: list[tuple[int, str, float]] = []
        self.arrays: dict[str, dict[int, np.ndarray]] = {}

    def log(self, step: int, values: Mapping[str, float]) -> None:
        self.records.extend((int(step), str(k), float(v)) for k, v in dict(values).items())

    def save_array(self, name: str, step: int, array: NDArray[Any]) -> None:
        self.arrays.setdefault(name, {})[int(step)] = np.asarray(array)

    def flush(self) -> None:
        return None


class _OnSteps:
    """Runs a probe only at the given steps (the Recorder's schedule is their union).

    The kernel probe runs at multiples of ``kernel_every`` and the NC probes at multiples of
    ``record_every`` (both also at the last epoch); the Recorder fires at the union of the
    two, and each probe returns nothing at the other one's steps.
    """

    def __init__(self, probe: Probe, steps: frozenset[int]) -> None:
        self.probe, self.name, self.steps = probe, probe.name, steps

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        if inp.step not in self.steps:
            return ProbeOutput()
        return self.probe(inp)


def _grid(every: int, last: int) -> frozenset[int]:
    """The multiples of ``every`` in ``[0, last]`` and ``last`` itself."""
    return frozenset(range(0, last + 1, every)) | {last}


class _Timed:
    """Wraps a probe and accumulates its wall time."""

    def __init__(self, probe: Probe) -> None:
        self.probe, self.name, self.seconds = probe, probe.name, 0.0

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        t0 = time.perf_counter()
        out = self.probe(inp)
        self.seconds += time.perf_counter() - t0
        return out


def _full_kernels(model: torch.nn.Module, x: torch.Tensor) -> dict[str, NDArray[np.float64]]:
    """Full logit and feature kernels (N, N, O, O) for Figure 1 panes a-d."""
    out = {}
    for o in ("logits", "features"):
        K = empirical_ntk(model, x, output=o, mode="full").detach().cpu().double().numpy()
        out[f"traced_{o}"] = np.einsum("ijaa->ij", K)
        out[f"block_norms_{o}"] = block_norms(K)
    return out


def train_one(
    cfg_dict: dict[str, Any], init: str, lr: float, seed: int, full_kernels: bool = False
) -> dict[str, Any]:
    """Train one network and return its records (module-level: runs in a worker).

    Parameters
    ----------
    cfg_dict : dict
        ``dataclasses.asdict`` of a :class:`TrainConfig` (plain data for the worker).
    init : str
        Init scheme of the model.
    lr : float
        Learning rate.
    seed : int
        Seeds the model's init and the batch order.
    full_kernels : bool, default=False
        Also compute the full logit and feature kernels at the end (Figure 1).

    Returns
    -------
    dict
        ``init``, ``lr``, ``seed``; ``records`` (step, name, value) and ``arrays``
        (name -> step -> array) of the Recorder; ``train_accuracy`` per epoch; ``diverged``
        (the error message, or ""); wall times ``seconds_total``, ``seconds_kernel``,
        ``seconds_probes``; with ``full_kernels``, ``full_kernels`` and ``kernel_labels``.
    """
    cfg = TrainConfig(**cfg_dict)
    torch.set_num_threads(1)
    ds = _load(cfg)
    gen = torch.Generator().manual_seed(seed)
    model = build_model(cfg, ds, init, gen)
    probe_idx = class_ordered_subset(ds.y_train, cfg.probe_per_class, ds.num_classes)
    record_steps = _grid(cfg.record_every, cfg.epochs)
    kernel_steps = _grid(cfg.kernel_every, cfg.epochs)
    kernel_probe = _Timed(
        _OnSteps(
            InvariantProbe(per_class=cfg.kernel_per_class, estimator=cfg.kernel_estimator),
            kernel_steps,
        )
    )
    probes = [
        _Timed(_OnSteps(make_probe("collapse"), record_steps)),
        _Timed(_OnSteps(make_probe("performance"), record_steps)),
        # class means feed the logit theories in `ncdyn compare`
        _Timed(_OnSteps(make_probe("class_means"), record_steps)),
        kernel_probe,
    ]
    sink = _MemorySink()
    schedule = Schedule(steps=tuple(sorted(record_steps | kernel_steps)))
    rec = Recorder(
        sink,
        ds.x_train[probe_idx],
        ds.y_train[probe_idx],
        probes=probes,
        schedule=schedule,
        num_classes=ds.num_classes,
    )
    milestones = tuple(sorted({int(round(f * cfg.epochs)) for f in cfg.lr_drops} - {0}))
    t0 = time.perf_counter()
    try:
        result = train(
            model,
            ds,
            epochs=cfg.epochs,
            loss=cfg.loss,
            lr=lr,
            momentum=cfg.momentum,
            nesterov=cfg.nesterov,
            weight_decay=cfg.weight_decay,
            milestones=milestones,
            per_class=cfg.per_class,
            seed=seed,
            recorder=rec,
            progress=False,
        )
        train_acc, diverged = np.array(result.history["train/accuracy"]), ""
    except FloatingPointError as exc:  # a diverged run is a result of the sweep, not an error
        train_acc, diverged = np.array([np.nan]), str(exc)
    total = time.perf_counter() - t0
    out: dict[str, Any] = {
        "init": init,
        "lr": lr,
        "seed": seed,
        "records": sink.records,
        "arrays": sink.arrays,
        "train_accuracy": train_acc,
        "diverged": diverged,
        "seconds_total": total,
        "seconds_kernel": kernel_probe.seconds,
        "seconds_probes": sum(p.seconds for p in probes),
    }
    if full_kernels and not diverged:
        kidx = class_ordered_subset(ds.y_train, cfg.kernel_per_class, ds.num_classes)
        model.eval()
        device = next(model.parameters()).device  # the run's device, where it trained
        x_kernel = torch.as_tensor(ds.x_train[kidx], device=device)
        out["full_kernels"] = _full_kernels(model, x_kernel)
        out["kernel_labels"] = ds.y_train[kidx]
    return out


# ---------------------------------------------------------------- the parent's side
#: Final values reported per run by Figs. 1, 2 and 12.
FINAL_KEYS = (
    "nc/nc1_std",
    "nc/nc2_etf",
    "nc/nc3",
    "test/accuracy",
    "train/accuracy",
    "invariant_norm",
    "invariant_alignment",
    "ntk_alignment_features",
    "ntk_alignment_logits",
    "h1_norm",
    "h2_norm",
    "global_mean_norm",
    "alpha",
    "ntk_kappa_d",
    "ntk_kappa_c",
    "ntk_kappa_n",
)


def _frame(result: dict[str, Any]) -> pd.DataFrame:
    df = pd.DataFrame(result["records"], columns=["step", "name", "value"])
    df = df.drop_duplicates(["step", "name"], keep="last")
    return df.pivot(index="step", columns="name", values="value").sort_index()


def write_records(run: RunWriter, result: dict[str, Any], prefix: str) -> pd.DataFrame:
    """Write one worker's records into the run under ``prefix``; return its wide frame.

    Non-finite values (e.g. the CDNV of coinciding class means at initialisation, kernel
    values of dead features) are not written; their names are listed in
    ``result["nonfinite"]`` for the summary (the one key this adds to ``result``).
    """
    bad = set()
    for step, name, value in result["records"]:
        if np.isfinite(value):
            run.log(step, {f"{prefix}{name}": value})
        else:
            bad.add(name)
    result["nonfinite"] = sorted(bad)
    for name, series in result["arrays"].items():
        for step, arr in series.items():
            run.save_array(f"{prefix}{name}".replace("/", "."), step, arr)
    run.flush()
    return _frame(result)


def final_values(frame: pd.DataFrame) -> dict[str, float]:
    """The last non-NaN value of each of :data:`FINAL_KEYS` in a run's wide frame (NaN if none)."""
    out = {}
    for k in FINAL_KEYS:
        col = frame[k].dropna() if k in frame.columns else pd.Series(dtype=float)
        out[k] = float(col.iloc[-1]) if len(col) else float("nan")
    return out
