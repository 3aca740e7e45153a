"""Initial states for the theory of [1]: random, E = 0, E negative, and equal biases with E = 0.

All return a :class:`~ncdynamics.theories.ntk_collapse.model.State` and draw only from the
``rng`` given.
"""

from __future__ import annotations

import numpy as np

from ..._validation import check_scalar
from .decomposition import compose_features
from .limits import psd_sqrt
from .model import BlockParams, State

__all__ = [
    "init_equal_bias",
    "init_negative_invariant",
    "init_random",
    "init_zero_invariant",
]


def _orthonormal(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    if k > n:
        raise ValueError(f"`n_features` must be >= {k} for this initialiser; got {n}.")
    Q, _ = np.linalg.qr(rng.standard_normal((n, k)))
    return Q


def init_random(
    params: BlockParams,
    *,
    rng: np.random.Generator,
    feature_scale: float = 1.0,
    weight_scale: float = 1.0,
    bias_scale: float = 0.0,
) -> State:
    """Gaussian ``H`` (std ``feature_scale``), ``W`` (std ``weight_scale / sqrt(n)``) and ``b``."""
    fs = check_scalar(feature_scale, "feature_scale", low=0.0)
    ws = check_scalar(weight_scale, "weight_scale", low=0.0)
    bs = check_scalar(bias_scale, "bias_scale", low=0.0)
    n, N, C = params.n_features, params.n_samples, params.n_classes
    return State(
        fs * rng.standard_normal((n, N)),
        ws / np.sqrt(n) * rng.standard_normal((C, n)),
        bs * rng.standard_normal(C),
    )


def init_zero_invariant(
    params: BlockParams,
    *,
    rng: np.random.Generator,
    feature_scale: float = 1.0,
    within_scale: float = 0.5,
) -> State:
    """A state with ``E = 0`` (eq. (26)), ``<h> = 0`` and ``b = 1/C 1`` ([1], Theorem 5.2).

    ``H1`` (centred, ``H1 1 = 0``) and ``H2`` lie in the span of an orthonormal
    ``U`` (n, C); ``W = (U^T A U)^{1/2} U^T`` with ``A = (m/mu_class) H1 H1^T +
    (m/mu_single) H2 H2^T``, so that ``W^T W / m`` cancels the feature terms of E.
    """
    fs = check_scalar(feature_scale, "feature_scale", low=0.0, closed="neither")
    ws = check_scalar(within_scale, "within_scale", low=0.0)
    p = params
    C, m, n = p.n_classes, p.n_per_class, p.n_features
    U = _orthonormal(n, C, rng)
    P = np.eye(C) - 1.0 / C
    H1 = fs * U @ rng.standard_normal((C, C)) @ P  # (n, C), H1 1 = 0
    H2 = ws * U @ rng.standard_normal((C, C * (m - 1)))  # (n, N - C)
    A = (m / p.mu_class) * H1 @ H1.T + (m / p.mu_single) * H2 @ H2.T
    W = psd_sqrt(U.T @ A @ U) @ U.T
    return State(compose_features(H1, H2), W, np.full(C, 1.0 / C))


def init_negative_invariant(
    params: BlockParams,
    *,
    rng: np.random.Generator,
    feature_scale: float = 3.0,
    weight_scale: float = 0.05,
) -> State:
    """Large features and a small classifier, so that E (and E~ of eq. (45)) is negative
    definite on the span of the features: the loss still vanishes but NC1 fails ([1],
    App. B.3). Class means are centred and ``b = 1/C``.
    """
    fs = check_scalar(feature_scale, "feature_scale", low=0.0, closed="neither")
    ws = check_scalar(weight_scale, "weight_scale", low=0.0)
    p = params
    C, m, n = p.n_classes, p.n_per_class, p.n_features
    P = np.eye(C) - 1.0 / C
    H1 = fs * rng.standard_normal((n, C)) @ P
    H2 = fs * rng.standard_normal((n, C * (m - 1)))
    W = ws / np.sqrt(n) * rng.standard_normal((C, n))
    return State(compose_features(H1, H2), W, np.full(C, 1.0 / C))


def init_equal_bias(
    params: BlockParams,
    *,
    rng: np.random.Generator,
    beta: float = 0.6,
    mean_scale: float = 1.0,
    offset: float = 0.5,
) -> State:
    """A symmetric state with E = 0, ``H2 = 0`` and ``b = beta 1`` ([1], App. B.4).

    ``H1 = a U P + v u 1^T`` and ``W = p P U^T + q 1 u^T`` with ``U`` (n, C) and ``u``
    orthonormal, ``P = I - 1 1^T / C``, ``p = a sqrt(m / mu_class)`` and
    ``q = v sqrt(m (1 - alpha C) / mu_class)``. ``a = mean_scale``, ``v = offset``.
    """
    beta = check_scalar(beta, "beta")
    a = check_scalar(mean_scale, "mean_scale", low=0.0, closed="neither")
    v = check_scalar(offset, "offset")
    p_ = params
    C, m, n = p_.n_classes, p_.n_per_class, p_.n_features
    Q = _orthonormal(n, C + 1, rng)
    U, u = Q[:, :C], Q[:, C:]
    P = np.eye(C) - 1.0 / C
    one = np.ones((1, C))
    H1 = a * U @ P + v * u @ one
    pw = a * np.sqrt(m / p_.mu_class)
    qw = v * np.sqrt(m * (1.0 - p_.alpha * C) / p_.mu_class)
    W = pw * P @ U.T + qw * one.T @ u.T
    H2 = np.zeros((n, C * (m - 1)))
    return State(compose_features(H1, H2), W, np.full(C, beta))
