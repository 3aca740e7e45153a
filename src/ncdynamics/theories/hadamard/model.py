"""The reduced dynamics of the Hadamard-initialised CE UFM: right-hand sides and closed forms.

All functions act on the ``K - 1`` nontrivial logit singular values ``a`` in *reduced units*
(``a' = σ(Z) / (K √n)``, ``τ = 2 √n t``; see :func:`to_reduced` and
:func:`iterations_to_time`). The state may carry leading batch axes: ``a`` of shape
``(..., K - 1)``.

Central quantities ([1], Eq. (10))::

    x = Ψ a                           (margins)
    b_i = Σ_j Ψ_ij exp(-x_j),          D = 1 + Σ_j exp(-x_j)

The ratio ``b / D`` (the "growth rates") is computed with a log-sum-exp shift, so it neither
overflows nor divides 0 by 0 at large margins. The solvers integrate ``log a`` (the mirror
form of [1], App. B.1), which keeps ``a > 0`` and handles the exponential slow-down.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from ..integrate import Trajectory, solve_ode
from ..iterate import check_steps, iterate_map
from .structure import check_power_of_two, psi_matrix

__all__ = [
    "Flow",
    "ReducedParams",
    "SingularValueParams",
    "discrete_gd_map",
    "drift",
    "drift_alpha_beta",
    "drift_log",
    "drift_logit",
    "drift_normalized",
    "drift_normalized_naive",
    "energy",
    "energy_full",
    "from_reduced",
    "growth_rates",
    "iterations_to_time",
    "iterations_to_time_logit",
    "jacobian_log",
    "linearized_solution",
    "margins",
    "mse_singular_values",
    "payoffs",
    "replicator_drift",
    "solve_reduced",
    "to_reduced",
]

Flow = Literal["regular", "logit", "normalized"]
FLOWS = ("regular", "logit", "normalized")


@dataclass(frozen=True)
class ReducedParams:
    """Parameters of the reduced ODE (9)--(10) of [1]: only the number of classes.

    Attributes
    ----------
    n_classes : int
        ``K`` in [1], a power of two.
    psi : ndarray of shape (K-1, K-1)
        Ψ, derived from ``n_classes``.
    """

    n_classes: int
    psi: NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        K = check_power_of_two(self.n_classes)
        object.__setattr__(self, "n_classes", K)
        object.__setattr__(self, "psi", psi_matrix(K))


@dataclass(frozen=True)
class SingularValueParams:
    """Parameters of Theorem 2 of [1] in original units.

    Attributes
    ----------
    n_classes : int
        ``K`` in [1], a power of two.
    n : int
        Samples per class.
    psi : ndarray of shape (K-1, K-1)
        Ψ, derived from ``n_classes``.
    """

    n_classes: int
    n: int = 1
    psi: NDArray[np.float64] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        K = check_power_of_two(self.n_classes)
        object.__setattr__(self, "n_classes", K)
        object.__setattr__(self, "n", check_int(self.n, "n", low=1))
        object.__setattr__(self, "psi", psi_matrix(K))


def _check_state(a: Any, params: ReducedParams, name: str = "a") -> NDArray[np.float64]:
    a = check_array(a, name, dtype=np.float64, min_size=1)
    k1 = params.n_classes - 1
    if a.shape[-1] != k1:
        raise ValueError(f"`{name}` must have last axis K-1 = {k1}; got shape {a.shape}.")
    return a


def margins(a: Any, params: ReducedParams | SingularValueParams) -> NDArray[np.float64]:
    """Reduced margins ``x = Ψ a`` ([1], §4.3); shape like ``a``."""
    out: NDArray[np.float64] = np.asarray(a, dtype=np.float64) @ params.psi  # Ψ symmetric
    return out


def _log_d(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """``log D = log(1 + Σ_j exp(-x_j))`` without overflow; shape ``x.shape[:-1]``."""
    m = np.maximum(0.0, (-x).max(axis=-1))
    s = np.exp(-x - m[..., None]).sum(axis=-1)
    return np.where(m > 0, m + np.log(np.exp(-m) + s), np.log1p(s))


def payoffs(a: Any, params: ReducedParams) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``b`` and ``D`` of [1], Eq. (10), evaluated directly (may under/overflow).

    Returns
    -------
    b : ndarray of shape (..., K-1)
    D : ndarray of shape (...)
    """
    e = np.exp(-margins(a, params))
    return e @ params.psi, 1.0 + e.sum(axis=-1)


def growth_rates(a: Any, params: ReducedParams | SingularValueParams) -> NDArray[np.float64]:
    """``b / D`` of [1], Eq. (10), computed stably (log-sum-exp shift).

    ``b_i / D = Σ_j Ψ_ij exp(-x_j - log D)``. It is positive and at most ``K`` (since
    ``Σ_j Ψ_ij = K``). This is also ``1 - ν_i`` for modes ``1..K-1`` with ν the softmax
    eigenvalues of Theorem 1 at the full mode vector ``[0, K a]``.
    """
    x = margins(a, params)
    p = np.exp(-x - _log_d(x)[..., None])
    return p @ params.psi


def drift(t: float, a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Reduced gradient flow ([1], Eq. (9)): ``da_i/dt = a_i b_i / D``."""
    a = np.asarray(a, dtype=np.float64)
    return a * growth_rates(a, params)


def drift_log(t: float, y: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Mirror (log) form of Eq. (9) ([1], App. B.1): ``d log a / dt = b / D = -∇E(a)``."""
    return growth_rates(np.exp(np.asarray(y, dtype=np.float64)), params)


def jacobian_log(t: float, y: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Jacobian of :func:`drift_log` with respect to ``y = log a`` (single state).

    With ``p_j = exp(-x_j) / D``, ``∂(b/D)/∂y = Ψ (p p^T - diag(p)) Ψ diag(a)``.
    """
    a = np.exp(np.asarray(y, dtype=np.float64))
    x = margins(a, params)
    p = np.exp(-x - _log_d(x))
    inner = np.outer(p, p) - np.diag(p)
    return params.psi @ inner @ params.psi * a[None, :]


def replicator_drift(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Replicator form ([1], Eq. (11)): ``dâ_i/dt = (â_i / D)(b_i - b̄)``, ``b̄ = Σ_j â_j b_j``.

    Parameters
    ----------
    a : array_like of shape (..., K-1)
        Unnormalised singular values (the payoffs depend on the norm).

    Returns
    -------
    ndarray of shape (..., K-1)
        The time derivative of ``â = a / ‖a‖₁``.
    """
    a = np.asarray(a, dtype=np.float64)
    ahat = a / a.sum(axis=-1, keepdims=True)
    g = growth_rates(a, params)
    gbar = (ahat * g).sum(axis=-1, keepdims=True)
    return ahat * (g - gbar)


def drift_logit(t: float, a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Direct logit optimisation ([1], Thm 6): ``da_i/dt = b_i / D``.

    Units: ``a' = σ(Z) / (K √n)`` and ``τ = t / K`` (see :func:`iterations_to_time_logit`).
    """
    return growth_rates(a, params)


def drift_normalized(t: float, a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Normalised flow, stable form ([1], Eqs. (23)--(24)).

    Implements::

        b̂_i = Σ_j Ψ_ij exp(-(x_j - min_k x_k)),     da_i/dτ = a_i b̂_i / ‖a ⊙ b̂‖₂

    which equals ``F / ‖F‖₂`` with ``F = -a ⊙ ∇E = a ⊙ b / D`` (the paper's Eq. (22) prints
    ``F = a ⊙ ∇E``, a sign slip; erratum 6). ``τ`` is the Euclidean arc length of ``a``.
    """
    a = np.asarray(a, dtype=np.float64)
    x = margins(a, params)
    e = np.exp(-(x - x.min(axis=-1, keepdims=True)))
    f = a * (e @ params.psi)
    return f / np.linalg.norm(f, axis=-1, keepdims=True)


def drift_normalized_naive(t: float, a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Eq. (22) of [1] evaluated literally, ``a b / ‖a ⊙ b‖₂`` with unshifted exponentials.

    Kept to show why the shift of Eq. (23) is needed: once every margin exceeds about 745,
    ``exp(-x)`` underflows to 0 and this returns NaN (0/0).
    """
    a = np.asarray(a, dtype=np.float64)
    b, _ = payoffs(a, params)
    f = a * b
    with np.errstate(invalid="ignore", divide="ignore"):
        return f / np.linalg.norm(f, axis=-1, keepdims=True)


def drift_alpha_beta(t: float, y: Any, params: SingularValueParams) -> NDArray[np.float64]:
    """Theorem 2 of [1] in original units, state ``y = [α, β]`` of shape (2, K-1).

    Implements::

        dα_i/dt = (√n / D) b_i β_i,    dβ_i/dt = (√n / D) b_i α_i

    with ``b, D`` of Eq. (7) at ``a = α ⊙ β``, i.e. the reduced ``b/D`` at ``a / (K √n)``.
    No assumption ``α = β`` is made, so ``α² - β²`` is conserved (Noether, [1] §3.2).
    """
    y = np.asarray(y, dtype=np.float64)
    alpha, beta = y[0], y[1]
    g = growth_rates(alpha * beta / (params.n_classes * np.sqrt(params.n)), params)  # .psi only
    s = np.sqrt(params.n)
    return np.stack([s * g * beta, s * g * alpha])


def energy(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Reduced energy ``E(a) = log(1 + Σ_j exp(-(Ψa)_j))`` ([1], App. B.1), stably."""
    return _log_d(margins(a, params))


def energy_full(a: Any, *, n_classes: int, n: int = 1) -> NDArray[np.float64]:
    """Energy of [1], Eq. (8), in original units: ``K n log(1 + Σ exp(-(Ψa)/(K√n)))``.

    At a Hadamard-initialised point this equals the summed CE loss (1) exactly.

    Parameters
    ----------
    a : array_like of shape (..., K-1)
        Logit singular values ``σ_i(Z) = α_i β_i`` of the nontrivial modes.
    n_classes : int
        ``K`` in [1], a power of two.
    n : int, default=1
    """
    params = ReducedParams(n_classes)
    K = params.n_classes
    n = check_int(n, "n", low=1)
    return K * n * energy(to_reduced(a, n_classes=K, n=n), params)


# ----------------------------------------------------------------------------- units
def to_reduced(sigma: Any, *, n_classes: int, n: int = 1) -> NDArray[np.float64]:
    """Original logit singular values to reduced units: ``a' = σ / (K √n)``, ``K = n_classes``."""
    out: NDArray[np.float64] = np.asarray(sigma, dtype=np.float64) / (n_classes * np.sqrt(n))
    return out


def from_reduced(a: Any, *, n_classes: int, n: int = 1) -> NDArray[np.float64]:
    """Reduced units back to logit singular values: ``σ = K √n a'``, ``K = n_classes``."""
    out: NDArray[np.float64] = np.asarray(a, dtype=np.float64) * (n_classes * np.sqrt(n))
    return out


def iterations_to_time(k: Any, *, learning_rate: float, n: int = 1) -> NDArray[np.float64]:
    """Reduced time of GD iteration ``k`` on (W, H): ``τ = 2 √n η k``.

    Gradient flow time is ``t = η k``; [1] absorbs ``2√n`` into time to reach Eq. (9).
    """
    return 2.0 * np.sqrt(n) * learning_rate * np.asarray(k, dtype=np.float64)


def iterations_to_time_logit(
    k: Any, *, learning_rate: float, n_classes: int
) -> NDArray[np.float64]:
    """Reduced time of GD iteration ``k`` on the logits (Thm 6 of [1]): ``τ = η k / K``.

    ``n_classes`` is ``K`` in [1].
    """
    out: NDArray[np.float64] = learning_rate * np.asarray(k, dtype=np.float64) / n_classes
    return out


# ----------------------------------------------------------------------------- closed forms
def linearized_solution(a0: Any, t: Any) -> NDArray[np.float64]:
    """Theorem 5 of [1]: decoupled logistic curves valid while ``‖a‖₁ ≪ 1``.

    ``a_i(t) = a_i(0) / (a_i(0) + (1 - a_i(0)) e^{-t})``.

    Parameters
    ----------
    a0 : array_like of shape (K-1,)
    t : array_like of shape (n_times,)

    Returns
    -------
    ndarray of shape (n_times, K-1)
    """
    a0 = check_array(a0, "a0", ndim=1, dtype=np.float64)
    t = check_array(t, "t", ndim=1, dtype=np.float64)
    decay = np.exp(-t)[:, None]
    return a0 / (a0 + (1.0 - a0) * decay)


def mse_singular_values(a0: Any, t: Any, *, n: int = 1) -> NDArray[np.float64]:
    """Saxe-type MSE solution for ``α = β`` ([1], §2, Eq. (5)), in original units.

    ``da/dt = 2 (s - a) a`` with ``s = √n`` gives
    ``a(t) = s a0 e^{2st} / (s - a0 + a0 e^{2st})``.

    Returns
    -------
    ndarray of shape (n_times, n_modes)
    """
    a0 = check_array(a0, "a0", ndim=1, dtype=np.float64)
    t = check_array(t, "t", ndim=1, dtype=np.float64)
    s = np.sqrt(check_int(n, "n", low=1))
    g = np.exp(2.0 * s * t)[:, None]
    return s * a0 * g / (s - a0 + a0 * g)


def discrete_gd_map(
    a0: Any,
    steps: Any,
    *,
    n_classes: int,
    n: int = 1,
    learning_rate: float,
) -> Trajectory:
    """Exact image of gradient descent on (W, H) at Hadamard points, in reduced units.

    One GD step with step ``η`` keeps the singular vectors and ``α = β`` and maps
    ``α ← α (1 + η √n b/D)`` (a derived discrete analogue of [1], Thm 2); in reduced units::

        a' ← a' (1 + η √n g(a'))²,   g = b / D of Eq. (10)

    Parameters
    ----------
    a0 : array_like of shape (..., K-1)
        Reduced singular values at iteration 0.
    steps : array_like of int, shape (n_log,)
        Non-decreasing iterations at which to record.
    n_classes : int
        ``K`` in [1], a power of two.
    n : int, default=1
    learning_rate : float

    Returns
    -------
    Trajectory
        ``ts`` the iterations (as floats), ``ys`` of shape (..., n_log, K-1).
    """
    params = ReducedParams(n_classes)
    a = _check_state(a0, params, "a0")
    steps = check_steps(steps)
    learning_rate = check_scalar(learning_rate, "learning_rate", low=0, closed="neither")
    c = learning_rate * np.sqrt(check_int(n, "n", low=1))

    def step(x: NDArray[np.float64]) -> NDArray[np.float64]:
        out: NDArray[np.float64] = x * (1.0 + c * growth_rates(x, params)) ** 2
        return out

    states: list[NDArray[np.float64]] = iterate_map(step, a, steps)
    ys = np.stack(states, axis=-2)
    return Trajectory(steps.astype(np.float64), ys, True, "", int(steps[-1]))


# ----------------------------------------------------------------------------- solving
def solve_reduced(
    a0: Any,
    ts: Any,
    *,
    n_classes: int,
    flow: Flow = "regular",
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> Trajectory:
    """Integrate one of the reduced flows of [1] from ``a0`` and sample at ``ts``.

    ``flow="regular"`` is Eq. (9), ``"normalized"`` the arc-length flow (24) (``ts`` are then
    path lengths τ), both integrated in ``log a`` with LSODA; ``"logit"`` is Thm 6 integrated
    in ``a``. Integration starts at 0; ``ts`` must be non-negative and increasing.

    Parameters
    ----------
    a0 : array_like of shape (K-1,)
        Positive initial singular values in reduced units.
    ts : array_like of shape (n_times,)
    n_classes : int
        ``K`` in [1], a power of two.
    flow : {"regular", "logit", "normalized"}
    rtol, atol : float
        Solver tolerances (on ``log a`` for the log-space flows).

    Returns
    -------
    Trajectory
        ``ys`` of shape (n_times, K-1), the singular values ``a`` (not their logs).
    """
    params = ReducedParams(n_classes)
    K = params.n_classes
    check_option(flow, "flow", FLOWS)
    a0 = check_array(a0, "a0", ndim=1, shape=(K - 1,), dtype=np.float64)
    if flow != "logit" and np.any(a0 <= 0):
        raise ValueError(
            f"`a0` must be strictly positive for the log-space flows; got minimum {a0.min()!r}."
        )
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=1)
    if ts[0] < 0 or np.any(np.diff(ts) <= 0):
        raise ValueError("`ts` must be non-negative and strictly increasing.")
    grid = ts if ts[0] == 0 else np.concatenate([[0.0], ts])
    if flow == "regular":
        traj = solve_ode(
            drift_log, np.log(a0), grid, params, rtol=rtol, atol=atol, jac=jacobian_log
        )
        ys = np.exp(traj.ys)
    elif flow == "normalized":

        def rhs(t: float, y: NDArray[np.float64], p: ReducedParams) -> NDArray[np.float64]:
            a = np.exp(y)
            return drift_normalized(t, a, p) / a

        traj = solve_ode(rhs, np.log(a0), grid, params, rtol=rtol, atol=atol)
        ys = np.exp(traj.ys)
    else:
        traj = solve_ode(drift_logit, a0, grid, params, rtol=rtol, atol=atol)
        ys = traj.ys
    if grid is not ts:
        ys = ys[1:]
    return Trajectory(ts, ys, traj.success, traj.message, traj.n_evals)
