"""The end-of-training flow of [1], confronted with the within-class scatter of a run.

At a record of the ``ntk_invariant`` probe (``save_grams=True``) the end-of-training invariant
``E~ = mu_s W^T W - S_W`` (eq. (45), ``mu_s = kappa_d - kappa_c``) is formed, and the within-class
Gram ``S = S_W / m`` is carried forward by the flow (44),

    dS/du = -(E~ S + S E~) - 2 m S^2,

a matrix Riccati equation with a closed-form solution. In the eigenbasis ``E~ = V diag(w) V^T``,
with ``S(0) = H H^T`` (``H`` of rank ``r``) and ``H^ = V^T H``,

    tr S(u) = tr[(I_r + 2 m H^T G(u) H^)^{-1} H^T D(u)^2 H^],
    D(u) = diag(exp(-w u)),   G(u) = diag((1 - exp(-2 w u)) / (2 w))   (G = u where w = 0),

(linearise ``S = X Y^{-1}`` with ``X' = -E~ X``, ``Y' = E~ Y + 2 m X``). The one unknown is the
flow time ``tau`` per recorded step (SGD with momentum, weight decay and a changing kernel is not
the gradient flow of the theory). It is fitted so that each record, carried forward with its own
``E~`` over the gap to the next record, predicts that record's ``tr S_W``: a one-record-ahead fit
in ``log tr S_W``. The flow describes the terminal phase of training, so the fit uses the later
half of the records it is given (at least three), as the power-law baseline of ``ncdyn
forecast`` does. Beyond the last fitted record the prediction starts from that record.

Observable: ``within_scatter`` = ``tr S_W`` on the probe's class-ordered NTK sample.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.optimize import minimize_scalar

from ..confrontation import Confrontation, Need, Series, Stream, TheoryFit, r_squared
from .estimate import predict_collapse

__all__ = ["CONFRONTATION", "RiccatiState", "riccati_trace"]

_GRAMS = ("gram_w", "class_means", "within_scatter", "kappas")
_NEEDS = tuple(Need("array", f"invariant_{g}", "ntk_invariant") for g in _GRAMS) + (
    Need("array", "ntk_labels", "ntk_invariant"),
)
#: Largest |w| du of one propagation step: exponentials stay within e^(2 * 15), so the
#: Cholesky factor of each step is well conditioned.
_MAX_WDU = 15.0
#: Most propagation steps one call may take; longer flows give NaN (not a wrong number).
_MAX_STEPS = 20_000
#: The same, per record gap while fitting (a flow time that long is far off the data anyway).
_FIT_STEPS = 200


@dataclass(frozen=True)
class RiccatiState:
    """One record prepared for :func:`riccati_trace`: ``E~`` eigenvalues and ``H^ = V^T H``."""

    w: NDArray[np.float64]
    h: NDArray[np.float64]
    m: int

    @classmethod
    def from_record(cls, e_tilde: ArrayLike, s0: ArrayLike, m: int) -> RiccatiState:
        """From ``E~`` (n, n) and the within-class Gram ``S = S_W / m`` (n, n)."""
        w, v = np.linalg.eigh((np.asarray(e_tilde) + np.asarray(e_tilde).T) / 2)
        lam, u = np.linalg.eigh((np.asarray(s0) + np.asarray(s0).T) / 2)
        keep = lam > 1e-12 * max(float(lam.max(initial=0.0)), 1e-300)
        h = u[:, keep] * np.sqrt(lam[keep])  # S0 = h h^T
        return cls(w, v.T @ h, int(m))


def _propagate(
    w: NDArray[np.float64], h: NDArray[np.float64], m: int, du: float
) -> NDArray[np.float64]:
    """``H^`` after flow time ``du``: ``S~ = D H^ M^{-1} H^T D = H' H'^T``, ``H' = D H^ L^{-T}``
    with ``M = I + 2 m H^T G H^ = L L^T``."""
    x = -w * du
    d = np.exp(x)
    with np.errstate(divide="ignore", invalid="ignore"):
        g = np.where(w == 0, du, -np.expm1(2 * x) / (2 * w))  # >= 0 for every w
    lhs = np.eye(h.shape[1]) + 2 * m * (h.T @ (h * g[:, None]))
    chol = np.linalg.cholesky(lhs)
    return np.linalg.solve(chol, (h * d[:, None]).T).T  # D H^ L^{-T}


def riccati_trace(
    state: RiccatiState, u: ArrayLike, *, max_steps: int = _MAX_STEPS
) -> NDArray[np.float64]:
    """``tr S(u)`` of the flow (44) from ``state`` at flow times ``u >= 0`` (module docstring).

    The closed form is applied in steps of at most ``15 / max|w|`` flow time, so that no
    exponential over- or underflows; a time that would need more than ``max_steps`` steps
    gives NaN.
    """
    u = np.atleast_1d(np.asarray(u, dtype=np.float64))
    if np.any(u < 0) or np.any(np.isnan(u)):
        raise ValueError(f"`u` must be non-negative flow times; got {u}.")
    out = np.full(u.shape, np.nan)
    wmax = float(np.max(np.abs(state.w), initial=0.0))
    max_du = _MAX_WDU / wmax if wmax > 0 else np.inf
    h, now, used = state.h, 0.0, 0
    for i in np.argsort(u, kind="stable"):
        n_steps = max(1, int(np.ceil((u[i] - now) / max_du))) if u[i] > now else 0
        if used + n_steps > max_steps:
            break
        for _ in range(n_steps):
            h = _propagate(state.w, h, state.m, (u[i] - now) / n_steps)
        used, now = used + n_steps, float(u[i])
        out[i] = float(np.sum(h * h))
    return out


def _records(stream: Stream) -> dict[str, Any]:
    arrays = {g: stream.array(f"invariant_{g}") for g in _GRAMS}
    steps = arrays["gram_w"][0]
    labels = stream.array("ntk_labels")[1]
    m = int(np.bincount(labels[-1].astype(np.int64)).min()) if labels.size else 0
    return {"steps": steps, "m": m, **{g: a[1] for g, a in arrays.items()}}


def _observe(stream: Stream) -> dict[str, Series]:
    rec = _records(stream)
    if rec["steps"].size == 0:
        return {}
    return {"within_scatter": (rec["steps"], np.trace(rec["within_scatter"], axis1=1, axis2=2))}


def _state(rec: dict[str, Any], i: int) -> RiccatiState:
    kd, kc, _ = rec["kappas"][i]
    e_tilde = (kd - kc) * rec["gram_w"][i] - rec["within_scatter"][i]
    return RiccatiState.from_record(e_tilde, rec["within_scatter"][i] / rec["m"], rec["m"])


def _fit(stream: Stream) -> TheoryFit:
    rec = _records(stream)
    steps, m = rec["steps"], rec["m"]
    if steps.size < 3:
        raise ValueError(f"the fit needs at least 3 records; the stream has {steps.size}.")
    trace = np.trace(rec["within_scatter"], axis1=1, axis2=2)
    if np.any(trace <= 0):
        raise ValueError("the within-class scatter is zero at some record; log undefined.")
    # the flow (44) describes the terminal phase: fit the later half of the records seen
    first = min(steps.size // 2, steps.size - 3)
    steps, trace = steps[first:], trace[first:]
    states = [_state(rec, i) for i in range(first, first + steps.size)]
    gaps = np.diff(steps)
    target = np.log(trace[1:])

    def ahead(log_tau: float) -> NDArray[np.float64]:
        tau = np.exp(log_tau)
        pred = [
            m * riccati_trace(states[i], tau * gaps[i], max_steps=_FIT_STEPS)[0]
            for i in range(gaps.size)
        ]
        return np.log(np.maximum(pred, 1e-300))  # NaN where the flow was too long

    def loss(log_tau: float) -> float:
        err = float(np.mean((ahead(log_tau) - target) ** 2))
        return err if np.isfinite(err) else np.inf

    grid = np.linspace(np.log(1e-8), np.log(1e3), 45)
    start = grid[int(np.argmin([loss(g) for g in grid]))]
    res = minimize_scalar(loss, bounds=(start - 0.6, start + 0.6), method="bounded")
    log_tau = float(res.x)
    tau = float(np.exp(log_tau))
    last = states[-1]
    verdict = predict_collapse(
        rec["gram_w"][-1], rec["class_means"][-1], rec["within_scatter"][-1], rec["kappas"][-1], m
    )
    fitted_log = ahead(log_tau)

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        u = tau * np.maximum(np.asarray(at, dtype=np.float64) - steps[-1], 0.0)
        return {"within_scatter": m * riccati_trace(last, u)}

    return TheoryFit(
        theory="ntk_collapse",
        params={"flow_time_per_step": tau, "m": float(m)},
        goodness={
            "r2_log_within_scatter_ahead": r_squared(target, fitted_log),
            "rms_log_error_ahead": float(np.sqrt(loss(log_tau))),
        },
        predictions={
            "collapses": verdict.collapses,
            "residual_fraction": verdict.residual_fraction,
            "slowest_rate": verdict.slowest_rate,
        },
        fitted={"within_scatter": (steps[1:], np.exp(fitted_log))},
        predict=predict,
        fit_until=float(steps[-1]),
    )


CONFRONTATION = Confrontation(
    theory="ntk_collapse",
    summary="end-of-training Riccati flow (44) of the within-class scatter, flow time fitted",
    needs=_NEEDS,
    observe=_observe,
    fit=_fit,
)
