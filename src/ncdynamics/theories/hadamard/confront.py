"""The Hadamard-reduced cross-entropy ODE, confronted with a run's class-mean logits.

The network's class-mean logit matrix ``Zbar`` (outputs x classes, probe ``class_means``) is
read as the logit matrix of the theory with ``n = 1`` sample per class. Cross-entropy does not
see a logit offset shared by all outputs, and the reduced dynamics live off the all-ones
directions, so ``Zbar`` is centred on both sides before its top ``K - 1`` singular values are
taken. The reduced ODE (9) of [1] is fitted to their logarithms with
:func:`~ncdynamics.theories.hadamard.estimate.fit_reduced` (initial reduced values and the
time scale ``c`` per recorded step, started from the best of a few scales). The off-diagonal
part of the Hadamard core of ``Zbar`` at the last record (:func:`offdiagonal_fraction`) says how
far the run is from the subspace where the theory is exact. ``K`` must be a power of two.

Observables: the geometric mean of the singular values (``logit_scale``, which grows like
``log t`` once the loss is small) and their ratio max/min (``logit_anisotropy``, 1 at a
simplex).
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..confrontation import Confrontation, Need, NotApplicable, Series, Stream, TheoryFit
from ..integrate import ConvergenceWarning
from .estimate import fit_reduced
from .metrics import reduced_basis

__all__ = ["CONFRONTATION", "centred_singular_values", "offdiagonal_fraction"]

_NEEDS = (Need("array", "class_means_logits", "class_means"),)
#: Starting values of the time scale per recorded step tried by the fit (``c = 2 eta``).
_START_SCALES = (1e-3, 1e-2, 1e-1, 1.0)


def centred_singular_values(means: Any) -> NDArray[np.float64]:
    """Top ``K - 1`` singular values of doubly centred class-mean logits, descending.

    Parameters
    ----------
    means : ndarray of shape (T, K, K)
        ``means[t, k]``: mean logits of class ``k`` at record ``t``.
    """
    x = np.asarray(means, dtype=np.float64)
    k = x.shape[1]
    sigma = np.linalg.svd(_centred(x), compute_uv=False)
    return np.asarray(sigma[:, : k - 1], dtype=np.float64)


def _centred(means: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P Zbar P`` with ``Zbar`` (outputs x classes) and ``P = I - 1 1^T / K``."""
    k = means.shape[-1]
    p = np.eye(k) - 1.0 / k
    return p @ np.swapaxes(means, -1, -2) @ p


def offdiagonal_fraction(means: Any) -> float:
    """``|C - diag(C)|_F / |C|_F`` of the Hadamard core ``C = U~^T Zbar V~`` of one record.

    Zero when the Hadamard basis diagonalises the centred class-mean logits (the subspace of
    [1], Thm 1, where the reduced ODE is exact); for ``n = 1`` the centred matrix lies in the
    span of the basis on both sides, so this is the part of it that the theory cannot follow.
    """
    z = _centred(np.asarray(means, dtype=np.float64))
    u, v = reduced_basis(z.shape[0], 1)
    core = u.T @ z @ v
    off = core - np.diag(np.diag(core))
    total = float(np.linalg.norm(core))
    return float(np.linalg.norm(off) / total) if total > 0 else float("nan")


def _summaries(sigma: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    return {
        "logit_scale": np.exp(np.mean(np.log(sigma), axis=-1)),
        "logit_anisotropy": sigma[..., 0] / sigma[..., -1],
    }


def _observe(stream: Stream) -> dict[str, Series]:
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or means.shape[1] != means.shape[2] or steps.size == 0:
        return {}
    return {k: (steps, v) for k, v in _summaries(centred_singular_values(means)).items()}


def _fit(stream: Stream) -> TheoryFit:
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or means.shape[1] != means.shape[2]:
        raise ValueError(f"`class_means_logits` must be (T, K, K); got {means.shape}.")
    k = means.shape[1]
    if k & (k - 1):
        raise NotApplicable(f"the Hadamard theory needs K a power of two; the run has K = {k}.")
    if steps.size < 3:
        raise ValueError(f"the fit needs at least 3 records; the stream has {steps.size}.")
    sigma = centred_singular_values(means)
    if np.any(sigma <= 0):
        raise ValueError("a centred class-mean logit singular value is zero; log undefined.")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        best = fit_reduced(steps, sigma, learning_rate=None, start_scales=_START_SCALES)
    reduced = best.params
    pred_sigma = reduced.predict(steps)
    offdiag = offdiagonal_fraction(means[-1])
    log_obs, log_fit = np.log(sigma), np.log(pred_sigma)
    ss_tot = float(np.sum((log_obs - log_obs.mean(axis=0)) ** 2))
    r2 = 1.0 - float(np.sum((log_obs - log_fit) ** 2)) / ss_tot if ss_tot > 0 else float("nan")

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        return _summaries(reduced.predict(np.asarray(at, dtype=np.float64)))

    return TheoryFit(
        theory="hadamard",
        params={
            "time_scale": reduced.time_scale,
            **{f"a0_{i}": v for i, v in enumerate(reduced.a0)},
        },
        goodness={
            "r2_log_singular_values": r2,
            "rms_log_error": float(np.sqrt(best.loss)),
            "offdiagonal_fraction_last": offdiag,
        },
        predictions={"singular_values_at_end": [float(v) for v in pred_sigma[-1]]},
        fitted={n: (steps, v) for n, v in _summaries(pred_sigma).items()},
        predict=predict,
        fit_until=float(steps[-1]),
        notes=() if best.success else (f"least squares: {best.message}",),
    )


CONFRONTATION = Confrontation(
    theory="hadamard",
    summary="reduced cross-entropy ODE (9) fitted to centred class-mean logit singular values",
    needs=_NEEDS,
    observe=_observe,
    fit=_fit,
)
