"""The invariant of the block-structured NTK flow, measured on a real network.

Implements the measurement of the invariant E of [1], eq. (26), as the paper's code computes
it (docs/theories/ntk_collapse.md, Conventions). On a class-balanced sample with m samples
per class, features ``h_i`` (rows of ``features``), class means ``<h>_c``, global mean
``<h>``, classifier ``W`` and feature-kernel block values ``(kappa_d, kappa_c, kappa_n)``::

    mu_s = kappa_d - kappa_c,   mu_c = mu_s + m (kappa_c - kappa_n),
    alpha = kappa_n / (mu_s / m + kappa_c + (C - 1) kappa_n),
    S_W = sum_c sum_i (h_i^c - <h>_c)(h_i^c - <h>_c)^T          (= m H2 H2^T)
    LHS = W^T W
    RHS = (m / mu_c) H1 H1^T + S_W / mu_s - (alpha C^2 m / mu_c) <h><h>^T

- ``invariant_norm = ||LHS - RHS||_F`` (equals ``m ||E||_F``);
- ``invariant_alignment = <LHS, RHS>_F / (||LHS||_F ||RHS||_F)``, eq. (28) of [1] with ``+`` on
  the H2 term (the paper prints ``-``; its code uses ``+``);
- ``h1_norm = ||H1 H1^T||_F``, ``h2_norm = ||S_W||_F`` (= m ||H2 H2^T||_F, the code's
  convention), ``global_mean_norm = ||<h>||^2``.

The Recorder probe ``ntk_invariant`` computes the output-diagonal blocks of the feature kernel
(and of the logit kernel) on a fixed class-ordered subset of the probe set (``per_class``
samples of every class), their block values and label alignment, and the invariant metrics of
the same subset. It saves the Gram matrices so that a theory can recompute E later.

References
----------
.. [1] M. Seleznova, D. Weitzner, R. Giryes, G. Kutyniok, H.-H. Chou. "Neural (Tangent Kernel)
   Collapse". NeurIPS 2023.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike

from .._validation import check_array, check_int, check_labels, check_option, check_scalar
from ._base import ProbeInput, ProbeOutput, register_probe
from ._ntk_output import NamedOutput
from .kernels import ESTIMATORS, kernel_block_stats
from .ntk import Method, empirical_ntk
from .ntk_probes import class_ordered_subset

__all__ = ["InvariantMetrics", "InvariantProbe", "invariant_metrics"]


@dataclass(frozen=True)
class InvariantMetrics:
    """Invariant metrics of [1], eqs. (26), (28) (see the module docstring).

    Attributes
    ----------
    invariant_norm, invariant_alignment : float
    h1_norm, h2_norm, global_mean_norm : float
    alpha, mu_single, mu_class : float
    n_per_class : int
    lhs, rhs : ndarray of shape (n_features, n_features)
    """

    invariant_norm: float
    invariant_alignment: float
    h1_norm: float
    h2_norm: float
    global_mean_norm: float
    alpha: float
    mu_single: float
    mu_class: float
    n_per_class: int
    lhs: np.ndarray
    rhs: np.ndarray

    def scalars(self) -> dict[str, float]:
        """The scalar fields as a dict (for the metrics table)."""
        keys = (
            "invariant_norm",
            "invariant_alignment",
            "h1_norm",
            "h2_norm",
            "global_mean_norm",
            "alpha",
            "mu_single",
            "mu_class",
        )
        return {k: float(getattr(self, k)) for k in keys}


def invariant_metrics(
    features: ArrayLike,
    labels: ArrayLike,
    weight: ArrayLike,
    kappas: ArrayLike,
    *,
    num_classes: int | None = None,
) -> InvariantMetrics:
    """Invariant norm and alignment of [1], eqs. (26), (28), as the paper's code computes them.

    Parameters
    ----------
    features : array_like of shape (n_samples, n_features)
    labels : array_like of shape (n_samples,)
        Every class must have the same count m >= 2 (a class-balanced sample).
    weight : array_like of shape (num_classes, n_features)
        Classifier weights W.
    kappas : array_like of shape (3,)
        Feature-kernel block values ``(kappa_d, kappa_c, kappa_n)`` with ``kappa_d > kappa_c``.
    num_classes : int, optional
        Defaults to the rows of ``weight``.

    Returns
    -------
    InvariantMetrics
    """
    H = check_array(features, "features", ndim=2, dtype=np.float64)
    W = check_array(weight, "weight", ndim=2, dtype=np.float64)
    C = W.shape[0] if num_classes is None else check_int(num_classes, "num_classes", low=2)
    if W.shape != (C, H.shape[1]):
        raise ValueError(f"`weight` must have shape ({C}, {H.shape[1]}); got {W.shape}.")
    y = check_labels(labels, "labels", n_samples=H.shape[0], num_classes=C, min_per_class=2)
    counts = np.bincount(y, minlength=C)
    if np.any(counts != counts[0]):
        raise ValueError(
            f"`labels` must have the same count in every class; got {counts.tolist()}."
        )
    m = int(counts[0])
    k = check_array(kappas, "kappas", shape=(3,), dtype=np.float64)
    kd, kc, kn = (float(v) for v in k)
    mu_s = check_scalar(kd - kc, "kappa_d - kappa_c", low=0.0, closed="neither")
    mu_c = mu_s + m * (kc - kn)
    alpha = kn / (mu_s / m + kc + (C - 1) * kn)
    onehot = np.eye(C)[y]  # (N, C)
    means = onehot.T @ H / m  # (C, n) class means
    g = means.mean(axis=0)  # (n,) global mean (balanced)
    dev = H - means[y]  # (N, n)
    S_W = dev.T @ dev  # (n, n)
    H1H1 = means.T @ means  # (n, n)
    lhs = W.T @ W
    rhs = (m / mu_c) * H1H1 + S_W / mu_s - (alpha * C**2 * m / mu_c) * np.outer(g, g)
    denom = np.linalg.norm(lhs) * np.linalg.norm(rhs)
    align = float(np.sum(lhs * rhs) / denom) if denom > 0 else float("nan")
    return InvariantMetrics(
        invariant_norm=float(np.linalg.norm(lhs - rhs)),
        invariant_alignment=align,
        h1_norm=float(np.linalg.norm(H1H1)),
        h2_norm=float(np.linalg.norm(S_W)),
        global_mean_norm=float(g @ g),
        alpha=float(alpha),
        mu_single=float(mu_s),
        mu_class=float(mu_c),
        n_per_class=m,
        lhs=lhs,
        rhs=rhs,
    )


class InvariantProbe:
    """Recorder probe ``ntk_invariant``: kernel block values, alignments and the invariant.

    Scalars: ``ntk_kappa_d/_c/_n``, ``ntk_alignment_features``, (with ``logits``)
    ``ntk_gamma_d/_c/_n``, ``ntk_alignment_logits``, and ``invariant_norm``,
    ``invariant_alignment``, ``h1_norm``, ``h2_norm``, ``global_mean_norm``, ``alpha``,
    ``mu_single``, ``mu_class``. Arrays: ``ntk_traced_features`` (N, N), ``ntk_traced_logits``,
    ``ntk_labels`` (N,), and with ``save_grams`` ``invariant_gram_w`` (n, n) ``W^T W``,
    ``invariant_class_means`` (C, n), ``invariant_within_scatter`` (n, n) ``S_W``,
    ``invariant_kappas`` (3,).

    Parameters
    ----------
    per_class : int, default=12
        Samples per class of the class-ordered subset (m of the theory).
    logits : bool, default=True
        Also compute the logit kernel's diagonal blocks (gamma values, logit alignment).
    estimator : {"exact", "half-split"}, default="exact"
        Block-value estimator of :func:`ncdynamics.probes.kernels.kernel_block_stats`.
    save_grams : bool, default=True
    method, memory_budget
        Passed to :func:`ncdynamics.probes.empirical_ntk`.
    """

    name = "ntk_invariant"

    def __init__(
        self,
        *,
        per_class: int = 12,
        logits: bool = True,
        estimator: str = "exact",
        save_grams: bool = True,
        method: str = "auto",
        memory_budget: int | None = None,
    ) -> None:
        self.per_class = check_int(per_class, "per_class", low=2)
        self.logits = bool(logits)
        self.estimator = check_option(estimator, "estimator", ESTIMATORS)
        self.save_grams = bool(save_grams)
        self.method = check_option(method, "method", [m.value for m in Method])
        self.memory_budget = memory_budget

    def _kernel(self, inp: ProbeInput, x: torch.Tensor, output: NamedOutput) -> np.ndarray:
        k = empirical_ntk(
            inp.model,
            x,
            output=output,
            mode="diagonal",
            method=self.method,
            memory_budget=self.memory_budget,
        )
        return k.detach().cpu().double().numpy()  # (O, N, N)

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        import torch

        y_all = inp.y.detach().cpu().numpy() if hasattr(inp.y, "detach") else np.asarray(inp.y)
        idx = class_ordered_subset(y_all, self.per_class, inp.num_classes)
        x = inp.x[torch.as_tensor(idx, device=inp.x.device)]
        y = y_all[idx]
        out = ProbeOutput(arrays={"ntk_labels": y.astype(np.int64)})
        K_h = self._kernel(inp, x, "features")
        if _degenerate(K_h):  # dead or sample-independent features: values undefined
            out.scalars.update(
                {
                    k: float("nan")
                    for k in (
                        "ntk_kappa_d",
                        "ntk_kappa_c",
                        "ntk_kappa_n",
                        "ntk_alignment_features",
                        "invariant_norm",
                    )
                }
            )
            return out
        st_h = kernel_block_stats(K_h, y, estimator=self.estimator)
        kap = st_h.values
        out.scalars.update(
            {
                "ntk_kappa_d": kap.diagonal,
                "ntk_kappa_c": kap.same_class,
                "ntk_kappa_n": kap.different_class,
                "ntk_alignment_features": st_h.alignment,
            }
        )
        out.arrays["ntk_traced_features"] = st_h.traced
        if self.logits and not _degenerate(K_f := self._kernel(inp, x, "logits")):
            st_f = kernel_block_stats(K_f, y, estimator=self.estimator)
            out.scalars.update(
                {
                    "ntk_gamma_d": st_f.values.diagonal,
                    "ntk_gamma_c": st_f.values.same_class,
                    "ntk_gamma_n": st_f.values.different_class,
                    "ntk_alignment_logits": st_f.alignment,
                }
            )
            out.arrays["ntk_traced_logits"] = st_f.traced
        if inp.classifier is None:
            return out
        feats = inp.features.detach().cpu().double().numpy()[idx]  # (N, n)
        W = inp.classifier.weight.detach().cpu().double().numpy()  # (C, n)
        kappas = np.array([kap.diagonal, kap.same_class, kap.different_class])
        if not kap.diagonal > kap.same_class:
            out.scalars["invariant_norm"] = float("nan")
            return out
        met = invariant_metrics(feats, y, W, kappas, num_classes=inp.num_classes)
        out.scalars.update(met.scalars())
        if self.save_grams:
            means = np.stack([feats[y == c].mean(axis=0) for c in range(inp.num_classes)])
            dev = feats - means[y]
            out.arrays.update(
                {
                    "invariant_gram_w": met.lhs,
                    "invariant_class_means": means,
                    "invariant_within_scatter": dev.T @ dev,
                    "invariant_kappas": kappas,
                }
            )
        return out


def _degenerate(K: np.ndarray) -> bool:
    """True when the traced kernel is zero after centring (its alignment is undefined)."""
    T = K.sum(axis=0)  # (N, N)
    Tc = T - T.mean(axis=0) - T.mean(axis=1, keepdims=True) + T.mean()
    return bool(np.linalg.norm(Tc) <= 1e-12 * max(float(np.linalg.norm(T)), 1e-300))


@register_probe("ntk_invariant")
def _make_invariant_probe(**options: Any) -> InvariantProbe:
    return InvariantProbe(**options)
