"""Distances to neural collapse: on reduced singular values, and on (W, H, Z) matrices.

Reduced metrics take ``a`` of shape ``(..., K-1)`` (any positive scale; they normalise
internally) and return shape ``(...)``. Each has its closed-form time derivative along the
reduced flow (9) of [1]. Matrix metrics take batches ``(R, K, d)``, ``(R, d, Kn)`` and so on
and return one value per realisation.

Conventions (see ``docs/theories/hadamard.md``):

- NC alignment is ``‖A/‖A‖_* - T/‖T‖_*‖_F`` with target ``T = S`` for ``W W^T``
  (``S = I_K - 1 1^T / K``, :func:`ncdynamics.theories.geometry.centering_matrix`),
  ``S ⊗ 1_n 1_n^T`` for ``H^T H`` and ``S ⊗ 1_n^T`` for ``Z`` ([1], App. E.1). Under Hadamard
  initialisation all three equal ``√(2M)`` (the paper says √M; erratum 8).
- Singular-value metrics of a general ``Z`` use its top ``K - 1`` singular values.
- The residual energy uses the *normalised* basis ``Ũ = Φ[:, 1:]/√K`` (erratum 7).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int
from ..geometry import centering_matrix
from ..ufm import ce_loss_from_logits
from .model import ReducedParams, _log_d, growth_rates, margins
from .structure import check_power_of_two, hadamard_basis

__all__ = [
    "dkl_dt",
    "dkl_dt_closed",
    "dlog_ratio_dt",
    "dm_dt",
    "dm_dt_logit",
    "dfrobenius_dt",
    "dreverse_kl_dt",
    "frobenius_metric",
    "frobenius_sum",
    "kl_uniform",
    "log_ratio_metric",
    "metric_m",
    "mode_values",
    "nc_alignment",
    "normalize_l1",
    "reduced_basis",
    "residual_energy",
    "reverse_kl",
    "thm7_threshold",
    "top_singular_values",
    "ufm_metrics",
]


# ----------------------------------------------------------------------------- reduced
def normalize_l1(a: Any) -> NDArray[np.float64]:
    """``â = a / ‖a‖₁`` along the last axis ([1], §3.3)."""
    a = np.asarray(a, dtype=np.float64)
    return a / a.sum(axis=-1, keepdims=True)


def metric_m(a: Any) -> NDArray[np.float64]:
    """``M = ½ Σ_i (â_i - 1/(K-1))²`` ([1], Eq. (12))."""
    ahat = normalize_l1(a)
    return 0.5 * ((ahat - 1.0 / ahat.shape[-1]) ** 2).sum(axis=-1)


def kl_uniform(a: Any) -> NDArray[np.float64]:
    """Lyapunov function of Thm 3 of [1]: ``D_KL(u ‖ â) = -log(K-1) - mean_i log â_i``."""
    ahat = normalize_l1(a)
    return -np.log(ahat.shape[-1]) - np.log(ahat).mean(axis=-1)


def reverse_kl(a: Any) -> NDArray[np.float64]:
    """Reverse KL ``D_KL(â ‖ u) = log(K-1) + Σ â_i log â_i`` ([1], App. B.3.1)."""
    ahat = normalize_l1(a)
    return np.log(ahat.shape[-1]) + (ahat * np.log(ahat)).sum(axis=-1)


def frobenius_metric(a: Any) -> NDArray[np.float64]:
    """``M̃ = Σ_i (a_i/‖a‖₂ - 1/√(K-1))²`` ([1], App. B.3.2; ``‖Z‖_F = ‖a‖₂``, erratum 9)."""
    a = np.asarray(a, dtype=np.float64)
    r = a / np.linalg.norm(a, axis=-1, keepdims=True)
    return ((r - 1.0 / np.sqrt(a.shape[-1])) ** 2).sum(axis=-1)


def log_ratio_metric(a: Any) -> NDArray[np.float64]:
    """``M_LR = max_i log a_i - min_j log a_j`` ([1], App. B.3.3)."""
    la = np.log(np.asarray(a, dtype=np.float64))
    return la.max(axis=-1) - la.min(axis=-1)


def dm_dt(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Derivative of M along Eq. (9) ([1], Eq. (20)): ``(1/D) Σ_i â_i² (b_i - b̄)``."""
    ahat = normalize_l1(a)
    g = growth_rates(a, params)
    gbar = (ahat * g).sum(axis=-1, keepdims=True)
    return (ahat**2 * (g - gbar)).sum(axis=-1)


def dkl_dt(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Derivative of the KL Lyapunov function ([1], Eq. (15)).

    ``dD_KL/dt = -(1/((K-1) D)) [Σ_i b_i - (K-1) b̄]``.
    """
    ahat = normalize_l1(a)
    g = growth_rates(a, params)
    k1 = ahat.shape[-1]
    return -(g.sum(axis=-1) - k1 * (ahat * g).sum(axis=-1)) / k1


def dkl_dt_closed(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Closed form of Thm 3's proof ([1], §7.2), manifestly ``<= 0``.

    ``dD_KL/dt = (1/(2(K-1) D ‖a‖₁)) Σ_ij (x_i - x_j)(e^{-x_i} - e^{-x_j})``, ``x = Ψa``.
    Evaluated with the exponentials scaled by ``1/D`` to avoid overflow.
    """
    a = np.asarray(a, dtype=np.float64)
    x = margins(a, params)
    e = np.exp(-x - _log_d(x)[..., None])  # e^{-x}/D
    dx = x[..., :, None] - x[..., None, :]
    de = e[..., :, None] - e[..., None, :]
    k1 = a.shape[-1]
    return (dx * de).sum(axis=(-1, -2)) / (2.0 * k1 * a.sum(axis=-1))


def dreverse_kl_dt(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Derivative of the reverse KL ([1], App. B.3.1): ``(1/D) Σ_i (b_i - b̄) â_i log â_i``."""
    ahat = normalize_l1(a)
    g = growth_rates(a, params)
    gbar = (ahat * g).sum(axis=-1, keepdims=True)
    return ((g - gbar) * ahat * np.log(ahat)).sum(axis=-1)


def dfrobenius_dt(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Derivative of M̃ ([1], App. B.3.2) with ``‖Z‖_F = ‖a‖₂``.

    ``dM̃/dt = (2 / (D ‖a‖₂³ √(K-1))) Σ_ij a_i a_j b_j (a_j - a_i)``.
    """
    a = np.asarray(a, dtype=np.float64)
    g = growth_rates(a, params)
    s = frobenius_sum(a, g)
    nrm = np.linalg.norm(a, axis=-1)
    return 2.0 * s / (nrm**3 * np.sqrt(a.shape[-1]))


def frobenius_sum(a: Any, b: Any) -> NDArray[np.float64]:
    """The sign-deciding sum ``Σ_ij a_i a_j b_j (a_j - a_i)`` of [1], App. B.3.2."""
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    diff = a[..., None, :] - a[..., :, None]  # [i, j] = a_j - a_i
    return (a[..., :, None] * (a * b)[..., None, :] * diff).sum(axis=(-1, -2))


def dlog_ratio_dt(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Derivative of M_LR where max and min are unique: ``(b_imax - b_imin) / D``.

    The difference is formed term by term, ``Σ_j (Ψ_imax,j - Ψ_imin,j) e^{-x_j} / D``, so that
    values far below the size of ``b`` (such as 1.8e-13 in App. B.3.3) are resolved.
    """
    a = np.asarray(a, dtype=np.float64)
    imax = np.argmax(a, axis=-1)
    imin = np.argmin(a, axis=-1)
    x = margins(a, params)
    e = np.exp(-x - _log_d(x)[..., None])
    rows = params.psi[imax] - params.psi[imin]
    return (rows * e).sum(axis=-1)


def dm_dt_logit(a: Any, params: ReducedParams) -> NDArray[np.float64]:
    """Derivative of M under logit flow (Thm 6 of [1], App. D.4).

    ``dM/dt = (1/(D‖a‖₁)) [Σ_i â_i b_i - (Σ_i â_i²)(Σ_j b_j)]``.
    """
    a = np.asarray(a, dtype=np.float64)
    ahat = normalize_l1(a)
    g = growth_rates(a, params)
    return ((ahat * g).sum(axis=-1) - (ahat**2).sum(axis=-1) * g.sum(axis=-1)) / a.sum(axis=-1)


def thm7_threshold(n_classes: int, l1_norm: Any) -> NDArray[np.float64]:
    """Theorem 7 of [1]: ``M <= min(1/(8K²), 1/(18 K³ ‖a‖₁²))`` implies ``dM/dt <= 0``.

    Parameters
    ----------
    n_classes : int
        ``K`` in [1], a power of two.
    l1_norm : array_like
        ``‖a‖₁`` (reduced units), any shape.

    Returns
    -------
    ndarray, shaped like ``l1_norm``
    """
    K = check_power_of_two(n_classes)
    l1 = np.asarray(l1_norm, dtype=np.float64)
    out: NDArray[np.float64] = np.minimum(1.0 / (8 * K**2), 1.0 / (18 * K**3 * l1**2))
    return out


# ----------------------------------------------------------------------------- matrices
def nc_alignment(A: Any, target: Any) -> NDArray[np.float64]:
    """``‖A/‖A‖_* - T/‖T‖_*‖_F`` per matrix of a batch ([1], App. E.1 (b)).

    Parameters
    ----------
    A : array_like of shape (..., p, q)
    target : array_like of shape (p, q)

    Returns
    -------
    ndarray of shape (...)
    """
    A = check_array(A, "A", dtype=np.float64)
    T = check_array(target, "target", ndim=2, dtype=np.float64)
    if A.shape[-2:] != T.shape:
        raise ValueError(f"`A` must end in shape {T.shape}; got {A.shape}.")
    nuc = np.linalg.svd(A, compute_uv=False).sum(axis=-1)
    Tn = T / np.linalg.svd(T, compute_uv=False).sum()
    return np.linalg.norm(A / nuc[..., None, None] - Tn, axis=(-2, -1))


def top_singular_values(Z: Any) -> NDArray[np.float64]:
    """The largest ``K - 1`` singular values of each ``Z`` of shape (..., K, N), descending."""
    Z = check_array(Z, "Z", dtype=np.float64)
    s = np.linalg.svd(Z, compute_uv=False)
    return s[..., : Z.shape[-2] - 1]


def reduced_basis(n_classes: int, n: int = 1) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """``Ũ = Φ[:, 1:]/√K`` of shape (K, K-1) and ``Ṽ = Ũ ⊗ 1_n/√n`` of shape (Kn, K-1).

    ``n_classes`` is ``K`` in [1] (a power of two), ``n`` the samples per class.
    """
    U = hadamard_basis(n_classes)[:, 1:]
    n = check_int(n, "n", low=1)
    V = np.kron(U, np.ones((n, 1)) / np.sqrt(n))
    return U, V


def mode_values(Z: Any, *, n: int = 1) -> NDArray[np.float64]:
    """Hadamard mode values ``diag(Ũ^T Z Ṽ)`` of Z (shape (..., K, Kn)) -> (..., K-1).

    At a Hadamard point these are the logit singular values ``a_i = α_i β_i`` in mode order.
    """
    Z = check_array(Z, "Z", dtype=np.float64)
    U, V = reduced_basis(Z.shape[-2], n)
    return np.einsum("ki,...kj,ji->...i", U, Z, V)


def residual_energy(Z: Any, *, n: int = 1) -> NDArray[np.float64]:
    """``‖Z - Ũ(Ũ^T Z Ṽ)Ṽ^T‖_F / ‖Z‖_F`` ([1], App. E.1 (f), normalised basis)."""
    Z = check_array(Z, "Z", dtype=np.float64)
    U, V = reduced_basis(Z.shape[-2], n)
    core = U.T @ Z @ V
    resid = Z - U @ core @ V.T
    return np.linalg.norm(resid, axis=(-2, -1)) / np.linalg.norm(Z, axis=(-2, -1))


def ufm_metrics(Z: Any, WWt: Any, HtH: Any, *, n: int = 1) -> dict[str, NDArray[np.float64]]:
    """All metrics of [1], App. E.1, for a batch of UFM states.

    Parameters
    ----------
    Z : array_like of shape (..., K, Kn)
    WWt : array_like of shape (..., K, K)
    HtH : array_like of shape (..., Kn, Kn)
    n : int
        Samples per class.

    Returns
    -------
    dict
        ``loss`` (summed CE, Eq. (1)), ``nc_w``, ``nc_h``, ``nc_z`` (alignment),
        ``kl`` (Thm 3 on the top K-1 singular values), ``m`` (Eq. (12) likewise),
        ``sigma`` (top K-1, shape (..., K-1)), ``sigma_hat`` (L1-normalised) and
        ``residual``; scalars have shape (...).
    """
    Z = check_array(Z, "Z", dtype=np.float64)
    K = Z.shape[-2]
    n = check_int(n, "n", low=1)
    S = centering_matrix(K)
    sigma = top_singular_values(Z)
    loss = ce_loss_from_logits(Z, n=n)
    return {
        "loss": loss,
        "nc_w": nc_alignment(WWt, S),
        "nc_h": nc_alignment(HtH, np.kron(S, np.ones((n, n)))),
        "nc_z": nc_alignment(Z, np.kron(S, np.ones((1, n)))),
        "kl": kl_uniform(sigma),
        "m": metric_m(sigma),
        "sigma": sigma,
        "sigma_hat": normalize_l1(sigma),
        "residual": residual_energy(Z, n=n),
    }
