"""The ``demo`` experiment: an MLP on scikit-learn's digits, MSE against cross-entropy.

Trains the same network twice from the same initialisation, once per loss, recording the
collapse metrics of a fixed class-balanced subset of the training set (``probe_per_class``
samples of each digit) at every epoch, with the class means of features and logits and the
pair observables of two probe points (what ``ncdyn compare`` and ``ncdyn forecast`` fit).
Metric names carry the loss as a prefix (``mse/nc/nc1``, ``cross-entropy/nc/nc1``).

The config also states each stream's own settings under ``streams`` (``streams["mse"]
["loss"] == "mse"``, with the learning rate, its milestones, the initialisation, batch size,
momentum and weight decay), which the theories' regime checks read
(:meth:`ncdynamics.theories.confrontation.Stream.setting`), and under ``not_recorded`` why the
demo does not record what the ``ntk_collapse`` confrontation needs: the ``ntk_invariant`` probe
computes an empirical NTK at every record (about 1.2 s per record against 0.02 s for the
demo's other probes together, measured on the 120-sample class subset of the cpu preset's
MLP), which would stretch the half-minute demo to minutes; ``ncdyn run ntk_collapse.fig2``
records it.

Both demo trainings are outside every theory's regime (momentum, weight decay, learning-rate
drops, K = 10), which ``ncdyn compare`` says. So that a newcomer also sees a verdict that could
have passed, the demo records one stretch *inside* a regime (``in_regime``: on in the ``cpu``
and ``paper`` presets, off in ``smoke``, which stays a few seconds for sweeps and tests): a
2 x 32 leaky-ReLU net trained by plain full-batch gradient descent at a constant rate on the
squared error of the two points of the alignment paper (its own training loop,
:func:`ncdynamics.theories.alignment.training.train_recording`), its pair observables every
10 epochs under the prefix ``two-point/``, with those settings stated under
``streams["two-point"]``. About 1.5 s.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch

from .. import data as nc_data
from .._validation import check_int, check_option, check_scalar
from ..models import MLP
from ..models.init import INIT_SCHEMES
from ..probes import PairAlignmentProbe, PerformanceProbe
from ..probes.performance import LOSSES
from ..theories.experiment import ExperimentSpec, RunWriter
from ..theories.regime import PLAIN_GD_SETTINGS
from ..training import Recorder, train

__all__ = ["DemoConfig", "EXPERIMENTS", "run_demo"]

_NOT_RECORDED = {
    "ntk_collapse": "the demo does not run the ntk_invariant probe (an empirical NTK at every "
    "record, ~50x the cost of its other probes); `ncdyn run ntk_collapse.fig2` records it",
}


def _plain(value: Any) -> Any:
    """``value`` with tuples as lists (as it reads back from ``config.json``)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@dataclass(frozen=True)
class DemoConfig:
    """Settings of the demo (defaults are the ``cpu`` preset)."""

    dataset: str = "digits"
    losses: tuple[Literal["mse", "cross-entropy"], ...] = ("mse", "cross-entropy")
    depth: int = 3
    width: int = 256
    init: str = "pytorch-default"
    epochs: int = 200
    lr: float = 0.05
    momentum: float = 0.9
    weight_decay: float = 5e-4
    milestones: tuple[int, ...] = (100, 150)
    batch_size: int = 64
    record_every: int = 1
    probe_per_class: int = 30
    test_every: int = 5
    checkpoint_every: int = 20
    #: Also record the stretch inside the alignment theory's regime (module docstring).
    in_regime: bool = True
    #: Derived, not an option: each stream's settings (module docstring).
    streams: dict[str, dict[str, Any]] | None = None
    #: Derived, not an option: theory -> why the demo does not record what it needs.
    not_recorded: dict[str, str] | None = None

    def _stream_settings(self) -> dict[str, dict[str, Any]]:
        shared = {
            "lr": self.lr,
            "lr_schedule": "piecewise constant" if self.milestones else "constant",
            "milestones": list(self.milestones),
            "init": self.init,
            "batch_size": self.batch_size,
            "momentum": self.momentum,
            "weight_decay": self.weight_decay,
            "optimizer": "sgd",
        }
        out: dict[str, dict[str, Any]] = {loss: {"loss": loss, **shared} for loss in self.losses}
        if self.in_regime:
            out[IN_REGIME_PREFIX] = dict(IN_REGIME_SETTINGS)
        return out

    def __post_init__(self) -> None:
        """Refuse a bad value here, when the config is built: before any run directory is
        created, so a bad ``--set`` leaves nothing behind."""
        self._check()
        derived = {"streams": self._stream_settings(), "not_recorded": dict(_NOT_RECORDED)}
        for name, value in derived.items():
            given = getattr(self, name)
            if given is not None and _plain(given) != _plain(value):
                raise ValueError(
                    f"option `{name}` is derived from the other options and cannot be set; "
                    f"got {given!r}."
                )
            object.__setattr__(self, name, value)

    def _check(self) -> None:
        check_option(self.dataset, "dataset", nc_data.available())
        if not self.losses:
            raise ValueError(f"option `losses` must name at least one of {LOSSES}; got none.")
        for loss in self.losses:
            check_option(loss, "losses", LOSSES)
        if len(set(self.losses)) != len(self.losses):
            raise ValueError(f"option `losses` must not repeat a loss; got {self.losses!r}.")
        # the collapse probes read the features of the last hidden layer: one at least
        check_int(self.depth, "depth", low=1)
        check_int(self.width, "width", low=1)
        check_option(self.init, "init", INIT_SCHEMES)
        check_int(self.epochs, "epochs", low=1)
        check_scalar(self.lr, "lr", low=0.0, closed="neither")
        check_scalar(self.momentum, "momentum", low=0.0, high=1.0, closed="left")
        check_scalar(self.weight_decay, "weight_decay", low=0.0)
        for m in self.milestones:
            check_int(m, "milestones", low=1)
        if list(self.milestones) != sorted(set(self.milestones)):
            raise ValueError(
                f"option `milestones` must be increasing epochs; got {self.milestones!r}."
            )
        for name in (
            "batch_size",
            "record_every",
            "probe_per_class",
            "test_every",
            "checkpoint_every",
        ):
            check_int(getattr(self, name), name, low=1)


#: The stream recorded inside the alignment theory's regime, and its settings.
IN_REGIME_PREFIX = "two-point"
IN_REGIME_SETTINGS: dict[str, Any] = {
    "loss": "mse",
    **PLAIN_GD_SETTINGS,
    "lr": 0.02,
    "lr_schedule": "constant",
    "milestones": [],  # stated: the demo's own milestones must not be read as this stream's
    "batch_size": 2,
    "epochs": 1200,
    "width": 32,
    "depth": 2,
    "gain": 0.5,
    "layer": 1,
    "record_every": 10,
}


def _record_in_regime(run: RunWriter, seed: int) -> None:
    """The two-point stretch inside the alignment regime (module docstring); skipped when a
    resumed run has it already."""
    if f"{IN_REGIME_PREFIX}/pair_a" in run.metrics_wide().columns:
        return
    from ..theories.alignment.training import NetConfig, train_recording

    cfg = IN_REGIME_SETTINGS
    net = NetConfig(
        gain=cfg["gain"], lr=cfg["lr"], epochs=cfg["epochs"], width=cfg["width"], depth=2
    )
    ds = nc_data.load("two-point", y1=-0.5)  # centred targets: no output-mean transient
    # the in-regime reference case of tests/theories/test_alignment_confront_calibration.py
    h = train_recording(
        net, ds.x_train, ds.info["targets_train"], seed=seed, loss="mse", layer=cfg["layer"]
    )
    for k in range(0, h.epochs.size, cfg["record_every"]):
        values = {"pair_a": h.a[k], "pair_b": h.b[k], "pair_w": h.w[k], "pair_X": h.X}
        values["pair_Y"] = h.Y
        run.log(int(h.epochs[k]), {f"{IN_REGIME_PREFIX}/{n}": float(v) for n, v in values.items()})
    run.flush()


def _last(wide: Any, column: str) -> float:
    """The last recorded value of ``column`` (NaN when it has none)."""
    if column not in wide.columns:
        return float("nan")
    values = wide[column].dropna()
    return float(values.iloc[-1]) if len(values) else float("nan")


def run_demo(config: DemoConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    ds = nc_data.load(config.dataset)
    probe = nc_data.balanced_subset(ds.y_train, config.probe_per_class, np.random.default_rng(seed))
    in_features = int(torch.tensor(ds.x_train.shape[1:]).prod())
    y_probe = ds.y_train[probe]
    # two points of different classes (Y = 2): the pair the two-point theory is about
    pair_idx = (int(np.flatnonzero(y_probe == 0)[0]), int(np.flatnonzero(y_probe == 1)[0]))
    summary: dict[str, dict[str, float]] = {}
    for loss in config.losses:
        gen = torch.Generator().manual_seed(seed)
        model = MLP(
            in_features,
            ds.num_classes,
            depth=config.depth,
            width=config.width,
            init=config.init,
            generator=gen,
        )
        pair = PairAlignmentProbe(pair=pair_idx)
        rec = Recorder(
            run,
            ds.x_train[probe],
            ds.y_train[probe],
            probes=["collapse", PerformanceProbe(loss=loss), "class_means", pair],
            schedule=config.record_every,
            num_classes=ds.num_classes,
            prefix=f"{loss}/",
        )
        result = train(
            model,
            ds,
            epochs=config.epochs,
            loss=loss,
            lr=config.lr,
            momentum=config.momentum,
            weight_decay=config.weight_decay,
            milestones=config.milestones,
            batch_size=config.batch_size,
            seed=seed,
            recorder=rec,
            store=run,
            tag=loss,
            checkpoint_every=config.checkpoint_every,
            test_every=config.test_every,
            progress=progress,
            desc=f"demo [{loss}]",
        )
        rec.close()
        final = run.metrics_wide()
        keys = ("nc/nc1", "nc/nc2_etf", "nc/nc3", "nc/nc4", "probe/accuracy", "test/accuracy")
        # each metric's own last record: other streams (the two-point stretch) log other steps
        summary[loss] = {k: _last(final, f"{loss}/{k}") for k in keys}
        summary[loss]["epochs"] = result.epochs
    if config.in_regime:
        _record_in_regime(run, seed)
    run.save_summary({"table": summary})


EXPERIMENTS = (
    ExperimentSpec(
        name="demo",
        theory="core",
        summary="MLP on digits, MSE vs cross-entropy: NC1-NC4 at every epoch",
        config=DemoConfig,
        presets={
            "smoke": {
                "epochs": 3,
                "width": 32,
                "depth": 2,
                "milestones": (),
                "checkpoint_every": 1,
                "in_regime": False,  # seconds: a sweep of smoke demos compares 16 runs
            },
            "cpu": {},
            "paper": {"epochs": 350, "milestones": (117, 233), "width": 512},
        },
        run=run_demo,
        resumable=True,
    ),
)
