"""Right-hand sides of the two-point alignment theory [1] (float64 NumPy).

State layout (time-first trajectories, ``docs/axes.md``): the three-variable state is
``y = (a, b, w)`` with ``a = ||dh||^2``, ``b = ||dy||^2`` and ``w = ||dy||^2 - dy.(y2 - y1)``.
Rates are stored as ``inv_tau_h = 1/tau_h`` (encoder) and ``inv_tau_y = 1/tau_y``
(decoder); the ratio that sets the final distance is ``rho = inv_tau_h / inv_tau_y``
(``= tau_y / tau_h``).

The ``1/a`` terms make the system stiff as ``a -> 0`` (the origin is a singular saddle);
integrate with LSODA or an implicit method and an absolute tolerance well below the
smallest initial ``b`` (network starts have ``b ~ 1e-8``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_option, check_scalar
from ..integrate import Trajectory, solve_ode

__all__ = [
    "VARIANTS",
    "AlignmentParams",
    "VectorParams",
    "drift",
    "drift_matrix",
    "drift_reduced",
    "drift_vector",
    "jacobian",
    "jacobian_reduced",
    "simulate_matrix",
]

Variant = Literal["eq7", "factor-two", "square", "minus-sign", "term-removed"]
#: The system (7) and the four one-term alternatives of [1], eq. (51), App. C.1.
VARIANTS: tuple[str, ...] = ("eq7", "factor-two", "square", "minus-sign", "term-removed")


@dataclass(frozen=True)
class AlignmentParams:
    """Parameters of the three-variable system (7) of [1].

    Attributes
    ----------
    inv_tau_h : float
        Encoder rate ``1/tau_h`` (> 0).
    inv_tau_y : float
        Decoder rate ``1/tau_y`` (> 0).
    X : float
        Squared input distance ``||x2 - x1||^2`` (> 0).
    Y : float
        Squared target distance ``||y2 - y1||^2`` (>= 0).
    variant : str, default="eq7"
        ``"eq7"`` or one of the alternatives of eq. (51): ``"factor-two"`` (db/dt doubled),
        ``"square"`` (da/dt uses ``w**2``), ``"minus-sign"`` (sign of the last dw/dt term
        flipped), ``"term-removed"`` (the ``X b / a`` term of db/dt dropped).
    """

    inv_tau_h: float
    inv_tau_y: float
    X: float
    Y: float
    variant: str = "eq7"

    def __post_init__(self) -> None:
        check_scalar(self.inv_tau_h, "inv_tau_h", low=0.0, closed="neither")
        check_scalar(self.inv_tau_y, "inv_tau_y", low=0.0, closed="neither")
        check_scalar(self.X, "X", low=0.0, closed="neither")
        check_scalar(self.Y, "Y", low=0.0)
        check_option(self.variant, "variant", VARIANTS)

    @property
    def rho(self) -> float:
        """``tau_y / tau_h = inv_tau_h / inv_tau_y``."""
        return self.inv_tau_h / self.inv_tau_y


def drift(t: float, y: NDArray[np.float64], params: AlignmentParams) -> NDArray[np.float64]:
    """Right-hand side of the three-variable system, [1] eq. (7) (= (21)), or eq. (51).

    Implements::

        da/dt = -(1/tau_h) X w
        db/dt = -w ((1/tau_y) a + (1/tau_h) X b / a)
        dw/dt = -(1/tau_y) (3w - b + Y) a / 2 - (1/tau_h) X (b + w) w / (2a)

    with one term changed for the ``params.variant`` alternatives of eq. (51).

    Parameters
    ----------
    t : float
        Time (unused; the system is autonomous).
    y : ndarray of shape (3,) or (..., 3)
        ``(a, b, w)``; leading axes are broadcast.
    params : AlignmentParams

    Returns
    -------
    ndarray shaped like ``y``.
    """
    a, b, w = y[..., 0], y[..., 1], y[..., 2]
    rh, ry, X, Y, v = params.inv_tau_h, params.inv_tau_y, params.X, params.Y, params.variant
    da = -rh * X * (w * w if v == "square" else w)
    db = -w * (ry * a + (0.0 if v == "term-removed" else rh * X * b / a))
    if v == "factor-two":
        db = 2.0 * db
    last = 0.5 * rh * X * (b + w) * w / a
    dw = -0.5 * ry * (3.0 * w - b + Y) * a + (last if v == "minus-sign" else -last)
    return np.stack([da, db, dw], axis=-1)


def jacobian(t: float, y: NDArray[np.float64], params: AlignmentParams) -> NDArray[np.float64]:
    """Analytic Jacobian ``d drift / d (a, b, w)`` of eq. (7) / (51), shape (3, 3)."""
    a, b, w = float(y[0]), float(y[1]), float(y[2])
    rh, ry, X, Y, v = params.inv_tau_h, params.inv_tau_y, params.X, params.Y, params.variant
    J = np.zeros((3, 3))
    J[0, 2] = -rh * X * (2.0 * w if v == "square" else 1.0)
    k = 0.0 if v == "term-removed" else 1.0
    c = 2.0 if v == "factor-two" else 1.0
    J[1, 0] = c * (-w * ry + k * rh * X * w * b / a**2)
    J[1, 1] = c * (-k * rh * X * w / a)
    J[1, 2] = c * (-(ry * a + k * rh * X * b / a))
    s = 1.0 if v == "minus-sign" else -1.0
    J[2, 0] = -0.5 * ry * (3.0 * w - b + Y) - s * 0.5 * rh * X * (b + w) * w / a**2
    J[2, 1] = 0.5 * ry * a + s * 0.5 * rh * X * w / a
    J[2, 2] = -1.5 * ry * a + s * 0.5 * rh * X * (b + 2.0 * w) / a
    return J


@dataclass(frozen=True)
class VectorParams:
    """Parameters of the vector form (20) for any output dimension.

    Attributes
    ----------
    inv_tau_h, inv_tau_y, X : float
        As in :class:`AlignmentParams`.
    target_diff : ndarray of shape (d_out,)
        ``y2 - y1``.
    """

    inv_tau_h: float
    inv_tau_y: float
    X: float
    target_diff: NDArray[np.float64]

    def __post_init__(self) -> None:
        check_scalar(self.inv_tau_h, "inv_tau_h", low=0.0, closed="neither")
        check_scalar(self.inv_tau_y, "inv_tau_y", low=0.0, closed="neither")
        check_scalar(self.X, "X", low=0.0, closed="neither")
        check_array(self.target_diff, "target_diff", ndim=1, min_size=1)


def drift_vector(t: float, y: NDArray[np.float64], params: VectorParams) -> NDArray[np.float64]:
    """Vector form of the reduced dynamics, [1] eq. (20) (App. A.1), any ``d_out``.

    State ``y = (a, dy_1, ..., dy_dout)``, shape (1 + d_out,)::

        da/dt  = -(1/tau_h) X w,                  w = |dy|^2 - dy.(y2 - y1)
        ddy/dt = -(1/(2 tau_y)) (dy - (y2 - y1)) a - (X/(2 tau_h)) (w/a) dy

    ``(a, |dy|^2, w)`` computed from it solve eq. (7).
    """
    a, dy = y[0], y[1:]
    d = np.asarray(params.target_diff, dtype=np.float64)
    w = dy @ dy - dy @ d
    rh, ry, X = params.inv_tau_h, params.inv_tau_y, params.X
    da = -rh * X * w
    ddy = -0.5 * ry * (dy - d) * a - 0.5 * X * rh * (w / a) * dy
    return np.concatenate([[da], ddy])


def drift_reduced(
    t: float, y: NDArray[np.float64], params: AlignmentParams, c: float
) -> NDArray[np.float64]:
    """The two-variable system in ``(a, w)``, [1] eq. (25), as printed.

    ``c = b(0)/a(0) - (tau_h/tau_y) a(0)/X`` is fixed by the start (eq. (24)); with
    ``rho = tau_y/tau_h``::

        da/dt = -(1/tau_h) X w
        dw/dt = -1/2 ( -(tau_h/tau_y^2) a^3 / X + (1/tau_y) Y a + (4/tau_y) a w
                       + (1/tau_h) X w^2 / a + c ((1/tau_h) X w - (1/tau_y) a^2) )
    """
    a, w = y[..., 0], y[..., 1]
    rh, ry, X, Y = params.inv_tau_h, params.inv_tau_y, params.X, params.Y
    da = -rh * X * w
    dw = -0.5 * (
        -(ry**2 / rh) * a**3 / X
        + ry * Y * a
        + 4.0 * ry * a * w
        + rh * X * w**2 / a
        + c * (rh * X * w - ry * a**2)
    )
    return np.stack([da, dw], axis=-1)


def jacobian_reduced(
    y: NDArray[np.float64], params: AlignmentParams, c: float
) -> NDArray[np.float64]:
    """Analytic Jacobian of eq. (25) in ``(a, w)``, shape (2, 2) (valid for ``a > 0``)."""
    a, w = float(y[0]), float(y[1])
    rh, ry, X, Y = params.inv_tau_h, params.inv_tau_y, params.X, params.Y
    return np.array(
        [
            [0.0, -rh * X],
            [
                -0.5
                * (
                    -3.0 * (ry**2 / rh) * a**2 / X
                    + ry * Y
                    + 4.0 * ry * w
                    - rh * X * w**2 / a**2
                    - 2.0 * c * ry * a
                ),
                -0.5 * (4.0 * ry * a + 2.0 * rh * X * w / a + c * rh * X),
            ],
        ]
    )


def drift_matrix(
    ybar: NDArray[np.float64],
    Dh: NDArray[np.float64],
    Dy: NDArray[np.float64],
    dx: NDArray[np.float64],
    dtarget: NDArray[np.float64],
    mean_target: NDArray[np.float64],
    rates: tuple[float, float, float],
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
    """Gradient flow of the linearisation parameters, [1] eq. (17), literally (factor 1/2).

    ::

        dybar/dt = -(1/tau_ybar) (ybar - (y2 + y1)/2)
        dDh/dt   = -(1/tau_h) (1/2) Dy^T (Dy Dh dx - dtarget) dx^T
        dDy/dt   = -(1/tau_y) (1/2) (Dy Dh dx - dtarget) (Dh dx)^T

    (Differentiating eq. (16) gives 1/4; the factor is absorbed into the rates, and the
    literal 1/2 is the one for which eq. (21) holds exactly.)

    Parameters
    ----------
    ybar : (d_out,);  Dh : (d_H, d_in);  Dy : (d_out, d_H);  dx : (d_in,) = x2 - x1;
    dtarget : (d_out,) = y2 - y1;  mean_target : (d_out,) = (y1 + y2)/2;
    rates : (inv_tau_ybar, inv_tau_h, inv_tau_y)
    """
    r_bar, rh, ry = rates
    dh = Dh @ dx  # (d_H,)
    err = Dy @ dh - dtarget  # (d_out,)
    d_ybar = -r_bar * (ybar - mean_target)
    d_Dh = -rh * 0.5 * np.outer(Dy.T @ err, dx)  # (d_H, d_in)
    d_Dy = -ry * 0.5 * np.outer(err, dh)  # (d_out, d_H)
    return d_ybar, d_Dh, d_Dy


def simulate_matrix(
    Dh0: NDArray[np.float64],
    Dy0: NDArray[np.float64],
    ybar0: NDArray[np.float64],
    x1: NDArray[np.float64],
    x2: NDArray[np.float64],
    y1: NDArray[np.float64],
    y2: NDArray[np.float64],
    ts: NDArray[np.float64],
    *,
    inv_tau_ybar: float,
    inv_tau_h: float,
    inv_tau_y: float,
    rtol: float = 1e-10,
    atol: float = 1e-14,
) -> Trajectory:
    """Integrate the matrix model (17) of [1] and return ``a, b, w, ybar`` over ``ts``.

    The model's state ``(ybar, D_h, D_y)`` is integrated with
    :func:`ncdynamics.theories.integrate.solve_ode` (LSODA) and reduced to the pair
    observables of the three-variable system and the output mean.

    Parameters
    ----------
    Dh0 : ndarray of shape (d_H, d_in)
    Dy0 : ndarray of shape (d_out, d_H)
    ybar0 : ndarray of shape (d_out,)
    x1, x2 : ndarray of shape (d_in,)
    y1, y2 : ndarray of shape (d_out,)
    ts : ndarray of shape (n_times,), increasing
    inv_tau_ybar, inv_tau_h, inv_tau_y : float
        The rates of ``ybar``, ``D_h`` and ``D_y``.
    rtol, atol : float
        Solver tolerances.

    Returns
    -------
    Trajectory
        ``ys`` of shape (n_times, 3 + d_out): columns ``(a, b, w)`` (as in the state of
        :func:`drift`, so ``ys[:, :3]`` compares directly with a solution of eq. (7)),
        then ``ybar`` (``d_out`` columns).

    Raises
    ------
    RuntimeError
        If the solver fails.
    """
    Dh0 = check_array(Dh0, "Dh0", ndim=2, dtype=np.float64)
    Dy0 = check_array(Dy0, "Dy0", shape=(None, Dh0.shape[0]), dtype=np.float64)
    d_out, (d_H, d_in) = Dy0.shape[0], Dh0.shape
    ybar0 = check_array(ybar0, "ybar0", shape=(d_out,), dtype=np.float64)
    x1 = check_array(x1, "x1", shape=(d_in,), dtype=np.float64)
    x2 = check_array(x2, "x2", shape=(d_in,), dtype=np.float64)
    y1 = check_array(y1, "y1", shape=(d_out,), dtype=np.float64)
    y2 = check_array(y2, "y2", shape=(d_out,), dtype=np.float64)
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=2)
    dx, dt, m = x2 - x1, y2 - y1, 0.5 * (y1 + y2)
    rates = (inv_tau_ybar, inv_tau_h, inv_tau_y)
    split = np.cumsum([d_out, d_H * d_in])

    def rhs(_t: float, z: NDArray[np.float64], _params: None) -> NDArray[np.float64]:
        yb, Dh, Dy = np.split(z, split)
        parts = drift_matrix(yb, Dh.reshape(d_H, d_in), Dy.reshape(d_out, d_H), dx, dt, m, rates)
        return np.concatenate([p.ravel() for p in parts])

    z0 = np.concatenate([ybar0, Dh0.ravel(), Dy0.ravel()])
    sol = solve_ode(rhs, z0, ts, None, method="LSODA", rtol=rtol, atol=atol)
    if not sol.success:
        raise RuntimeError(f"matrix model solve failed: {sol.message}")
    yb, Dh, Dy = np.split(sol.ys, split, axis=1)
    dh = np.einsum("thi,i->th", Dh.reshape(-1, d_H, d_in), dx)  # (T, d_H)
    dy = np.einsum("toh,th->to", Dy.reshape(-1, d_out, d_H), dh)  # (T, d_out)
    b = np.sum(dy**2, axis=1)
    observables = np.column_stack([np.sum(dh**2, axis=1), b, b - dy @ dt, yb])
    return Trajectory(ts, observables, sol.success, sol.message, sol.n_evals)
