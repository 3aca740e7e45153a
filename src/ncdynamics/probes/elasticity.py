"""Direct measurement of local elasticity: the effect of one SGD step on every probe sample.

For a source sample z_j with label y_j, take one plain SGD step of size ``lr`` on the
cross-entropy of z_j alone, starting from a frozen copy of the model, and record how the
logits (or features) of every probe sample z_i move, per unit step:

    impact[j, i] = (f(z_i; w - lr * grad l(z_j)) - f(z_i; w)) / lr   # (n_src, n_probe, d)

The caller's model is never modified. The scalar impact of source j on probe i is
|impact[j, i]|; local elasticity (He & Su, ICLR 2020; Zhang, Wang & Su, NeurIPS 2021) means
the same-class mean of it exceeds the other-class mean, i.e. ``ratio`` > 1. The full
``impacts`` array feeds the direct drift-matrix estimate of the LE-SDE
(``ncdynamics.theories.lesde.estimate.drift_from_impacts``).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Literal

import numpy as np
import torch
import torch.nn.functional as F
from numpy.typing import ArrayLike, NDArray

from .._validation import check_int, check_labels, check_option, check_scalar
from ._base import FeatureFn, ProbeInput, ProbeOutput, register_probe

__all__ = ["ElasticityProbe", "ElasticityResult", "measure_elasticity"]

TARGETS = ("logits", "features")


@dataclass(frozen=True)
class ElasticityResult:
    """Impacts of single SGD steps.

    Attributes
    ----------
    impacts : ndarray of shape (n_sources, n_probe, d)
        Change of the probe outputs per unit step size.
    sources : ndarray of shape (n_sources,)
        Indices (into the probe set) of the source samples.
    outputs : ndarray of shape (n_probe, d)
        Probe outputs before the step (logits or features).
    magnitude : ndarray of shape (n_sources, n_probe)
        |impacts| along the last axis: the impact matrix.
    same_class, other_class : float
        Means of ``magnitude`` over pairs with equal / different labels (the source itself
        excluded).
    ratio : float
        same_class / other_class.
    """

    impacts: NDArray[np.float64]
    sources: NDArray[np.int64]
    outputs: NDArray[np.float64]
    magnitude: NDArray[np.float64]
    same_class: float
    other_class: float
    ratio: float


def _default_fn(model: torch.nn.Module, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    features = getattr(model, "features", None)
    classifier = getattr(model, "classifier", None)
    if features is not None and classifier is not None:
        h = features(x)
        return h.flatten(1), classifier(h)
    out = model(x)
    return out, out


def choose_sources(
    y: ArrayLike, n_per_class: int, *, generator: np.random.Generator, num_classes: int
) -> NDArray[np.int64]:
    """``n_per_class`` random indices of every class (fewer where a class is smaller)."""
    y = np.asarray(y)
    picks = []
    for c in range(num_classes):
        idx = np.flatnonzero(y == c)
        picks.append(generator.choice(idx, min(n_per_class, idx.size), replace=False))
    return np.sort(np.concatenate(picks)).astype(np.int64)


def measure_elasticity(
    model: torch.nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    *,
    lr: float = 0.005,
    sources: ArrayLike | None = None,
    n_sources_per_class: int = 5,
    target: Literal["logits", "features"] = "logits",
    feature_fn: FeatureFn | None = None,
    num_classes: int | None = None,
    seed: int = 0,
) -> ElasticityResult:
    """Measure the impact of one SGD step on each source on every probe sample.

    Parameters
    ----------
    model : torch.nn.Module
        Left untouched: the steps are taken on a deep copy.
    x : tensor of shape (n_probe, *input_shape)
    y : tensor of shape (n_probe,), int64
    lr : float
        Step size of the single SGD step (the impacts are divided by it).
    sources : array of int, optional
        Indices into the probe set; default ``n_sources_per_class`` random ones per class.
    target : {"logits", "features"}
    feature_fn : callable, optional
        ``feature_fn(model, x) -> (features, logits)``; default ``model.features`` and
        ``model.classifier``, or the model output for both.
    seed : int
        Seeds the choice of sources.
    """
    lr = check_scalar(lr, "lr", low=0.0, closed="neither")
    check_option(target, "target", TARGETS)
    y_np = check_labels(
        np.asarray(y.detach().cpu() if torch.is_tensor(y) else y), "y", n_samples=len(x)
    )
    k = int(num_classes) if num_classes is not None else int(y_np.max()) + 1
    src = _source_indices(sources, y_np, n_sources_per_class, k, seed, len(x))
    fn = feature_fn or _default_fn
    pick = 1 if target == "logits" else 0
    imp, base = _step_impacts(model, x, y_np, src, lr, fn, pick)
    mag = np.linalg.norm(imp, axis=2)
    same_mean, other_mean, ratio = _class_impacts(mag, y_np, src)
    return ElasticityResult(
        imp, src, base.double().cpu().numpy(), mag, same_mean, other_mean, float(ratio)
    )


def _source_indices(
    sources: ArrayLike | None,
    y_np: NDArray[np.int64],
    n_sources_per_class: int,
    k: int,
    seed: int,
    n_probe: int,
) -> NDArray[np.int64]:
    """The given source indices, checked against ``n_probe``, or ``n_sources_per_class``
    random ones per class of ``k`` (seeded by ``seed``)."""
    if sources is None:
        n_sources_per_class = check_int(n_sources_per_class, "n_sources_per_class", low=1)
        sources = choose_sources(
            y_np, n_sources_per_class, generator=np.random.default_rng(seed), num_classes=k
        )
    src = np.asarray(sources, dtype=np.int64)
    if src.ndim != 1 or src.size == 0 or src.min() < 0 or src.max() >= n_probe:
        raise ValueError(
            f"`sources` must be indices into the {n_probe} probe samples; got shape {src.shape}."
        )
    return src


def _step_impacts(
    model: torch.nn.Module,
    x: torch.Tensor,
    y_np: NDArray[np.int64],
    src: NDArray[np.int64],
    lr: float,
    fn: FeatureFn,
    pick: int,
) -> tuple[NDArray[np.float64], torch.Tensor]:
    """On a copy of ``model``: for each source, one SGD step of size ``lr`` on its
    cross-entropy, the change of output ``pick`` (0 features, 1 logits) on every probe
    sample over ``lr``, then the parameters restored. Returns the impacts
    ``(n_sources, n_probe, d)`` and the outputs before any step."""
    net = copy.deepcopy(model)
    params = [p for p in net.parameters() if p.requires_grad]
    saved = [p.detach().clone() for p in params]
    with torch.no_grad():
        base = fn(net, x)[pick].detach()  # (n_probe, d)
    y_t = torch.as_tensor(y_np, device=base.device)  # beside the logits (the model's device)
    impacts = []
    for j in src:
        net.zero_grad(set_to_none=True)
        logits = fn(net, x[j : j + 1])[1]
        grads = torch.autograd.grad(F.cross_entropy(logits, y_t[j : j + 1]), params)
        with torch.no_grad():
            for p, g in zip(params, grads, strict=True):
                p.sub_(lr * g)
            after = fn(net, x)[pick]
            impacts.append(((after - base) / lr).double().cpu().numpy())
            for p, s in zip(params, saved, strict=True):
                p.copy_(s)
    return np.stack(impacts), base  # (n_sources, n_probe, d)


def _class_impacts(
    mag: NDArray[np.float64], y_np: NDArray[np.int64], src: NDArray[np.int64]
) -> tuple[float, float, float]:
    """Mean impact magnitude on other samples of the source's class, on samples of other
    classes, and their ratio (NaN where a group is empty or the second mean is 0)."""
    same = y_np[src][:, None] == y_np[None, :]
    self_pair = src[:, None] == np.arange(mag.shape[1])[None, :]
    same_mean = float(mag[same & ~self_pair].mean()) if (same & ~self_pair).any() else np.nan
    other_mean = float(mag[~same].mean()) if (~same).any() else np.nan
    ratio = same_mean / other_mean if other_mean and np.isfinite(other_mean) else np.nan
    return same_mean, other_mean, ratio


@register_probe("elasticity")
class ElasticityProbe:
    """Recorder probe: local elasticity of the model on the probe set.

    Scalars ``elasticity/same``, ``elasticity/other``, ``elasticity/ratio``; arrays
    ``impacts`` (n_sources, n_probe, d), ``sources`` and ``outputs``.

    Parameters
    ----------
    lr : float
        Step size of the single SGD step.
    n_sources_per_class : int
    target : {"logits", "features"}
    seed : int
        The same sources are used at every record.
    """

    name = "elasticity"

    def __init__(
        self,
        *,
        lr: float = 0.005,
        n_sources_per_class: int = 5,
        target: Literal["logits", "features"] = "logits",
        seed: int = 0,
    ) -> None:
        self.lr = check_scalar(lr, "lr", low=0.0, closed="neither")
        self.n_sources_per_class = check_int(n_sources_per_class, "n_sources_per_class", low=1)
        self.target = check_option(target, "target", TARGETS)
        self.seed = int(seed)

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        res = measure_elasticity(
            inp.model,
            inp.x,
            inp.y,
            lr=self.lr,
            n_sources_per_class=self.n_sources_per_class,
            target=self.target,
            feature_fn=inp.feature_fn,
            num_classes=inp.num_classes,
            seed=self.seed,
        )
        return ProbeOutput(
            scalars={
                "elasticity/same": res.same_class,
                "elasticity/other": res.other_class,
                "elasticity/ratio": res.ratio,
            },
            arrays={
                "impacts": res.impacts.astype(np.float32),
                "sources": res.sources,
                "outputs": res.outputs.astype(np.float32),
            },
        )
