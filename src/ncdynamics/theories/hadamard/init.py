"""Initialisations of the UFM: random, Hadamard, matched Hadamard and Theorem 8's Gaussian.

Hadamard initialisation for general ``n`` and ``d >= K - 1`` uses the construction below
(the paper's ``D_Z = [D_a, 0] = D_a ⊗ e_1^T`` is inconsistent for ``n > 1``; erratum 4 of
docs/theories/hadamard.md)::

    W = Σ_i α_i u_i r_i^T,    H = Σ_i β_i r_i v_i^T,    v_i = u_i ⊗ 1_n / √n

over the nontrivial modes ``i = 1..K-1``, with ``u_i`` the columns of ``U = Φ/√K`` and ``r_i``
orthonormal columns of a rotation ``R`` (first ``K - 1`` columns). Then
``Z = (U diag(0, a/√n) U^T) ⊗ 1_n^T`` and ``σ_i(Z) = a_i = α_i β_i``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from .metrics import reduced_basis, top_singular_values
from .structure import check_power_of_two

__all__ = [
    "HadamardInit",
    "Theorem8Init",
    "haar_orthogonal",
    "hadamard_init",
    "matched_hadamard_init",
    "random_init",
    "theorem8_init",
]


def haar_orthogonal(
    d: int, *, rng: np.random.Generator, size: int | None = None
) -> NDArray[np.float64]:
    """Haar-random orthogonal ``d × d`` matrices (QR of a Gaussian with the sign fix).

    Returns shape (d, d), or (size, d, d) when ``size`` is given.
    """
    d = check_int(d, "d", low=1)
    shape = (d, d) if size is None else (check_int(size, "size", low=1), d, d)
    Q, Rm = np.linalg.qr(rng.standard_normal(shape))
    signs = np.sign(np.diagonal(Rm, axis1=-2, axis2=-1))
    signs[signs == 0] = 1.0
    out: NDArray[np.float64] = Q * signs[..., None, :]
    return out


def random_init(
    n_classes: int,
    d: int,
    *,
    n: int = 1,
    delta: float = 6.0,
    n_realizations: int = 1,
    rng: np.random.Generator,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """I.i.d. Gaussian ``W, H`` with entries ``e^{-δ} N(0, 1) / √K`` ([1], §6.1 and App. E.3).

    ``δ = 6`` is the paper's "infinitesimal" scale (std ≈ 1.2e-3 for K = 4), ``δ = 0`` the
    "standard" one (variance 1/K). Works for any ``K >= 2``.

    Parameters
    ----------
    n_classes : int
        ``K`` in [1].
    d : int
        Width.
    n : int, default=1
        Samples per class.
    delta : float, default=6.0
    n_realizations : int, default=1
        ``R``.
    rng : numpy.random.Generator

    Returns
    -------
    W : ndarray of shape (R, K, d)
    H : ndarray of shape (R, d, K n)
    """
    K = check_int(n_classes, "n_classes", low=2)
    d = check_int(d, "d", low=1)
    n = check_int(n, "n", low=1)
    delta = check_scalar(delta, "delta")
    R = check_int(n_realizations, "n_realizations", low=1)
    std = np.exp(-delta) / np.sqrt(K)
    W = std * rng.standard_normal((R, K, d))
    H = std * rng.standard_normal((R, d, K * n))
    return W, H


def hadamard_init(
    alpha: Any,
    beta: Any | None = None,
    *,
    d: int,
    n: int = 1,
    rotation: Any | None = None,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Hadamard initialisation of Theorem 2 of [1] (working construction, module docstring).

    Parameters
    ----------
    alpha : array_like of shape (K-1,) or (R, K-1)
        Nontrivial singular values of W (modes 1..K-1); ``K`` must be a power of two.
    beta : array_like, same shape as ``alpha``, optional
        Singular values of H; defaults to ``alpha`` (the balanced case ``C_i = 0``).
    d : int
        Width, at least ``K - 1``.
    n : int, default=1
    rotation : array_like of shape (d, d) or (R, d, d), optional
        Orthogonal ``R``; the identity if omitted (the dynamics do not depend on it).

    Returns
    -------
    W : ndarray of shape (R, K, d)   (R = 1 for 1-d ``alpha``)
    H : ndarray of shape (R, d, K n)
    """
    alpha = check_array(alpha, "alpha", dtype=np.float64)
    beta = alpha if beta is None else check_array(beta, "beta", dtype=np.float64)
    if alpha.ndim == 1:
        alpha, beta = alpha[None], np.reshape(beta, (1, -1))
    if alpha.ndim != 2 or beta.shape != alpha.shape:
        raise ValueError(
            f"`alpha` and `beta` must share a shape (K-1,) or (R, K-1); got {alpha.shape} "
            f"and {beta.shape}."
        )
    R, k1 = alpha.shape
    K = check_power_of_two(k1 + 1, "alpha.shape[-1] + 1")
    d = check_int(d, "d", low=1)
    if d < K - 1:
        raise ValueError(f"`d` must be >= K-1 = {K - 1} for Hadamard initialisation; got {d}.")
    n = check_int(n, "n", low=1)
    if rotation is None:
        Rot = np.broadcast_to(np.eye(d), (R, d, d))
    else:
        Rot = check_array(rotation, "rotation", dtype=np.float64)
        Rot = np.broadcast_to(Rot, (R, d, d)) if Rot.ndim == 2 else Rot
        if Rot.shape != (R, d, d):
            raise ValueError(
                f"`rotation` must have shape ({d}, {d}) or ({R}, {d}, {d}); "
                f"got {np.shape(rotation)}."
            )
    U, V = reduced_basis(K, n)  # (K, K-1), (Kn, K-1)
    r = Rot[:, :, : K - 1]  # (R, d, K-1)
    W = np.einsum("ki,ri,rdi->rkd", U, alpha, r)
    H = np.einsum("rdi,ri,ji->rdj", r, beta, V)
    return W, H


@dataclass(frozen=True)
class HadamardInit:
    """Matched Hadamard initialisation.

    Attributes
    ----------
    W : ndarray of shape (R, K, d)
    H : ndarray of shape (R, d, K n)
    sigma0 : ndarray of shape (R, K-1)
        Logit singular values ``a_i = α_i β_i`` of modes 1..K-1 (original units).
    """

    W: NDArray[np.float64]
    H: NDArray[np.float64]
    sigma0: NDArray[np.float64]


def matched_hadamard_init(
    W_random: Any, H_random: Any, *, n: int = 1, rng: np.random.Generator | None = None
) -> HadamardInit:
    """Hadamard init with the same top ``K-1`` logit singular values as a random init.

    Implements the comparison of [1], §6.1: ``α_i = β_i = √σ_i(Z_rand(0))`` (so that
    ``a_i = σ_i``; the literal text would give ``a = σ²``, erratum 5), sorted values assigned
    to modes 1..K-1 in descending order, trivial mode 0, and a Haar-random ``R`` when ``rng``
    is given (identity otherwise).
    """
    W_random = check_array(W_random, "W_random", ndim=3, dtype=np.float64)
    H_random = check_array(H_random, "H_random", ndim=3, dtype=np.float64)
    R, K, d = W_random.shape
    sigma = top_singular_values(W_random @ H_random)  # (R, K-1)
    alpha = np.sqrt(sigma)
    rot = None if rng is None else haar_orthogonal(d, rng=rng, size=R)
    W, H = hadamard_init(alpha, alpha, d=d, n=n, rotation=rot)
    return HadamardInit(W, H, sigma)


@dataclass(frozen=True)
class Theorem8Init:
    """Gaussian initialisation of Theorem 8 of [1]: ``W = ε A_1/√d``, ``H = ε A_0/√d``.

    Attributes
    ----------
    W : ndarray of shape (R, K, d)
    H : ndarray of shape (R, d, K n)
    A1 : ndarray of shape (R, K, d)
    A0 : ndarray of shape (R, d, K n)
    eps : float
    """

    W: NDArray[np.float64]
    H: NDArray[np.float64]
    A1: NDArray[np.float64]
    A0: NDArray[np.float64]
    eps: float


def theorem8_init(
    n_classes: int,
    d: int,
    *,
    n: int = 1,
    eps: float,
    n_realizations: int = 1,
    rng: np.random.Generator,
) -> Theorem8Init:
    """Draw Theorem 8's initialisation (note the ``d^{-1/2}`` scaling, unlike §6.1).

    ``n_classes`` is ``K`` in [1]; ``A1`` (R, K, d) is drawn before ``A0`` (R, d, K n).
    """
    K = check_int(n_classes, "n_classes", low=2)
    d = check_int(d, "d", low=1)
    n = check_int(n, "n", low=1)
    eps = check_scalar(eps, "eps", low=0, closed="neither")
    R = check_int(n_realizations, "n_realizations", low=1)
    A1 = rng.standard_normal((R, K, d))
    A0 = rng.standard_normal((R, d, K * n))
    c = eps / np.sqrt(d)
    return Theorem8Init(c * A1, c * A0, A1, A0, eps)
