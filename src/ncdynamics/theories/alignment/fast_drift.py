"""Fast path of the three-variable drift (7)/(51) of [1] and its Jacobian, for the fit.

The reference is :func:`.model.drift` / :func:`.model.jacobian` (vectorised NumPy, readable).
Fitting the rates integrates eq. (7) hundreds of times per trajectory, and there the Python
overhead of the vectorised reference dominates: these scalar kernels return plain lists, take
the parameters as positional floats in the ``(y, t, *args)`` calling convention of
``scipy.integrate.odeint``, and pre-resolve the ``variant`` into four numeric switches
(about 10x less overhead per call). ``tests/theories/test_alignment_fast_drift.py`` checks
them against the reference and against finite differences of the reference.

Usage::

    args = odeint_args(params)
    odeint(drift, y0, ts, args=args, Dfun=jacobian)
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from .model import AlignmentParams

__all__ = ["drift", "jacobian", "odeint_args"]


def odeint_args(params: AlignmentParams) -> tuple[float, ...]:
    """The positional arguments of :func:`drift` and :func:`jacobian` for ``params``.

    Returns
    -------
    tuple of float
        ``(rh, ry, X, Y, square, factor, keep_term, sign)``: the rates ``1/tau_h``,
        ``1/tau_y``, ``X``, ``Y``, then 1.0 if da/dt uses ``w**2`` (``"square"``), the factor
        of db/dt (2.0 for ``"factor-two"``), 0.0 if the ``X b / a`` term of db/dt is dropped
        (``"term-removed"``), and the sign of the last dw/dt term (+1.0 for
        ``"minus-sign"``, else -1.0).
    """
    v = params.variant
    return (
        params.inv_tau_h,
        params.inv_tau_y,
        params.X,
        params.Y,
        float(v == "square"),
        2.0 if v == "factor-two" else 1.0,
        0.0 if v == "term-removed" else 1.0,
        1.0 if v == "minus-sign" else -1.0,
    )


def drift(
    y: NDArray[np.float64],
    t: float,
    rh: float,
    ry: float,
    X: float,
    Y: float,
    sq: float,
    c: float,
    k: float,
    s: float,
) -> list[float]:
    """Scalar form of :func:`.model.drift` (eq. (7), or an alternative of eq. (51)).

    ``y = (a, b, w)`` of shape (3,); the remaining arguments are :func:`odeint_args`.
    """
    a, b, w = y[0], y[1], y[2]
    return [
        -rh * X * (w * w if sq else w),
        -c * w * (ry * a + k * rh * X * b / a),
        -0.5 * ry * (3.0 * w - b + Y) * a + s * 0.5 * rh * X * (b + w) * w / a,
    ]


def jacobian(
    y: NDArray[np.float64],
    t: float,
    rh: float,
    ry: float,
    X: float,
    Y: float,
    sq: float,
    c: float,
    k: float,
    s: float,
) -> list[list[float]]:
    """Scalar form of :func:`.model.jacobian`: ``d drift / d (a, b, w)`` as 3 rows of 3."""
    a, b, w = y[0], y[1], y[2]
    return [
        [0.0, 0.0, -rh * X * (2.0 * w if sq else 1.0)],
        [
            c * (-w * ry + k * rh * X * w * b / (a * a)),
            -c * k * rh * X * w / a,
            -c * (ry * a + k * rh * X * b / a),
        ],
        [
            -0.5 * ry * (3.0 * w - b + Y) - s * 0.5 * rh * X * (b + w) * w / (a * a),
            0.5 * ry * a + s * 0.5 * rh * X * w / a,
            -1.5 * ry * a + s * 0.5 * rh * X * (b + 2.0 * w) / a,
        ],
    ]
