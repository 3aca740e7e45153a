"""Integrators for the truncation flows: Lie-Euler on O(Q) and the exact fixed-R staircase.

Why not :func:`ncdynamics.theories.integrate.solve_ode`: the effective flow has a
right-hand side that jumps whenever a point crosses a ReLU kink, its rotation part lives on
the group ``O(Q)`` (an ODE solver in the embedding drifts off it), and the paper's statements
are about gradient descent as much as about the flow. So:

- Lie-Euler: both updates use the old values,
  ``beta_{k+1} = beta_k + eta d_s beta``, ``R_{k+1} = exp(eta Omega_k) R_k`` (or the Cayley
  map), so ``R`` stays orthogonal to rounding; time is ``s = k eta``. It is at the same time
  the discretisation of the flow and gradient descent on ``(beta, R)`` with a retraction.
  :func:`lie_euler` returns a :class:`FlowResult`, a
  :class:`~ncdynamics.theories.integrate.Trajectory` of the state with the monitors computed
  at each step and the event times ``s1`` (first full truncation, detected at every step,
  also between recorded steps).
- The fixed-R flow decouples by rotated coordinate ([1] Sec. 4.3, (4.40)-(4.50)) and is
  solved exactly, event by event, both in continuous time and for gradient descent
  (:func:`staircase`); :func:`staircase_gd` is the step-by-step reference.

State layout of a recorded flow: ``ys`` of shape ``(n_rec, L, Q + 1, Q)`` with
``ys[:, l, :Q] = R_l`` and ``ys[:, l, Q] = beta^(l)`` (see :func:`pack_state`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from ..integrate import Trajectory
from .model import OmegaVariant, PackedClusters, SeparatedRates, _separated, pack_clusters
from .network import AdaptedParams, ClusterData

__all__ = [
    "FlowResult",
    "Staircase",
    "cayley",
    "expm_antisymmetric",
    "lie_euler",
    "pack_state",
    "polar_orthonormalize",
    "separated_flow",
    "staircase",
    "staircase_gd",
]

Retraction = Literal["expm", "cayley"]
RatesFn = Callable[[NDArray[np.float64], NDArray[np.float64]], SeparatedRates]


def expm_antisymmetric(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """Matrix exponential of antisymmetric ``a`` of shape (..., Q, Q).

    ``i a`` is Hermitian: with ``i a = V diag(lam) V^H``, ``exp(a) = V diag(exp(-i lam)) V^H``.
    Agrees with ``scipy.linalg.expm`` to ~1e-15 and is several times faster for small ``Q``.
    """
    lam, v = np.linalg.eigh(1j * a)
    out: NDArray[np.float64] = np.einsum(
        "...ab,...b,...cb->...ac", v, np.exp(-1j * lam), v.conj()
    ).real
    return out


def cayley(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cayley map ``(1 - A/2)^{-1} (1 + A/2)`` of antisymmetric ``a`` of shape (..., Q, Q)."""
    eye = np.eye(a.shape[-1])
    return np.asarray(np.linalg.solve(eye - 0.5 * a, eye + 0.5 * a), dtype=np.float64)


def polar_orthonormalize(R: NDArray[np.float64]) -> NDArray[np.float64]:
    """Nearest orthogonal matrices ``U V^T`` (polar factor) of ``R`` of shape (..., Q, Q)."""
    u, _, vt = np.linalg.svd(R)
    return u @ vt


def pack_state(R: NDArray[np.float64], beta: NDArray[np.float64]) -> NDArray[np.float64]:
    """Pack ``(R, beta)`` into one state array: ``R_l`` in rows ``:Q``, ``beta^(l)`` in row ``Q``.

    Parameters
    ----------
    R : ndarray of shape (..., L, Q, Q)
    beta : ndarray of shape (..., L, Q)
    """
    return np.concatenate([R, beta[..., None, :]], axis=-2)


@dataclass(frozen=True, kw_only=True)
class FlowResult(Trajectory):
    """Recorded Lie-Euler trajectory of ``(R, beta)``, time-first, with per-step monitors.

    A :class:`~ncdynamics.theories.integrate.Trajectory` (``ts`` the recorded times ``s``,
    ``ys`` the state of :func:`pack_state`, ``n_evals`` the right-hand-side evaluations)
    with what the trajectory alone does not give back: the monitors the step computed
    anyway (the network cost of :func:`~ncdynamics.theories.truncation.estimate.network_descent`
    is not a function of the state that this module could re-evaluate) and the event times
    ``s1``, detected at every step, between recorded ones too.

    Attributes
    ----------
    cost : ndarray of shape (n_rec,)
    j0perp : ndarray of shape (n_rec, L, Q)
    btilde_norm : ndarray of shape (n_rec, L)
    omega_norm : ndarray of shape (n_rec, L)
        Frobenius norm of the generator used at that step.
    s1 : ndarray of shape (L,)
        First time at which cluster ``l`` is fully truncated (every ``n_r = N_l``), checked
        at every step; NaN if never.
    wstar : ndarray of shape (L, Q)
        The (untrained) diagonal scales, carried to :attr:`final`.
    n_reorthonormalized : int
        Steps at which the orthogonality error exceeded 1e-11 and a polar step was applied.
    """

    cost: NDArray[np.float64]
    j0perp: NDArray[np.float64]
    btilde_norm: NDArray[np.float64]
    omega_norm: NDArray[np.float64]
    s1: NDArray[np.float64]
    wstar: NDArray[np.float64]
    n_reorthonormalized: int

    @property
    def s(self) -> NDArray[np.float64]:
        """Recorded times, shape (n_rec,) (the same array as ``ts``)."""
        return self.ts

    @property
    def R(self) -> NDArray[np.float64]:
        """Rotations, shape (n_rec, L, Q, Q)."""
        return np.ascontiguousarray(self.ys[:, :, :-1, :])

    @property
    def beta(self) -> NDArray[np.float64]:
        """Cumulative biases, shape (n_rec, L, Q)."""
        return np.ascontiguousarray(self.ys[:, :, -1, :])

    @property
    def final(self) -> AdaptedParams:
        """The last state as parameters."""
        last = self.ys[-1]
        return AdaptedParams(
            np.ascontiguousarray(last[:, :-1, :]), np.ascontiguousarray(last[:, -1, :]), self.wstar
        )


def lie_euler(
    params: AdaptedParams,
    rates: RatesFn,
    *,
    eta: float,
    n_steps: int,
    retraction: Retraction = "expm",
    record_every: int = 1,
    check_every: int = 100,
) -> FlowResult:
    """Lie-Euler integration of ``d_s beta = dbeta``, ``d_s R = Omega R``.

    Parameters
    ----------
    params : AdaptedParams
        Initial state (``wstar`` is carried along unchanged: it is not trained).
    rates : callable
        ``rates(R (L, Q, Q), beta (L, Q)) -> SeparatedRates``.
    eta : float
        Step size, ``0 < eta <= 1``.
    n_steps : int
    retraction : {"expm", "cayley"}, default="expm"
    record_every : int, default=1
        Record every this many steps (the first and last state are always recorded).
    check_every : int, default=100
        Steps between orthogonality checks; a polar step restores ``R`` if the error
        exceeds 1e-11.

    Returns
    -------
    FlowResult
        ``ts = k eta`` at the recorded steps ``k``.
    """
    eta = check_scalar(eta, "eta", low=0, high=1, closed="right")
    n_steps = check_int(n_steps, "n_steps", low=0)
    record_every = check_int(record_every, "record_every", low=1)
    check_option(retraction, "retraction", ("expm", "cayley"))
    R, beta = params.R.copy(), params.beta.copy()
    n_layers, q = beta.shape
    steps = sorted(set(range(0, n_steps + 1, record_every)) | {n_steps})
    n_rec = len(steps)
    rec = {
        "state": np.empty((n_rec, n_layers, q + 1, q)),
        "cost": np.empty(n_rec),
        "j0perp": np.empty((n_rec, n_layers, q)),
        "bt": np.empty((n_rec, n_layers)),
        "om": np.empty((n_rec, n_layers)),
    }
    s1 = np.full(n_layers, np.nan)
    eye = np.eye(q)
    n_fix, i_rec = 0, 0
    for k in range(n_steps + 1):
        r = rates(R, beta)
        done = np.all(r.j0perp == 1.0, axis=1) & np.isnan(s1)
        s1[done] = k * eta
        if i_rec < n_rec and steps[i_rec] == k:
            rec["state"][i_rec] = pack_state(R, beta)
            rec["cost"][i_rec] = r.cost
            rec["j0perp"][i_rec] = r.j0perp
            rec["bt"][i_rec] = np.linalg.norm(r.btilde, axis=1)
            rec["om"][i_rec] = np.linalg.norm(r.omega, axis=(1, 2))
            i_rec += 1
        if k == n_steps:
            break
        moving = np.any(r.omega != 0.0, axis=(1, 2))  # Omega = 0 leaves R bitwise unchanged
        if np.any(moving):
            a = eta * r.omega[moving]
            step = expm_antisymmetric(a) if retraction == "expm" else cayley(a)
            R[moving] = step @ R[moving]
        beta = beta + eta * r.dbeta
        if (k + 1) % check_every == 0:
            err = np.abs(np.einsum("lab,lac->lbc", R, R) - eye).max()
            if err > 1e-11:
                R = polar_orthonormalize(R)
                n_fix += 1
    s = np.asarray(steps, dtype=np.float64) * eta
    return FlowResult(
        ts=s,
        ys=rec["state"],
        n_evals=n_steps + 1,
        cost=rec["cost"],
        j0perp=rec["j0perp"],
        btilde_norm=rec["bt"],
        omega_norm=rec["om"],
        s1=s1,
        wstar=cast(NDArray[np.float64], params.wstar),
        n_reorthonormalized=n_fix,
    )


def separated_flow(
    params: AdaptedParams,
    data: ClusterData | PackedClusters,
    *,
    eta: float,
    n_steps: int,
    variant: OmegaVariant = "corrected",
    retraction: Retraction = "expm",
    record_every: int = 1,
) -> FlowResult:
    """Lie-Euler integration of the cluster-separated effective flow ([1] Thm. 3.2).

    See :func:`~ncdynamics.theories.truncation.model.separated_rates` for the right-hand
    side and :func:`lie_euler` for the scheme. Cost ``O(L N Q^2)`` per step.
    """
    check_option(variant, "variant", ("corrected", "paper", "moments"))
    packed = data if isinstance(data, PackedClusters) else pack_clusters(data)

    def rates(R: NDArray[np.float64], beta: NDArray[np.float64]) -> SeparatedRates:
        return _separated(R, beta, packed, variant)

    return lie_euler(
        params, rates, eta=eta, n_steps=n_steps, retraction=retraction, record_every=record_every
    )


# ------------------------------------------------------------------ fixed-R staircase
@dataclass(frozen=True)
class Staircase:
    """Exact solution of one coordinate of the fixed-R bias flow ([1] (4.42)-(4.50)).

    On segment ``k`` (``starts[k] <= s < starts[k+1]``, the last one unbounded)::

        y - b(s) = (y - b_start[k]) * factor(rate[k], s - starts[k]),

    with ``factor = exp(-rate t)`` in continuous time and ``(1 - eta rate)^(t/eta)`` for
    gradient descent. ``rates[k] = n_k / N`` with ``n_k`` the number of truncated points.

    Attributes
    ----------
    starts : ndarray of shape (n_segments,)
        Segment start times; ``starts[1:]`` are the event times.
    b_start : ndarray of shape (n_segments,)
    rates : ndarray of shape (n_segments,)
    y : float
    eta : float or None
        ``None`` for the continuous flow.
    stopped : bool
        The motion stops in finite time at the smallest point (``y < x_1``, a Filippov stop).
    """

    starts: NDArray[np.float64]
    b_start: NDArray[np.float64]
    rates: NDArray[np.float64]
    y: float
    eta: float | None
    stopped: bool

    @property
    def final_rate(self) -> float:
        return float(self.rates[-1])

    @property
    def limit(self) -> float:
        """``lim_{s->inf} b(s)``."""
        return self.y if self.rates[-1] > 0 else float(self.b_start[-1])

    def __call__(self, s: NDArray[np.float64]) -> NDArray[np.float64]:
        """``b(s)`` for times ``s`` of any shape (``s >= 0``)."""
        s = np.asarray(s, dtype=np.float64)
        k = np.searchsorted(self.starts, s, side="right") - 1
        t = s - self.starts[k]
        rate = self.rates[k]
        if self.eta is None:
            fac = np.exp(-rate * t)
        else:
            fac = np.power(1.0 - self.eta * rate, np.round(t / self.eta))
        moved = self.y - (self.y - self.b_start[k]) * fac
        return np.where(rate == 0.0, self.b_start[k], moved)  # static segments stay exact

    def sample(self, s: NDArray[np.float64]) -> Trajectory:
        """The solution at increasing times ``s`` of shape (n_times,), as a trajectory."""
        s = check_array(s, "s", ndim=1, dtype=np.float64, min_size=1)
        return Trajectory(s, self(s))


def _segment_time(ratio: float, rate: float, eta: float | None) -> float:
    """Time for ``|y - b|`` to shrink by ``ratio`` (<= 1) at ``rate``; GD counts whole steps."""
    if eta is None:
        return float(-np.log(ratio) / rate)
    steps = np.ceil(np.log(ratio) / np.log1p(-eta * rate) - 1e-12)
    return float(max(steps, 1.0)) * eta


def staircase(
    x: NDArray[np.float64], y: float, b0: float, *, eta: float | None = None
) -> Staircase:
    """Solve ``d_s(y - b) = -(1/N) #{i : x_i <= b} (y - b)`` exactly ([1] (4.42)).

    With ``b(0) = x_n`` and ``x`` sorted, the event times are [1] (4.49)::

        s_{n+1} = s_n + (N/n) log((y - x_n) / (y - x_{n+1})),

    and after the last event ``y - b`` decays at rate ``1`` if every point is truncated
    ([1] (4.50)). The general rules: nothing moves if no point is truncated;
    if ``y`` lies between ``x_m`` and ``x_{m+1}`` the final rate is ``m/N``; if ``b(0) > y``,
    ``b`` decreases, points un-truncate one by one and, if ``y < x_1``, the motion stops at
    ``b = x_1``.

    Parameters
    ----------
    x : ndarray of shape (N,)
        Rotated coordinates of the cluster, ``(R x_i)_r``.
    y : float
        ``(R ytilde)_r``.
    b0 : float
        ``-(R beta(0))_r``.
    eta : float, optional
        If given, solve gradient descent ``b_{k+1} = b_k + eta n_k/N (y - b_k)`` exactly
        instead (events at whole steps).
    """
    x = np.sort(check_array(x, "x", ndim=1, dtype=np.float64, min_size=1))
    y = check_scalar(y, "y")
    b = check_scalar(b0, "b0")
    if eta is not None:
        eta = check_scalar(eta, "eta", low=0, high=1, closed="right")
    n_pts = x.size
    starts: list[float] = []
    bs: list[float] = []
    rates: list[float] = []
    s, stopped = 0.0, False
    if b < y:
        while True:
            n = int(np.searchsorted(x, b, side="right"))  # #{x_i <= b}
            nxt = x[n] if n < n_pts else np.inf
            _push(starts, bs, rates, s, b, n / n_pts)
            if n == 0 or nxt >= y:
                break
            dt = _segment_time((y - nxt) / (y - b), n / n_pts, eta)
            s += dt
            if eta is None:
                b = float(nxt)
            else:  # first GD iterate at or beyond the threshold
                b = y - (y - b) * (1.0 - eta * n / n_pts) ** round(dt / eta)
    elif b > y:
        n = int(np.searchsorted(x, b, side="right"))
        while True:
            _push(starts, bs, rates, s, b, n / n_pts)
            if n == 0:
                break
            thr = x[n - 1]  # largest truncated point; it un-truncates once b < thr
            if thr <= y:
                break
            dt = _segment_time((thr - y) / (b - y), n / n_pts, eta)
            if eta is None:
                s, b = s + dt, float(thr)
            else:
                s += dt
                b = y - (y - b) * (1.0 - eta * n / n_pts) ** round(dt / eta)
            n = int(np.searchsorted(x, b, side="left" if eta is None else "right"))
            if n == 0:
                stopped = True
                _push(starts, bs, rates, s, b, 0.0)
                break
    else:
        _push(starts, bs, rates, 0.0, b, 0.0)
    st = np.asarray(starts)
    keep = np.r_[np.diff(st) > 0, True]  # drop zero-length segments
    return Staircase(st[keep], np.asarray(bs)[keep], np.asarray(rates)[keep], y, eta, stopped)


def _push(
    starts: list[float], bs: list[float], rates: list[float], s: float, b: float, rate: float
) -> None:
    """Open a staircase segment at time ``s`` with value ``b`` and rate ``rate``."""
    starts.append(s)
    bs.append(b)
    rates.append(rate)


def staircase_gd(
    x: NDArray[np.float64], y: float, b0: float, *, eta: float, n_steps: int
) -> Trajectory:
    """Plain gradient descent ``b_{k+1} = b_k + eta n(b_k)/N (y - b_k)``, step by step.

    The reference implementation for :func:`staircase` with ``eta``.

    Returns
    -------
    Trajectory
        ``ts = k eta`` of shape (n_steps + 1,) and ``ys = b_k`` of shape (n_steps + 1,).
    """
    x = np.sort(check_array(x, "x", ndim=1, dtype=np.float64, min_size=1))
    out = np.empty(n_steps + 1)
    b, n_pts = float(b0), x.size
    for k in range(n_steps + 1):
        out[k] = b
        n = int(np.searchsorted(x, b, side="right"))
        b = b + eta * n / n_pts * (y - b)
    ts = np.asarray(np.arange(n_steps + 1) * eta, dtype=np.float64)
    return Trajectory(ts, out, n_evals=n_steps + 1)
