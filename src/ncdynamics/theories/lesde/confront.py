"""The L-model LE-ODE with constant elasticities, confronted with a run's class-mean logits.

In the logits-as-features model of [1] (Sec. 3.2.2, eq. (8)) only the margin projections of
the class means move. With ``s_k = d_k . Xbar^k / |d_k|^2`` (``d_k = e_k - 1/K``), their sum
``S`` and the norm of their spread ``|b|``, ``b = s - mean(s)``, the projection estimator
(:func:`~ncdynamics.theories.lesde.estimate.estimate_ab_projection`) gives

    A - B = K log|S(t)/S(0)|,     A + B/(K-1) = K log(|b(t)|/|b(0)|),

where ``A``, ``B`` integrate the intra- and inter-class elasticities. With constant rates
``alpha``, ``beta`` (per recorded step), ``log|S|`` and ``log|b|`` are linear in time:

    d log|S|/dt = (alpha - beta)/K = g_S,    d log|b|/dt = (alpha + beta/(K-1))/K = g_b,

so ``alpha = g_S + (K-1) g_b`` and ``beta = (K-1)(g_b - g_S)``. The fit is the least-squares
line of each log over the records; the goodness is the R^2 of those lines, i.e. how well
*constant* elasticity describes the run. Observables: the mean class margin ``S/K`` and the
margin spread ``|b|/sqrt(K)`` of the class-mean logits (probe ``class_means``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..confrontation import Confrontation, Need, Series, Stream, TheoryFit, r_squared
from .model import d_vectors

__all__ = ["CONFRONTATION", "margin_projections"]

_NEEDS = (Need("array", "class_means_logits", "class_means"),)


def margin_projections(means: Any) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Mean class margin ``S/K`` and margin spread ``|b|/sqrt(K)`` of class-mean logits.

    Parameters
    ----------
    means : ndarray of shape (T, K, K)
        ``means[t, k]``: mean logits of class ``k`` at record ``t``.
    """
    x = np.asarray(means, dtype=np.float64)
    k = x.shape[1]
    s = np.einsum("kj,tkj->tk", d_vectors(k), x) / ((k - 1) / k)  # (T, K)
    spread = np.linalg.norm(s - s.mean(axis=1, keepdims=True), axis=1) / np.sqrt(k)
    return s.mean(axis=1), spread


def _observe(stream: Stream) -> dict[str, Series]:
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or means.shape[1] != means.shape[2]:
        return {}
    margin, spread = margin_projections(means)
    return {"mean_margin": (steps, margin), "margin_spread": (steps, spread)}


def _log_line(
    steps: NDArray[np.float64], values: NDArray[np.float64]
) -> tuple[float, float, float]:
    """Slope, intercept and R^2 of ``log|values|`` against steps."""
    logs = np.log(np.abs(values))
    slope, intercept = np.polyfit(steps, logs, 1)
    return float(slope), float(intercept), r_squared(logs, slope * steps + intercept)


def _fit(stream: Stream) -> TheoryFit:
    obs = _observe(stream)
    if not obs:
        raise ValueError("`class_means_logits` must have shape (T, K, K) (class x logit).")
    k = stream.array("class_means_logits")[1].shape[1]
    steps = obs["mean_margin"][0]
    if steps.size < 3:
        raise ValueError(f"the fit needs at least 3 records; the stream has {steps.size}.")
    if any(np.any(v == 0) for _, v in obs.values()):
        raise ValueError("a margin projection is exactly zero at some record; log undefined.")
    lines = {name: _log_line(steps, obs[name][1]) for name in obs}
    g_s, g_b = lines["mean_margin"][0], lines["margin_spread"][0]
    alpha, beta = g_s + (k - 1) * g_b, (k - 1) * (g_b - g_s)
    signs = {name: float(np.sign(obs[name][1][-1])) for name in obs}

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        at = np.asarray(at, dtype=np.float64)
        return {n: signs[n] * np.exp(lines[n][1] + lines[n][0] * at) for n in lines}

    return TheoryFit(
        theory="lesde",
        params={"alpha": alpha, "beta": beta, "rate_margin": g_s, "rate_spread": g_b},
        goodness={f"r2_log_{n}": lines[n][2] for n in lines},
        predictions={
            "margins_grow": bool(g_s > 0),
            "relative_spread_shrinks": bool(g_b < g_s),
        },
        fitted={n: (steps, predict(steps)[n]) for n in lines},
        predict=predict,
        fit_until=float(steps[-1]),
    )


CONFRONTATION = Confrontation(
    theory="lesde",
    summary="L-model LE-ODE with constant elasticities alpha, beta fitted to class-mean logits",
    needs=_NEEDS,
    observe=_observe,
    fit=_fit,
)
