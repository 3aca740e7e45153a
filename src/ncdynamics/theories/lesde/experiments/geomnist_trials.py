"""The training recipe that Figures 1, 3, 4 and 5 of [1] share.

R LeNets are trained at once on GEOMNIST (three shape classes) or on the first three
CIFAR-10 classes (airplane, automobile, bird: [1], Sec. 4 and App. D, K = 3) at batch size 1
with plain SGD (:func:`~ncdynamics.theories.lesde.trials.train_trials`). This module holds
the settings every training figure inherits (:class:`TrialsConfig`), loading the data (with
a given label-noise rate on GEOMNIST), training, logging the validation curves and the
class-mean logits (what ``ncdyn compare`` confronts the L-model with), and the
Savitzky--Golay window bound; each figure module adds what it measures on the trials.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np
import torch

from ....data import Dataset, load
from ...experiment import RunWriter
from ..trials import TrialCallback, TrialRecords, train_trials

__all__ = [
    "N_CLASSES",
    "TrialsConfig",
    "load_cifar",
    "load_data",
    "load_geomnist",
    "log_validation",
    "record_class_means",
    "smooth_window",
    "train",
    "train_on",
    "train_worker",
    "trials_settings",
]

N_CLASSES = 3
"""K in [1]: GEOMNIST's three shape classes."""

TrialsSettings = dict[str, Any]
"""The :class:`TrialsConfig` fields of a figure's config, as a plain (picklable) dict."""


DATASETS = ("geomnist", "cifar10")


@dataclass(frozen=True)
class TrialsConfig:
    """Trials shared by the training experiments.

    ``dataset`` is ``"geomnist"`` (generated, offline) or ``"cifar10"`` (its classes 0, 1, 2
    from the python batches under ``root``, fetched and checksummed there when ``download``
    is true: :func:`ncdynamics.data.load`). ``n_train_per_class`` / ``n_test_per_class``
    images of each class are used (all of them, 5,000 / 1,000, in the CIFAR paper preset).
    ``dtype`` is the LeNets' float type: ``"float64"`` as the authors train them
    (zjiayao/le_sde ``src/models.py`` line 49 ``.double()``, ``src/utils.py`` lines 19-28),
    the ``paper`` presets' setting; ``"float32"`` (the default) is faster on CPUs.
    """

    dataset: Literal["geomnist", "cifar10"] = "geomnist"
    root: str | None = None
    download: bool = False
    n_train_per_class: int = 500
    n_test_per_class: int = 500
    image_size: int = 32
    n_trials: int = 20
    n_iter: int = 10_000
    lr: float = 0.005
    eval_every: int = 500
    val_subset: int = 150
    dtype: Literal["float32", "float64"] = "float32"


def trials_settings(config: TrialsConfig) -> TrialsSettings:
    """The :class:`TrialsConfig` fields of ``config`` (a figure's config subclasses it)."""
    return {k: v for k, v in asdict(config).items() if k in TrialsConfig.__dataclass_fields__}


def load_geomnist(cfg: TrialsSettings, p_err: float, seed: int) -> Dataset:
    """GEOMNIST with ``p_err`` of every class's training labels corrupted."""
    return load(
        "geomnist",
        n_train_per_class=cfg["n_train_per_class"],
        n_test_per_class=cfg["n_test_per_class"],
        size=cfg["image_size"],
        seed=seed,
        label_noise=p_err,
    )


def load_cifar(cfg: TrialsSettings, seed: int) -> Dataset:
    """CIFAR-10 classes 0..K-1 (K = :data:`N_CLASSES`), ``n_train_per_class`` training and
    ``n_test_per_class`` test images of each drawn without replacement (seeded), pixels
    mapped from [0, 1] to [-1, 1] ((x - 0.5) / 0.5 per channel, the authors' preprocessing),
    shape (n, 3, 32, 32)."""
    ds = load(
        "cifar10",
        root=cfg["root"],
        download=cfg["download"],
        classes=tuple(range(N_CLASSES)),
    )
    rng = np.random.default_rng(seed)
    parts: list[np.ndarray] = []
    for x, y, key in (
        (ds.x_train, ds.y_train, "n_train_per_class"),
        (ds.x_test, ds.y_test, "n_test_per_class"),
    ):
        want = int(cfg[key])
        picks = []
        for c in range(N_CLASSES):
            have = np.flatnonzero(y == c)
            if have.size < want:
                raise ValueError(
                    f"`{key}` must be at most the {have.size} CIFAR-10 images of class {c} "
                    f"in that split; got {want}."
                )
            picks.append(rng.choice(have, want, replace=False))
        idx = np.sort(np.concatenate(picks))
        parts += [((x[idx] - 0.5) / 0.5).astype(np.float32), y[idx].astype(np.int64)]
    x_train, y_train, x_test, y_test = parts
    return Dataset(x_train, y_train, x_test, y_test, N_CLASSES, "cifar10", dict(ds.info))


def load_data(cfg: TrialsSettings, p_err: float, seed: int) -> Dataset:
    """The trials' data set, ``cfg["dataset"]``; label noise ``p_err`` on GEOMNIST only."""
    if cfg["dataset"] == "geomnist":
        return load_geomnist(cfg, p_err, seed)
    if cfg["dataset"] != "cifar10":
        raise ValueError(f"`dataset` must be one of {DATASETS}; got {cfg['dataset']!r}.")
    if p_err != 0.0:
        raise ValueError(
            f"`p_err` must be 0 on dataset 'cifar10' (label noise is GEOMNIST's); got {p_err}."
        )
    return load_cifar(cfg, seed)


def train_on(
    ds: Dataset,
    cfg: TrialsSettings,
    seed: int,
    callback: TrialCallback | None = None,
    device: str | None = None,
) -> TrialRecords:
    """Train ``cfg["n_trials"]`` LeNets on ``ds``, validating on its test split."""
    return train_trials(
        ds.x_train,
        ds.y_train,
        ds.x_test,
        ds.y_test,
        n_trials=cfg["n_trials"],
        n_iter=cfg["n_iter"],
        seed=seed,
        lr=cfg["lr"],
        eval_every=cfg["eval_every"],
        val_subset=cfg["val_subset"],
        n_classes=N_CLASSES,
        callback=callback,
        device=device,
        dtype=torch.float64 if cfg.get("dtype", "float32") == "float64" else torch.float32,
    )


def train(
    cfg: TrialsSettings,
    p_err: float,
    seed: int,
    callback: TrialCallback | None = None,
    device: str | None = None,
) -> TrialRecords:
    """Load the data set (with label noise ``p_err`` on GEOMNIST) and train the trials on it
    (on ``device``, by default the run's)."""
    return train_on(load_data(cfg, p_err, seed), cfg, seed, callback, device)


def train_worker(cfg: TrialsSettings, p_err: float, seed: int, device: str) -> TrialRecords:
    """:func:`train` in a worker process, with one torch thread, on ``device`` (passed
    explicitly: a worker process does not inherit the run's current device)."""
    torch.set_num_threads(1)
    return train(cfg, p_err, seed, device=device)


def log_validation(run: RunWriter, rec: TrialRecords, prefix: str = "") -> None:
    """Log the trial-mean validation loss and accuracy at every validation iteration."""
    for e, it in enumerate(rec.val_iters):
        run.log(
            int(it),
            {
                f"{prefix}val_loss": float(rec.val_loss[e].mean()),
                f"{prefix}val_acc": float(rec.val_acc[e].mean()),
            },
        )
    run.flush()


#: About this many records of the class-mean logits per trained stream.
N_MEAN_RECORDS = 40
#: Least number of drawn samples (iterations x trials) a record averages over.
MIN_SAMPLES_PER_RECORD = 30


def record_class_means(run: RunWriter, rec: TrialRecords, prefix: str = "") -> int:
    """Save the class-mean logits of the trials as array ``class_means_logits`` (K, K).

    The same name (and prefix rule: ``/`` becomes ``.``) as the ``class_means`` probe of the
    :class:`~ncdynamics.training.Recorder`, so that ``ncdyn compare`` confronts the L-model
    with these runs. Each record is the paper's class mean ([1], Sec. 4.1: the pre-update
    logits of the drawn samples, averaged over the trials by training label) pooled over a
    block of consecutive iterations, about :data:`N_MEAN_RECORDS` blocks of equal width and
    at least :data:`MIN_SAMPLES_PER_RECORD` draws each, stored at the block's middle
    iteration. A block in which some class was never drawn is skipped. Returns the number
    of records written.
    """
    n_iter, n_trials = rec.labels.shape
    k = rec.logits.shape[2]
    width = max(n_iter // N_MEAN_RECORDS, math.ceil(MIN_SAMPLES_PER_RECORD / n_trials), 1)
    name = f"{prefix}class_means_logits".replace("/", ".")
    written = 0
    for start in range(0, n_iter - width + 1, width):
        labels = rec.labels[start : start + width].ravel()
        logits = rec.logits[start : start + width].reshape(-1, k).astype(np.float64)
        counts = np.bincount(labels, minlength=k)
        if np.any(counts == 0):
            continue
        sums = np.zeros((k, k))
        np.add.at(sums, labels, logits)
        run.save_array(name, start + (width - 1) // 2, sums / counts[:, None])
        written += 1
    return written


def smooth_window(window: int, n: int) -> int:
    """The Savitzky--Golay window ``window``, bounded to fit a series of length ``n``."""
    return max(5, min(window, n - 1 if n % 2 == 0 else n))
