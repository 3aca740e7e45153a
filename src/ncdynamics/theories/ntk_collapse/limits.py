"""Limits of the flow when E = 0 ([1], Theorem 5.2 and App. B.4), with the corrected theta.

With ``E = 0``, ``H2 -> 0`` and ``R1 -> 0`` the classifier Gram matrix satisfies ([1], eq. (60))::

    (W W^T)^2 -> (m / mu_class) (I - alpha 1 1^T + (1 - alpha C)(C b b^T - b 1^T - 1 b^T))

and the class means ([1], eq. (63))::

    H1^T H1 (I - alpha 1 1^T) H1^T H1 -> (mu_class / m)(I - b 1^T - 1 b^T + ||b||^2 1 1^T).

For equal biases ``b = beta 1`` both have closed forms ([1], eqs. (62), (66)/(68)):

    W W^T   -> sqrt(m / mu_class) (I - gamma 1 1^T),
    H1^T H1 -> sqrt(mu_class / m) (I - theta 1 1^T),
    gamma = (1 - |1 - beta C| sqrt(1 - alpha C)) / C,
    theta = (1 - |1 - beta C| / sqrt(1 - alpha C)) / C.

Erratum: [1] prints ``theta = (1 - |1 - beta C| / (2 - sqrt(1 - alpha C))) / C``, which
mis-inverts ``I - phi 1 1^T``; :func:`equal_bias_coefficients` returns both and the tests show
which one the flow reaches. For ``b = 1/C 1`` (centred features, Theorem 5.2), ``gamma =
theta = 1/C`` and the limits are the simplex ETF of eq. (58) (with the factor m that the second
line of eq. (57) omits).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_scalar
from .model import BlockParams

__all__ = [
    "EqualBiasCoefficients",
    "LimitPrediction",
    "equal_bias_coefficients",
    "predict_limits",
    "psd_sqrt",
]


def psd_sqrt(A: NDArray) -> NDArray[np.float64]:
    """The PSD square root of a symmetric matrix (negative eigenvalues clipped at 0)."""
    A = check_array(A, "A", ndim=2, dtype=np.float64)
    w, V = np.linalg.eigh((A + A.T) / 2)
    return (V * np.sqrt(np.clip(w, 0.0, None))) @ V.T


@dataclass(frozen=True)
class EqualBiasCoefficients:
    """``gamma`` of eq. (62), the corrected ``theta`` and the ``theta`` printed in eq. (68)."""

    gamma: float
    theta: float
    theta_paper: float


def equal_bias_coefficients(alpha: float, beta: float, n_classes: int) -> EqualBiasCoefficients:
    """Coefficients of the equal-bias limits ([1], App. B.4, eqs. (61)-(68)).

    ``gamma = (1 - |1 - beta C| sqrt(1 - alpha C)) / C``;
    ``theta = (1 - |1 - beta C| / sqrt(1 - alpha C)) / C`` (corrected);
    ``theta_paper = (1 - |1 - beta C| / (2 - sqrt(1 - alpha C))) / C`` (as printed),
    with ``C = n_classes``, ``alpha`` in ``[0, 1/C)`` and ``beta`` the common bias.
    """
    C = int(n_classes)
    a = check_scalar(alpha, "alpha", low=0.0, high=1.0 / C, closed="left")
    beta = check_scalar(beta, "beta")
    s = np.sqrt(1.0 - a * C)
    dev = abs(1.0 - beta * C)
    return EqualBiasCoefficients(
        gamma=(1.0 - dev * s) / C,
        theta=(1.0 - dev / s) / C,
        theta_paper=(1.0 - dev / (2.0 - s)) / C,
    )


@dataclass(frozen=True)
class LimitPrediction:
    """Predicted end-of-training Gram matrices for E = 0 and a given final bias.

    Attributes
    ----------
    WWt : ndarray of shape (C, C)
        PSD root of the right side of eq. (60).
    H1tH1 : ndarray of shape (C, C)
        PSD solution X of ``X (I - alpha 1 1^T) X = RHS(63)``.
    centred_gram : ndarray of shape (C, C)
        ``Mc^T Mc`` of the centred class means, ``P H1^T H1 P`` with ``P = I - 1 1^T / C``
        (eq. (67): ``sqrt(mu_class / m) P``).
    """

    WWt: NDArray[np.float64]
    H1tH1: NDArray[np.float64]
    centred_gram: NDArray[np.float64]


def predict_limits(params: BlockParams, bias: NDArray) -> LimitPrediction:
    """End-of-training limits for E = 0, H2 -> 0 and final bias ``b`` ([1], eqs. (60), (63)).

    ``X (I - a 1 1^T) X = B`` is solved as ``X = A^-1/2 (A^1/2 B A^1/2)^1/2 A^-1/2`` with
    ``A = I - a 1 1^T``, the unique PSD solution.
    """
    p = params
    C, m = p.n_classes, p.n_per_class
    b = check_array(bias, "bias", shape=(C,), dtype=np.float64)
    one = np.ones((C, 1))
    I = np.eye(C)
    a = p.alpha
    rhs60 = (m / p.mu_class) * (
        I
        - a * one @ one.T
        + (1 - a * C) * (C * np.outer(b, b) - b[:, None] @ one.T - one @ b[None, :])
    )
    rhs63 = (p.mu_class / m) * (
        I - b[:, None] @ one.T - one @ b[None, :] + float(b @ b) * one @ one.T
    )
    A = I - a * one @ one.T
    A_half = psd_sqrt(A)
    A_mhalf = np.linalg.inv(A_half)
    X = A_mhalf @ psd_sqrt(A_half @ rhs63 @ A_half) @ A_mhalf
    P = I - one @ one.T / C
    return LimitPrediction(psd_sqrt(rhs60), X, P @ X @ P)
