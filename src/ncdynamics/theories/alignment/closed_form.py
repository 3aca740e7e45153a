"""Closed forms of the two-point alignment theory [1]: invariant, fixed points, exact
solutions, the final distance and its distribution, and the multi-point use (NumPy).

Every function is vectorised over arrays of pairs (NumPy broadcasting). ``rho`` is
``tau_y / tau_h = inv_tau_h / inv_tau_y`` throughout.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ..._validation import check_array, check_scalar
from ..integrate import Trajectory
from .model import AlignmentParams

__all__ = [
    "FixedPointStability",
    "OriginSaddle",
    "a_high",
    "a_low",
    "b_of_a",
    "conserved_q",
    "exponential_weighting",
    "final_distance",
    "final_distance_cdf",
    "final_distance_pdf",
    "fixed_point_stability",
    "identical_outputs_solution",
    "lazy_params",
    "lazy_rescale",
    "loss_curve",
    "origin_jacobian",
    "origin_saddle",
    "pairwise_theory",
    "sample_final_distance",
]


def a_high(a0: ArrayLike, b0: ArrayLike, X: ArrayLike, rho: ArrayLike) -> NDArray[np.float64]:
    """The conserved "lazy" scale, [1] eq. (11)/(28): ``A_high = a0 - rho X b0 / a0``.

    Along any solution of eq. (7), ``a - rho X b / a`` is constant (App. A.3, eq. (23)).
    """
    a0 = np.asarray(a0, dtype=np.float64)
    return a0 - np.asarray(rho) * np.asarray(X) * np.asarray(b0) / a0


def a_low(X: ArrayLike, Y: ArrayLike, rho: ArrayLike) -> NDArray[np.float64]:
    """The "rich" scale, [1] eq. (11)/(28): ``A_low = sqrt(rho X Y)``."""
    return np.sqrt(np.asarray(rho, dtype=np.float64) * np.asarray(X) * np.asarray(Y))


def conserved_q(a: ArrayLike, b: ArrayLike, X: ArrayLike, rho: ArrayLike) -> NDArray[np.float64]:
    """``Q = b/a - a/(rho X)``, conserved by eq. (7) ([1] eq. (23)); ``A_high = -rho X Q``."""
    a = np.asarray(a, dtype=np.float64)
    return np.asarray(b) / a - a / (np.asarray(rho) * np.asarray(X))


def b_of_a(a: ArrayLike, a0: float, b0: float, X: float, rho: float) -> NDArray[np.float64]:
    """``b`` as a function of ``a`` on a trajectory, [1] eq. (24)::

    b = a^2 / (rho X) + (b0/a0 - a0/(rho X)) a
    """
    a = np.asarray(a, dtype=np.float64)
    return a**2 / (rho * X) + (b0 / a0 - a0 / (rho * X)) * a


def final_distance(
    a0: ArrayLike, b0: ArrayLike, X: ArrayLike, Y: ArrayLike, rho: ArrayLike
) -> NDArray[np.float64]:
    """Final squared representational distance, [1] eq. (10)/(36)::

        ||dh(inf)||^2 = A_high/2 + sqrt(A_high^2/4 + A_low^2)

    For ``A_high < 0`` the rationalised form ``A_low^2 / (sqrt(A_high^2/4 + A_low^2)
    - A_high/2)`` is used, which avoids the cancellation of the printed form when
    ``A_high << -A_low``; ``A_high = A_low = 0`` gives 0. Depends on the rates only through
    ``rho``.
    """
    ah = a_high(a0, b0, X, rho)
    al2 = np.asarray(rho, dtype=np.float64) * np.asarray(X) * np.asarray(Y)
    return _positive_root(ah, al2)


def _positive_root(ah: ArrayLike, al2: ArrayLike) -> NDArray[np.float64]:
    """The non-negative root of ``a^2 - ah a - al2 = 0`` (eq. (27)), computed stably."""
    h, l2 = np.broadcast_arrays(np.asarray(ah, np.float64), np.asarray(al2, np.float64))
    root = np.sqrt(0.25 * h**2 + l2)
    pos = 0.5 * h + root
    den = root - 0.5 * h
    with np.errstate(divide="ignore", invalid="ignore"):
        neg = np.where(den > 0, l2 / np.where(den > 0, den, 1.0), 0.0)
    out = np.where(h >= 0, pos, neg)
    return out if out.ndim else out[()]


@dataclass(frozen=True)
class FixedPointStability:
    """The stable fixed point ``(a_inf, w = 0)`` of eq. (25) and its linearisation.

    Attributes
    ----------
    a_inf : float
        eq. (10).
    jacobian : ndarray of shape (2, 2)
        eq. (29), variables ``(a, w)``.
    trace, det : float
        eqs. (30), (31).
    """

    a_inf: float
    jacobian: NDArray[np.float64]
    trace: float
    det: float

    @property
    def stable(self) -> bool:
        return self.trace < 0 < self.det


def fixed_point_stability(ah: float, params: AlignmentParams) -> FixedPointStability:
    """Jacobian of eq. (25) at the non-trivial fixed point, [1] eqs. (29)-(31)::

    S = sqrt(A_high^2 + 4 A_low^2)
    J = [[0, -(1/tau_h) X],
         [(tau_h/tau_y^2)(2 A_low^2 + (A_high + S)^2/2) / (4X), -(1/tau_y)(A_high/2 + S)]]
    """
    rh, ry, X = params.inv_tau_h, params.inv_tau_y, params.X
    al2 = params.rho * X * params.Y
    S = np.sqrt(ah**2 + 4.0 * al2)
    J = np.array(
        [
            [0.0, -rh * X],
            [0.25 * (ry**2 / rh) / X * (2.0 * al2 + 0.5 * (ah + S) ** 2), -ry * (0.5 * ah + S)],
        ]
    )
    return FixedPointStability(
        float(_positive_root(ah, al2)), J, float(np.trace(J)), float(np.linalg.det(J))
    )


def origin_jacobian(slope: float, ah: float, params: AlignmentParams) -> NDArray[np.float64]:
    """Jacobian of eq. (25) at the origin along the direction ``w/a = slope``, [1] eq. (32)::

    J = [[0, -(1/tau_h) X],
         [((1/tau_h) X slope^2 - (1/tau_y) Y)/2, (1/tau_y) A_high/2 - (1/tau_h) X slope]]
    """
    rh, ry, X, Y = params.inv_tau_h, params.inv_tau_y, params.X, params.Y
    return np.array(
        [
            [0.0, -rh * X],
            [0.5 * (rh * X * slope**2 - ry * Y), 0.5 * ry * ah - rh * X * slope],
        ]
    )


@dataclass(frozen=True)
class OriginSaddle:
    """Eigen-directions at the origin, [1] eqs. (34)-(35).

    Attributes
    ----------
    eigenvalues : ndarray of shape (2,)
        ``(lambda_+, lambda_-) = (1/tau_y)(A_high +- S)/2``.
    eigenvectors : ndarray of shape (2, 2)
        Rows ``v_+-= (1, -(tau_h/tau_y)(A_high +- S)/(2X))`` in ``(a, w)``.
    """

    eigenvalues: NDArray[np.float64]
    eigenvectors: NDArray[np.float64]


def origin_saddle(ah: float, params: AlignmentParams) -> OriginSaddle:
    """The saddle at ``a = 0``: eigenvalues (35) and eigenvectors (34) of [1]."""
    ry, X = params.inv_tau_y, params.X
    S = np.sqrt(ah**2 + 4.0 * params.rho * X * params.Y)
    roots = np.array([ah + S, ah - S])
    vecs = np.stack([np.ones(2), -(roots / params.rho) / (2.0 * X)], axis=1)
    return OriginSaddle(0.5 * ry * roots, vecs)


def identical_outputs_solution(
    ts: ArrayLike, a0: float, b0: float, params: AlignmentParams
) -> Trajectory:
    """Exact solution of eq. (7) for identical targets (``Y = 0``, ``w = b``), [1] A.4.

    Corrected form of eqs. (39)-(40) (the printed exponent lacks ``1/tau_y``)::

        a(t) = A_high / (1 + (A_high/a0 - 1) exp(-A_high t / tau_y))
        b(t) = a (a - A_high) / (rho X)            (= the printed (40) with the fix)

    evaluated as ``a = a0 / (e + a0 (1 - e)/A_high)``, ``e = exp(-A_high t/tau_y)``, which
    stays finite as ``A_high -> 0``.

    Returns
    -------
    Trajectory
        ``ys`` of shape (n_times, 3): ``(a, b, w = b)``.
    """
    if params.Y != 0:
        raise ValueError(
            f"`params.Y` must be 0 for the identical-outputs solution; got {params.Y}."
        )
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64)
    ah = float(a_high(a0, b0, params.X, params.rho))
    r = params.inv_tau_y
    e = np.exp(-r * ah * ts)
    frac = -np.expm1(-r * ah * ts) / ah if ah != 0 else r * ts
    a = a0 / (e + a0 * frac)
    b = a * (a - ah) / (params.rho * params.X)
    return Trajectory(ts, np.stack([a, b, b], axis=1))


def _identical_outputs_printed(
    ts: NDArray[np.float64], a0: float, b0: float, params: AlignmentParams
) -> NDArray[np.float64]:
    """``a(t)`` of eq. (39) exactly as printed (exponent ``-A_high t``); for the erratum test."""
    ah = float(a_high(a0, b0, params.X, params.rho))
    return ah / (1.0 + (ah / a0 - 1.0) * np.exp(-ah * ts))


def lazy_params(params: AlignmentParams, gain: float) -> AlignmentParams:
    """Parameters of the rescaled system (43) of [1]: eq. (7) with ``Y -> Y / G^2``."""
    check_scalar(gain, "gain", low=0.0, closed="neither")
    return dataclasses.replace(params, Y=params.Y / gain**2)


def lazy_rescale(traj: Trajectory, gain: float) -> Trajectory:
    """Map a solution of eq. (7) to a solution of eq. (43), [1] A.5 (corrected map).

    ``a' = a/G, b' = b/G^2, w' = w/G^2, t' = G t``. The printed eq. (42) gives the inverse
    map; this one is the map under which eq. (43) holds (checked numerically in the tests).
    """
    G = check_scalar(gain, "gain", low=0.0, closed="neither")
    scale = np.array([1.0 / G, 1.0 / G**2, 1.0 / G**2])
    return Trajectory(traj.ts * G, traj.ys * scale, traj.success, traj.message, traj.n_evals)


def loss_curve(
    ts: ArrayLike,
    b: ArrayLike,
    w: ArrayLike,
    ybar0: ArrayLike,
    y1: ArrayLike,
    y2: ArrayLike,
    inv_tau_ybar: float,
) -> NDArray[np.float64]:
    """Training loss of the two-point problem, [1] eq. (9)/(22)::

        L(t) = |(ybar(0) - (y1 + y2)/2) exp(-t/tau_ybar)|^2 / 2 + (w + (Y - b)/2) / 4

    in the normalisation of eq. (1) (half the mean squared error).

    Parameters
    ----------
    ts, b, w : ndarray of shape (n_times,)
    ybar0, y1, y2 : ndarray of shape (d_out,)
    inv_tau_ybar : float
    """
    ts = np.asarray(ts, dtype=np.float64)
    y1, y2 = np.atleast_1d(np.asarray(y1, np.float64)), np.atleast_1d(np.asarray(y2, np.float64))
    off = np.atleast_1d(np.asarray(ybar0, np.float64)) - 0.5 * (y1 + y2)
    Y = float(np.sum((y2 - y1) ** 2))
    mean_term = 0.5 * float(off @ off) * np.exp(-2.0 * inv_tau_ybar * ts)
    return mean_term + 0.25 * (np.asarray(w) + 0.5 * (Y - np.asarray(b)))


def final_distance_cdf(h: ArrayLike, A_low: float, X: float, G: float) -> NDArray[np.float64]:
    """CDF of the final distance under random initialisation, [1] eq. (47), ``h > 0``::

        P(||dh(inf)||^2 < h) = Phi((h - A_low^2/h) / (sqrt(2) X G))

    Assumes ``A_high ~ N(0, 2 X^2 G^2)`` (eq. (46), which sets ``tau_y/tau_h = 1``).
    """
    from scipy.stats import norm

    h = np.asarray(h, dtype=np.float64)
    return norm.cdf((h - A_low**2 / h) / (np.sqrt(2.0) * X * G))


def final_distance_pdf(h: ArrayLike, A_low: float, X: float, G: float) -> NDArray[np.float64]:
    """Density of the final distance, [1] eq. (48)::

    f(h) = (1 + A_low^2/h^2) / (2 sqrt(pi) X G) exp(-((h - A_low^2/h)/(sqrt(2) X G))^2 / 2)
    """
    h = np.asarray(h, dtype=np.float64)
    z = (h - A_low**2 / h) / (np.sqrt(2.0) * X * G)
    return (1.0 + A_low**2 / h**2) / (2.0 * np.sqrt(np.pi) * X * G) * np.exp(-0.5 * z**2)


def sample_final_distance(
    n: int, A_low: float, X: float, G: float, *, rng: np.random.Generator
) -> NDArray[np.float64]:
    """Draw ``A_high ~ N(0, 2 X^2 G^2)`` ([1] eq. (46)) and return eq. (10) for each draw."""
    ah = rng.normal(0.0, np.sqrt(2.0) * X * G, size=n)
    return _positive_root(ah, np.full(n, A_low**2))


def pairwise_theory(
    X2: ArrayLike, Y2: ArrayLike, a0: ArrayLike, b0: ArrayLike, rho: float
) -> NDArray[np.float64]:
    """Eq. (10) of [1] applied to every pair (Sec. 4.4, 4.6).

    Parameters
    ----------
    X2, Y2 : ndarray of shape (n, n)
        Squared input and target distances.
    a0, b0 : ndarray of shape (n, n)
        Squared hidden and output distances at initialisation.
    rho : float

    Returns
    -------
    ndarray of shape (n, n)
        ``T_ij``, with ``T_ii = 0``.
    """
    X2 = check_array(X2, "X2", ndim=2, dtype=np.float64)
    n = X2.shape[0]
    Y2 = check_array(Y2, "Y2", shape=(n, n), dtype=np.float64)
    a0 = check_array(a0, "a0", shape=(n, n), dtype=np.float64)
    b0 = check_array(b0, "b0", shape=(n, n), dtype=np.float64)
    off = ~np.eye(n, dtype=bool)
    T = np.zeros((n, n))
    T[off] = final_distance(a0[off], b0[off], X2[off], Y2[off], rho)
    return T


def exponential_weighting(T: ArrayLike, *, beta: float = 1.0) -> NDArray[np.float64]:
    """Exponential weighting of pairwise predictions, [1] eq. (50)::

        P_ij = sum_{k,l} exp(-beta T_ik) exp(-beta T_lj) T_kl      (P = E T E, E = exp(-beta T))

    ``beta = 1`` is the paper's (no normalisation).
    """
    T = check_array(T, "T", ndim=2, dtype=np.float64)
    if T.shape[0] != T.shape[1]:
        raise ValueError(f"`T` must be square; got shape {T.shape}.")
    check_scalar(beta, "beta", low=0.0)
    E = np.exp(-beta * T)
    return E @ T @ E
