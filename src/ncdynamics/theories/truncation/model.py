"""Effective gradient flow of the cumulative, adapted parameters ([1] Secs. 3-7).

The flows are gradient flows in ``(beta^(l), R_l)`` with the Euclidean metric on ``beta`` and
the embedded Frobenius metric on ``O(Q)`` ([1] Lemma 6.1)::

    d_s beta^(l) = -grad_beta C,     d_s R_l = Omega_l R_l,  Omega_l = -pi_-((d_R C) R_l^T).

The sign ``+Omega R`` is the one of [1] (3.21), (4.23); (1.14) and (4.1) print ``-Omega R``
(correction 2 of docs/theories/truncation.md). Three forms of ``Omega`` exist for
cluster-separated truncations:

- ``"corrected"`` (default): the true Riemannian gradient::

      Omega = 1/N sum_i [H(z_i), M(z_i) - 1/2 z_i z_i^T],  M(z) = 1/2 (z bt^T + bt z^T);

- ``"paper"``: [1] (1.17)/(3.22), which drops the ``-1/2 [H, z z^T]`` term;
- ``"moments"``: the corrected form written with sector moments ([1] (3.38) with the
  factor 1/2 restored and the second moments it omits).

Without the separation assumption, :func:`general_gradients` (reverse accumulation) and
:func:`theorem51_rates` (the ``P^+``/``P^-`` form of [1] Thm. 5.1) give the same flow. The
flows of the standard cost with a trained output map (Secs. 8, 9) are in
:mod:`~ncdynamics.theories.truncation.output_layer`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_option
from .network import AdaptedParams, ClusterData, Weighting, relu, truncation_path

__all__ = [
    "GeneralGradients",
    "PackedClusters",
    "SeparatedRates",
    "general_gradients",
    "omega_from_moments",
    "pack_clusters",
    "project_antisymmetric",
    "riemannian_generator",
    "sector_moments",
    "separated_rates",
    "theorem51_rates",
]

OmegaVariant = Literal["corrected", "paper", "moments"]
_OMEGA_VARIANTS = ("corrected", "paper", "moments")


def project_antisymmetric(a: NDArray[np.float64]) -> NDArray[np.float64]:
    """``pi_-(A) = (A - A^T)/2`` on the last two axes ([1] (3.20))."""
    return 0.5 * (a - np.swapaxes(a, -1, -2))


def riemannian_generator(
    grad_R: NDArray[np.float64], R: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Generator ``Omega = -pi_-(G R^T)`` of the flow ``d_s R = Omega R`` ([1] Lemma 6.1, (3.21)).

    Parameters
    ----------
    grad_R : ndarray of shape (..., Q, Q)
        Euclidean gradient ``d_R C``.
    R : ndarray of shape (..., Q, Q)
    """
    return -project_antisymmetric(grad_R @ np.swapaxes(R, -1, -2))


@dataclass(frozen=True)
class PackedClusters:
    """Clusters padded to a common size for vectorised per-layer sums.

    Attributes
    ----------
    x : ndarray of shape (L, n_max, Q)
        Cluster ``l`` in rows ``[:N_l]`` of ``x[l]``; padding rows are zero.
    w : ndarray of shape (L, n_max)
        ``1/N_l`` on real rows, 0 on padding.
    ytilde : ndarray of shape (L, Q)
    counts : ndarray of shape (L,)
    """

    x: NDArray[np.float64]
    w: NDArray[np.float64]
    ytilde: NDArray[np.float64]
    counts: NDArray[np.int64]


def pack_clusters(data: ClusterData) -> PackedClusters:
    """Pack ``data`` for :func:`separated_rates` (cluster ``l`` goes to layer ``l``)."""
    counts = data.counts
    n_max = int(counts.max())
    x = np.zeros((data.n_classes, n_max, data.dim))
    w = np.zeros((data.n_classes, n_max))
    for l in range(data.n_classes):  # noqa: E741
        x[l, : counts[l]] = data.cluster(l)
        w[l, : counts[l]] = 1.0 / counts[l]
    return PackedClusters(x, w, data.ytilde.copy(), counts)


@dataclass(frozen=True)
class SeparatedRates:
    """Right-hand side of the cluster-separated effective flow ([1] Thm. 3.2).

    Attributes
    ----------
    dbeta : ndarray of shape (L, Q)
        ``d_s beta^(l) = -R_l^T J0perp_l btilde_l`` ([1] (3.19)).
    omega : ndarray of shape (L, Q, Q)
        Antisymmetric generators, ``d_s R_l = omega_l R_l``.
    j0perp : ndarray of shape (L, Q)
        Diagonal of ``J0perp_l``: fraction of cluster ``l`` truncated per coordinate ([1] (3.39)).
    btilde : ndarray of shape (L, Q)
        ``btilde_l = R_l (beta^(l) + ytilde_l)`` ([1] (4.22)).
    cost : float
        Cluster-separated cost ``sum_l 1/(2 N_l) sum_i |relu(z_i) - btilde_l|^2`` ([1] (3.6)).
    """

    dbeta: NDArray[np.float64]
    omega: NDArray[np.float64]
    j0perp: NDArray[np.float64]
    btilde: NDArray[np.float64]
    cost: float


def _separated(
    R: NDArray[np.float64], beta: NDArray[np.float64], packed: PackedClusters, variant: str
) -> SeparatedRates:
    # z[l, i] = R_l (x_{l,i} + beta_l): (L, n, Q)
    z = np.matmul(packed.x + beta[:, None, :], np.swapaxes(R, 1, 2))
    pos = z > 0  # (L, n, Q)
    h = pos.astype(np.float64)
    w = packed.w[:, :, None]  # (L, n, 1)
    bt = np.einsum("lab,lb->la", R, beta + packed.ytilde)  # (L, Q)
    valid = packed.w > 0  # (L, n)
    n_trunc = np.sum(valid[:, :, None] & ~pos, axis=1)  # (L, Q) integer counts n_r
    j0perp = n_trunc / packed.counts[:, None]  # exactly n_r / N_l
    dbeta = -np.einsum("lba,lb->la", R, j0perp * bt)
    if variant == "moments":
        omega = np.stack(
            [omega_from_moments(z[l, : packed.counts[l]], bt[l]) for l in range(R.shape[0])]
        )
    else:
        wh = w * h  # (L, n, Q)
        whz = wh * z
        s_hz = np.matmul(np.swapaxes(wh, 1, 2), z)  # sum_i w h_a z_b: (L, Q, Q)
        zsum = s_hz - whz.sum(axis=1)[:, None, :]  # sum_i w (h_a - h_b) z_b
        # sum_i w (h_a - h_b) (z_a bt_b + bt_a z_b) / 2, exactly antisymmetric
        omega = 0.5 * (bt[:, :, None] * zsum - np.swapaxes(zsum, 1, 2) * bt[:, None, :])
        if variant == "corrected":
            g = np.matmul(np.swapaxes(whz, 1, 2), z)  # sum_i w h_a z_a z_b
            omega = omega - 0.5 * (g - np.swapaxes(g, 1, 2))
        # both terms vanish on the pure sectors R^Q_+ and R^Q_-: make that exact
        mixed = np.any(valid & pos.any(axis=2) & ~pos.all(axis=2), axis=1)  # (L,)
        omega = np.where(mixed[:, None, None], omega, 0.0)
    res = relu(z) - bt[:, None, :]
    cost = float(0.5 * np.sum(w[..., 0] * np.sum(res**2, axis=2)))
    return SeparatedRates(dbeta, omega, j0perp, bt, cost)


def separated_rates(
    params: AdaptedParams,
    data: ClusterData | PackedClusters,
    *,
    variant: OmegaVariant = "corrected",
) -> SeparatedRates:
    """Effective flow for cluster-separated truncations ([1] Thm. 3.2, Cor. 3.5; corrections 3-4 of
    docs/theories/truncation.md).

    With ``z_i = R_l (x_{l,i} + beta^(l))`` and ``btilde_l = R_l (beta^(l) + ytilde_l)``::

        d_s beta^(l) = -R_l^T J0perp_l btilde_l,          J0perp_l = diag(n_r / N_l)   (3.19)
        (Omega_l)_ab = 1/N_l sum_i (h(z_ia) - h(z_ib)) 1/2 (z_ia bt_b + bt_a z_ib - z_ia z_ib)

    The last term (``-z_ia z_ib``) is missing from [1] (3.22); ``variant="paper"`` drops it.
    Valid only while the truncations stay cluster separated (see
    :func:`~ncdynamics.theories.truncation.design.separation_margin`).

    Parameters
    ----------
    params : AdaptedParams
        ``L`` must equal the number of clusters.
    data : ClusterData or PackedClusters
    variant : {"corrected", "paper", "moments"}, default="corrected"

    Returns
    -------
    SeparatedRates
    """
    check_option(variant, "variant", _OMEGA_VARIANTS)
    packed = data if isinstance(data, PackedClusters) else pack_clusters(data)
    if params.n_layers != packed.x.shape[0] or params.dim != packed.x.shape[2]:
        raise ValueError(
            f"`params` must have L = {packed.x.shape[0]} layers of width {packed.x.shape[2]} "
            f"(one per cluster); got L = {params.n_layers}, Q = {params.dim}."
        )
    return _separated(params.R, params.beta, packed, variant)


def sector_moments(
    z: NDArray[np.float64],
) -> dict[int, tuple[float, NDArray[np.float64], NDArray[np.float64]]]:
    """Constrained moments per sign-pattern sector ([1] (3.30)-(3.31); correction 4 of
    docs/theories/truncation.md).

    Returns
    -------
    dict
        ``code -> (J0_nu, J1_nu (Q,), J2_nu (Q, Q))`` with mass, first and second moments
        ``1/N sum_{z_i in R^Q_nu} (1, z_i, z_i z_i^T)``; the code is ``sum_r nu_r 2^r``.
    """
    z = np.asarray(z, dtype=np.float64)
    n, q = z.shape
    codes = ((z > 0).astype(np.int64) * (2 ** np.arange(q))).sum(axis=1)
    out = {}
    for c in np.unique(codes):
        zc = z[codes == c]
        out[int(c)] = (zc.shape[0] / n, zc.sum(axis=0) / n, zc.T @ zc / n)
    return out


def omega_from_moments(
    z: NDArray[np.float64], btilde: NDArray[np.float64], *, corrected: bool = True
) -> NDArray[np.float64]:
    """``Omega`` from sector moments ([1] (3.38) with correction 4 of the theory page)::

        Omega_ab = sum_nu (nu_a - nu_b) [1/2 ((J1_nu)_a bt_b + bt_a (J1_nu)_b) - 1/2 (J2_nu)_ab]

    ``corrected=False`` drops the ``J2`` term (the paper's claim that first moments suffice).
    """
    q = z.shape[1]
    omega = np.zeros((q, q))
    for code, (_, j1, j2) in sector_moments(z).items():
        nu = ((code >> np.arange(q)) & 1).astype(np.float64)
        dnu = nu[:, None] - nu[None, :]
        term = 0.5 * (np.outer(j1, btilde) + np.outer(btilde, j1))
        if corrected:
            term = term - 0.5 * j2
        omega += dnu * term
    return omega


@dataclass(frozen=True)
class GeneralGradients:
    """Gradients of the Euclidean cost without the separation assumption ([1] Thm. 5.1).

    Attributes
    ----------
    grad_beta : ndarray of shape (L, Q)
        ``d C / d beta^(l)``.
    grad_R : ndarray of shape (L, Q, Q)
        Euclidean ``d C / d R_l`` (before projection, [1] Lemma 7.3).
    omega : ndarray of shape (L, Q, Q)
        ``-pi_-(grad_R R^T)``.
    cost : float
    """

    grad_beta: NDArray[np.float64]
    grad_R: NDArray[np.float64]
    omega: NDArray[np.float64]
    cost: float


def general_gradients(
    params: AdaptedParams,
    data: ClusterData,
    *,
    weighting: Weighting = "per_cluster",
    W_out: NDArray[np.float64] | None = None,
    y: NDArray[np.float64] | None = None,
) -> GeneralGradients:
    """Gradients of the Euclidean (or standard) cost by reverse accumulation through ``I^(L)``.

    Each layer maps ``p -> R^T relu(R (p + beta)) - beta`` ([1] (6.2)); with
    ``g = dC/dp_l`` and ``z = R (p_{l-1} + beta)``::

        dC/dbeta  = -R^T H_perp(z) R g,     dC/dp_{l-1} = R^T H(z) R g,
        dC/dR     = relu(z) g^T + H(z) R g (p_{l-1} + beta)^T.

    This is the corrected [1] Thm. 5.1 in product form; :func:`theorem51_rates` evaluates the
    same expressions through the ``P^+``/``P^-`` matrices of [1] (5.1)-(5.2).
    With ``W_out`` and ``y`` the cost is the standard cost ([1] (2.22)); otherwise the
    Euclidean cost ([1] (2.26)).
    """
    w = data.point_weights(weighting)  # (n,)
    p, z = truncation_path(data.x, params)  # (L+1, n, Q), (L, n, Q)
    if W_out is None or y is None:
        res = p[-1] - data.ytilde[data.labels]  # (n, Q)
        g = w[:, None] * res
        cost = float(0.5 * np.sum(w * np.sum(res**2, axis=1)))
    else:
        res = p[-1] @ W_out.T - y[data.labels]
        g = w[:, None] * (res @ W_out)
        cost = float(0.5 * np.sum(w * np.sum(res**2, axis=1)))
    n_layers = params.n_layers
    grad_beta = np.empty_like(params.beta)
    grad_R = np.empty_like(params.R)
    for l in reversed(range(n_layers)):  # noqa: E741
        R = params.R[l]
        h = (z[l] > 0).astype(np.float64)  # (n, Q)
        rg = g @ R.T  # rows R g: (n, Q)
        grad_beta[l] = -np.sum((1.0 - h) * rg, axis=0) @ R
        v = p[l] + params.beta[l]
        grad_R[l] = relu(z[l]).T @ g + (h * rg).T @ v
        g = (h * rg) @ R  # R^T H R g
    omega = riemannian_generator(grad_R, params.R)
    return GeneralGradients(grad_beta, grad_R, omega, cost)


def theorem51_rates(
    params: AdaptedParams,
    data: ClusterData,
    *,
    variant: Literal["corrected", "paper"] = "corrected",
    weighting: Weighting = "per_cluster",
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Flow of [1] Thm. 5.1 through the matrices ``P^+``, ``P^-`` of (5.1)-(5.2)::

        d_s beta^(l) = + sum_j int dmu_j (P^-_{l,Q})^T (I^(Q)(x) - ytilde_j)
        Omega_l      = - sum_j int dmu_j [H^(l)(x), M_{l,j}(x)],
        M_{l,j} = 1/2 R_l (P^T e v^T + v e^T P) R_l^T,  P = P^+_{l+1,Q}, e = I^(Q)(x) - ytilde_j,
        v = I^(l-1)(x) + beta^(l).

    ``variant="paper"`` returns the bias flow with the overall sign printed in [1] (5.4),
    which is the negative of the gradient flow.

    Returns
    -------
    dbeta : ndarray of shape (L, Q)
    omega : ndarray of shape (L, Q, Q)
    """
    check_option(variant, "variant", ("corrected", "paper"))
    w = data.point_weights(weighting)
    p, z = truncation_path(data.x, params)
    n, q = data.x.shape
    e = p[-1] - data.ytilde[data.labels]  # (n, Q)
    h = (z > 0).astype(np.float64)  # (L, n, Q)
    # A[l] = R_l^T H R_l per point: (L, n, Q, Q)
    a_plus = np.einsum("lba,lnb,lbc->lnac", params.R, h, params.R)
    a_perp = np.einsum("lba,lnb,lbc->lnac", params.R, 1.0 - h, params.R)
    dbeta = np.empty_like(params.beta)
    omega = np.empty_like(params.R)
    p_plus = np.broadcast_to(np.eye(q), (n, q, q)).copy()  # P^+_{l+1,Q}
    for l in reversed(range(params.n_layers)):  # noqa: E741
        p_minus = p_plus @ a_perp[l]  # (n, Q, Q)
        dbeta[l] = np.einsum("n,nba,nb->a", w, p_minus, e)
        pte = np.einsum("nba,nb->na", p_plus, e)  # P^T e
        v = p[l] + params.beta[l]
        u, zz = pte @ params.R[l].T, v @ params.R[l].T  # rotated: R P^T e, R v
        m = 0.5 * (u[:, :, None] * zz[:, None, :] + zz[:, :, None] * u[:, None, :])
        hm = h[l][:, :, None] * m - m * h[l][:, None, :]  # [H, M]
        omega[l] = -np.einsum("n,nab->ab", w, hm)
        p_plus = p_plus @ a_plus[l]
    if variant == "paper":
        dbeta = -dbeta
    return dbeta, omega
