"""The theory of [1] applied to a recorded run: block values over time and a prediction of NC.

From the Gram matrices saved by the ``ntk_invariant`` probe at a record (``W^T W``, class
means, within-class scatter ``S_W = m H2 H2^T`` and the kernel values ``kappa``), the theory's
invariant E (26) and the end-of-training invariant ``E~ = mu_single W^T W - m H2 H2^T`` (45)
are formed. Under the end-of-training flow (44) the within-class Gram obeys
``dS/dt = -(E~ S + S E~) - 2 m S^2`` (S = H2 H2^T), whose limit is ``S -> max(-E~, 0) / m``
(checked against the ODE in the tests). Hence the prediction:

- *does the run collapse*: the predicted limit of the within-class scatter, relative to its
  current value, ``rho = ||max(-E~, 0)||_F / ||S_W||_F``; NC1 is predicted when ``rho`` is
  below ``tolerance`` (default 0.1);
- *how fast*: along the positive eigen-directions of ``E~`` the scatter decays like
  ``exp(-2 c t)``; the slowest rate ``2 c_min`` (flow time) is reported, with null directions
  decaying only like ``1/(2 m t)``. One SGD step of ½·mean MSE with step ``eta``, batch of
  ``B`` samples, ``C`` outputs and momentum ``beta`` advances the flow of the summed loss by
  about ``eta / (B C (1 - beta))`` (an approximation: the theory is gradient flow with a
  constant block kernel).

All of this is a diagnostic: the invariant is exact only for gradient flow under
Assumption 3.2, not for SGD with momentum, weight decay and learning-rate drops.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray

from ..._validation import check_array, check_int, check_scalar

if TYPE_CHECKING:
    from ...runs import Run

__all__ = [
    "CollapsePrediction",
    "block_values_over_time",
    "flow_time_per_step",
    "predict_collapse",
    "predictions_over_time",
]

_BLOCK_KEYS = (
    "ntk_kappa_d",
    "ntk_kappa_c",
    "ntk_kappa_n",
    "ntk_gamma_d",
    "ntk_gamma_c",
    "ntk_gamma_n",
    "ntk_alignment_features",
    "ntk_alignment_logits",
    "mu_single",
    "mu_class",
    "alpha",
)


@dataclass(frozen=True)
class CollapsePrediction:
    """The theory's reading of one record (see the module docstring).

    Attributes
    ----------
    collapses : bool
        NC1 predicted (``residual_fraction < tolerance``).
    residual_fraction : float
        ``||max(-E~, 0)||_F / ||S_W||_F``: predicted final over current within-class scatter.
    slowest_rate : float
        ``2 c_min`` over the positive eigenvalues of E~ restricted to the span of S_W (per
        unit flow time); NaN when there is none.
    invariant_norm : float
        ``m ||E||_F`` with E of eq. (26).
    e_tilde_eigenvalues : ndarray of shape (n_features,)
    """

    collapses: bool
    residual_fraction: float
    slowest_rate: float
    invariant_norm: float
    e_tilde_eigenvalues: NDArray[np.float64]


def predict_collapse(
    gram_w: ArrayLike,
    class_means: ArrayLike,
    within_scatter: ArrayLike,
    kappas: ArrayLike,
    n_per_class: int,
    *,
    tolerance: float = 0.1,
) -> CollapsePrediction:
    """Predict NC1 from one record of the ``ntk_invariant`` probe.

    Parameters
    ----------
    gram_w : array_like of shape (n, n)
        ``W^T W``.
    class_means : array_like of shape (C, n)
    within_scatter : array_like of shape (n, n)
        ``S_W = sum_c sum_i (h - <h>_c)(h - <h>_c)^T``.
    kappas : array_like of shape (3,)
        ``(kappa_d, kappa_c, kappa_n)`` with ``kappa_d > kappa_c``.
    n_per_class : int
        m of the sample the Grams were measured on.
    tolerance : float, default=0.1
    """
    G = check_array(gram_w, "gram_w", ndim=2, dtype=np.float64)
    n = G.shape[0]
    means = check_array(class_means, "class_means", ndim=2, dtype=np.float64)
    if means.shape[1] != n:
        raise ValueError(f"`class_means` must have shape (C, {n}); got {means.shape}.")
    S_W = check_array(within_scatter, "within_scatter", shape=(n, n), dtype=np.float64)
    kd, kc, kn = check_array(kappas, "kappas", shape=(3,), dtype=np.float64)
    m = check_int(n_per_class, "n_per_class", low=2)
    tol = check_scalar(tolerance, "tolerance", low=0.0, closed="neither")
    C = means.shape[0]
    mu_s = check_scalar(kd - kc, "kappa_d - kappa_c", low=0.0, closed="neither")
    mu_c = mu_s + m * (kc - kn)
    alpha = kn * m / (mu_c + C * kn * m)
    g = means.mean(axis=0)
    E = G / m - (means.T @ means - alpha * C**2 * np.outer(g, g)) / mu_c - S_W / (m * mu_s)
    Et = mu_s * G - S_W
    w, V = np.linalg.eigh((Et + Et.T) / 2)
    neg = (V * np.clip(-w, 0.0, None)) @ V.T
    s_norm = np.linalg.norm(S_W)
    frac = float(np.linalg.norm(neg) / s_norm) if s_norm > 0 else 0.0
    # positive directions that carry within-class scatter
    weight = np.einsum("ik,ij,jk->k", V, S_W, V)  # v_k^T S_W v_k
    live = (w > 0) & (weight > 1e-12 * max(float(s_norm), 1e-300))
    rate = float(2 * w[live].min()) if live.any() else float("nan")
    return CollapsePrediction(bool(frac < tol), frac, rate, float(m * np.linalg.norm(E)), w)


def flow_time_per_step(
    learning_rate: float, batch_size: int, n_outputs: int, momentum: float = 0.9
) -> float:
    """Approximate flow time of one SGD step on ½·mean MSE: ``eta / (B C (1 - beta))``."""
    eta = check_scalar(learning_rate, "learning_rate", low=0.0, closed="neither")
    B = check_int(batch_size, "batch_size", low=1)
    C = check_int(n_outputs, "n_outputs", low=1)
    beta = check_scalar(momentum, "momentum", low=0.0, high=1.0, closed="left")
    return eta / (B * C * (1.0 - beta))


def block_values_over_time(run: Run, prefix: str = "") -> pd.DataFrame:
    """Kernel block values, alignments, mu's and alpha per recorded step (one row per step)."""
    wide = run.metrics_wide()
    cols = [f"{prefix}{k}" for k in _BLOCK_KEYS if f"{prefix}{k}" in wide.columns]
    if not cols:
        raise KeyError(
            f"run {getattr(run, 'path', run)} has no kernel block values under "
            f"prefix {prefix!r}; record it with the 'ntk_invariant' probe."
        )
    out = wide[cols].dropna(how="all")
    out.columns = [c[len(prefix) :] for c in cols]
    return out


def predictions_over_time(
    run: Run, prefix: str = "", *, n_per_class: int, tolerance: float = 0.1
) -> pd.DataFrame:
    """:func:`predict_collapse` at every record that saved the invariant Grams."""
    p = prefix.replace("/", ".")
    arrays = {
        k: run.arrays(f"{p}invariant_{k}")
        for k in ("gram_w", "class_means", "within_scatter", "kappas")
    }
    rows = []
    for step in sorted(arrays["gram_w"]):
        pred = predict_collapse(
            arrays["gram_w"][step],
            arrays["class_means"][step],
            arrays["within_scatter"][step],
            arrays["kappas"][step],
            n_per_class,
            tolerance=tolerance,
        )
        rows.append(
            {
                "step": step,
                "collapses": pred.collapses,
                "residual_fraction": pred.residual_fraction,
                "slowest_rate": pred.slowest_rate,
                "invariant_norm": pred.invariant_norm,
            }
        )
    return pd.DataFrame(rows).set_index("step")
