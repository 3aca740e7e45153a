"""Confronting the reduced theory with a recorded run of (W, H).

Two steps:

1. :func:`project_onto_hadamard` splits logit matrices ``Z`` into their Hadamard mode values
   (``diag(Ũ^T Z Ṽ)``) and the residual energy outside the Hadamard subspace. Under Hadamard
   initialisation the residual stays at rounding level and the mode values are the singular
   values; after random initialisation the residual measures how far the run is from the
   subspace the theory lives in.
2. :func:`fit_reduced` fits the reduced ODE (9) of [1] to recorded singular values: the
   initial reduced values ``a(0)`` and the time scale ``c`` in ``τ = c k``. The theory
   predicts ``c = 2 √n η``; a fitted ``c`` far from it (or a large residual) says that the
   run is not following the Hadamard-reduced dynamics.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from ..integrate import FitResult, SolveError
from .metrics import mode_values, residual_energy
from .model import iterations_to_time, solve_reduced, to_reduced
from .structure import check_power_of_two

__all__ = [
    "TIME_SCALE_BOUNDS",
    "HadamardProjection",
    "ReducedFit",
    "fit_reduced",
    "project_onto_hadamard",
]

#: Search bounds of the time scale ``c`` (per iteration of the records' step axis): a fitted
#: ``c`` at one of them means the records wanted a flow slower or faster than any searched.
TIME_SCALE_BOUNDS = (1e-10, 1e4)


@dataclass(frozen=True)
class HadamardProjection:
    """Hadamard coordinates of a batch of logit matrices.

    Attributes
    ----------
    modes : ndarray of shape (..., K-1)
        ``diag(Ũ^T Z Ṽ)`` in original units.
    reduced : ndarray of shape (..., K-1)
        ``modes / (K √n)``, the reduced units of Eq. (9).
    residual : ndarray of shape (...)
        Relative energy outside the Hadamard subspace ([1], App. E.1 (f)).
    """

    modes: NDArray[np.float64]
    reduced: NDArray[np.float64]
    residual: NDArray[np.float64]


def project_onto_hadamard(Z: Any, *, n: int = 1) -> HadamardProjection:
    """Project logits ``Z`` of shape (..., K, K n) onto the Hadamard modes (K a power of 2)."""
    Z = check_array(Z, "Z", dtype=np.float64)
    if Z.ndim < 2:
        raise ValueError(f"`Z` must have shape (..., K, K n); got {Z.shape}.")
    K = check_power_of_two(Z.shape[-2], "Z.shape[-2]")
    n = check_int(n, "n", low=1)
    if Z.shape[-1] != K * n:
        raise ValueError(f"`Z` must have last axis K n = {K * n}; got {Z.shape}.")
    modes = mode_values(Z, n=n)
    return HadamardProjection(modes, to_reduced(modes, n_classes=K, n=n), residual_energy(Z, n=n))


@dataclass(frozen=True)
class ReducedFit:
    """Fitted reduced-ODE parameters.

    Attributes
    ----------
    a0 : ndarray of shape (K-1,)
        Initial reduced singular values (mode order of the solver).
    time_scale : float
        ``c`` in ``τ = c k``; the theory's value is ``2 √n η``.
    n_classes : int
        ``K`` in [1].
    n : int
        Samples per class.
    step0 : float
        Iteration at which ``a0`` holds.
    """

    a0: NDArray[np.float64]
    time_scale: float
    n_classes: int
    n: int
    step0: float = 0.0

    def predict(self, steps: Any) -> NDArray[np.float64]:
        """Predicted singular values (original units, descending) at iterations ``steps``."""
        steps = np.asarray(steps, dtype=np.float64)
        ts = self.time_scale * (steps - self.step0)
        traj = solve_reduced(self.a0, ts, n_classes=self.n_classes, rtol=1e-8, atol=1e-10)
        out: NDArray[np.float64] = -np.sort(-traj.ys * self.n_classes * np.sqrt(self.n), axis=-1)
        return out


def fit_reduced(
    steps: Any,
    sigma: Any,
    *,
    n: int = 1,
    learning_rate: float | None,
    fit_time_scale: bool = True,
    start_scales: Sequence[float] | None = None,
) -> FitResult:
    """Fit the reduced ODE (9) of [1] to recorded logit singular values.

    Minimises the squared error of ``log σ`` (both sides sorted in descending order, so the
    fit does not depend on how modes are labelled) over ``log a(0)`` and, optionally,
    ``log c``. Starts from ``a(0) = σ(0) / (K √n)`` and ``c = 2 √n η``.

    Parameters
    ----------
    steps : array_like of shape (n_log,)
        GD iterations, increasing, ``steps[0] = 0`` not required.
    sigma : array_like of shape (n_log, K-1)
        Top ``K - 1`` singular values of ``Z`` at ``steps``; ``K`` must be a power of two.
    n : int, default=1
    learning_rate : float or None
        GD step size of the run (sets the initial time scale). ``None`` when it is not
        known (a run of another optimiser); then ``start_scales`` is required.
    fit_time_scale : bool, default=True
        Fit ``c``; otherwise keep ``c = 2 √n η``.
    start_scales : sequence of float, optional
        Candidate starting values of ``c``, in place of ``2 √n η``: the fit starts from the
        one whose flow from the first record fits best (each solved once, loosely).

    Returns
    -------
    FitResult
        ``params`` is a :class:`ReducedFit`; ``loss`` the mean squared log error;
        ``extra["time_scale_theory"]`` the theory's ``2 √n η`` (NaN without
        ``learning_rate``); ``extra["jacobian"]`` (central differences, tight solves) and
        ``extra["residuals"]`` of the log residuals in the fitted coordinates ``log a(0)``
        (and ``log c``) at the optimum, for Gauss-Newton intervals; ``extra["bounds"]`` the
        search bounds of ``c`` (:data:`TIME_SCALE_BOUNDS`).
    """
    from scipy.optimize import least_squares

    steps = check_array(steps, "steps", ndim=1, dtype=np.float64, min_size=2)
    if steps[0] < 0 or np.any(np.diff(steps) <= 0):
        raise ValueError("`steps` must be non-negative and strictly increasing.")
    sigma = check_array(sigma, "sigma", ndim=2, shape=(steps.size, None), dtype=np.float64)
    K = check_power_of_two(sigma.shape[1] + 1, "sigma.shape[1] + 1")
    n = check_int(n, "n", low=1)
    if learning_rate is None:
        if start_scales is None or not fit_time_scale:
            raise ValueError(
                "`learning_rate` is required unless `start_scales` is given and "
                "`fit_time_scale` is true; got learning_rate=None."
            )
        c_theory = float("nan")
    else:
        lr = check_scalar(learning_rate, "learning_rate", low=0, closed="neither")
        c_theory = float(iterations_to_time(1, learning_rate=lr, n=n))
    if np.any(sigma <= 0):
        raise ValueError("`sigma` must be strictly positive.")
    target = np.log(-np.sort(-sigma, axis=1))
    k0 = steps[0]
    sigma0 = -np.sort(-sigma[0])
    x0 = np.log(to_reduced(sigma0, n_classes=K, n=n))

    def unpack(x: NDArray[np.float64]) -> tuple[NDArray[np.float64], float]:
        c = float(np.exp(x[-1])) if fit_time_scale else c_theory
        return np.exp(x[: K - 1]), c

    def residuals(x: NDArray[np.float64], rtol: float = 1e-8) -> NDArray[np.float64]:
        a0, c = unpack(x)
        ts = c * (steps - k0)
        try:  # a trial start that explodes is a failed solve, as one scipy reports
            traj = solve_reduced(a0, ts, n_classes=K, rtol=rtol, atol=rtol * 1e-2)
        except SolveError:
            return np.full(target.size, 1e3)
        if not traj.success:
            return np.full(target.size, 1e3)
        pred = np.log(-np.sort(-traj.ys * K * np.sqrt(n), axis=1))
        return (pred - target).ravel()

    if fit_time_scale:
        c0 = c_theory
        if start_scales is not None:
            scales = check_array(start_scales, "start_scales", ndim=1, min_size=1)
            if np.any(scales <= 0):
                raise ValueError(f"`start_scales` must be positive; got {list(scales)}.")
            c0 = min(
                scales,
                key=lambda c: float(np.sum(residuals(np.append(x0, np.log(c)), rtol=1e-6) ** 2)),
            )
        x0 = np.append(x0, np.log(c0))

    lower = np.full(x0.size, -np.inf)
    upper = np.full(x0.size, np.inf)
    if fit_time_scale:
        lower[-1], upper[-1] = np.log(TIME_SCALE_BOUNDS[0]), np.log(TIME_SCALE_BOUNDS[1])
        x0[-1] = float(np.clip(x0[-1], lower[-1] + 1e-9, upper[-1] - 1e-9))
    # diff_step well above the solver tolerance, so the finite-difference Jacobian is clean
    res = least_squares(
        residuals,
        x0,
        bounds=(lower, upper),
        method="trf",
        x_scale="jac",
        diff_step=1e-4,
        max_nfev=200,
    )
    a0, c = unpack(res.x)
    jac = _central_jacobian(residuals, res.x)
    fit = ReducedFit(a0, c, K, n, float(k0))
    loss = float(np.mean(res.fun**2))
    out = FitResult(
        fit,
        loss,
        bool(res.success),
        str(res.message),
        int(res.nfev),
        {
            "time_scale_theory": c_theory,
            "step0": float(k0),
            "jacobian": jac,
            "residuals": np.asarray(res.fun, dtype=np.float64),
            "bounds": TIME_SCALE_BOUNDS,
        },
    )
    return out.warn_if_failed()


def _central_jacobian(
    residuals: Callable[..., NDArray[np.float64]], x: NDArray[np.float64], h: float = 1e-4
) -> NDArray[np.float64]:
    """Central differences of ``residuals`` in each coordinate of ``x`` (log parameters), with
    solves at ``rtol = 1e-10`` so the step ``h`` is far above the solver's noise."""
    cols = []
    for i in range(x.size):
        up, down = x.copy(), x.copy()
        up[i] += h
        down[i] -= h
        cols.append((residuals(up, rtol=1e-10) - residuals(down, rtol=1e-10)) / (2 * h))
    return np.stack(cols, axis=1)
