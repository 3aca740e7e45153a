"""Data for the truncation theory: the simplex design, random configurations and monitors.

The paper has no data; its construction of cluster-separated configurations is deferred to
its reference [3]. The *simplex design* of :func:`simplex_design` builds one explicitly:
cluster ``l`` sits at a vertex of a centred regular simplex, and layer ``l`` is rotated so that
every other cluster lies in its open positive orthant while the apex ``-beta^(l)`` sits at the
centre of cluster ``l``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray
from scipy.linalg import orthogonal_procrustes

from ..._validation import check_int, check_scalar
from .network import AdaptedParams, ClusterData, random_orthogonal, truncation_path

__all__ = [
    "ClusterMonitor",
    "Design",
    "collapse_margin",
    "monitor_clusters",
    "random_config",
    "separation_margin",
    "simplex_design",
    "simplex_rotation",
    "simplex_vertices",
]


@dataclass(frozen=True)
class Design:
    """A generated configuration.

    Attributes
    ----------
    data : ClusterData
    params : AdaptedParams
        Initial cumulative parameters (``L = Q``).
    W_out : ndarray of shape (Q, Q)
        Fixed ``W^(Q+1)``; the labels are ``y_l = W_out ytilde_l``.
    y : ndarray of shape (Q, Q)
        Labels ``y_l`` (rows).
    centres : ndarray of shape (Q, Q)
        Cluster centres (rows).
    n_draws : int
        Draws needed to pass the acceptance checks.
    """

    data: ClusterData
    params: AdaptedParams
    W_out: NDArray[np.float64]
    y: NDArray[np.float64]
    centres: NDArray[np.float64]
    n_draws: int


def simplex_vertices(n_classes: int) -> NDArray[np.float64]:
    """Unit vectors ``v_l = (e_l - 1/Q) / |e_l - 1/Q|`` of a centred regular simplex, (Q, Q).

    ``n_classes`` is ``Q``. Up to rounding (1 ulp) these rows are the columns of
    :func:`ncdynamics.theories.geometry.simplex_etf`; the normalisation by the norm is kept
    because the experiments' numbers are defined with it.
    """
    q = n_classes
    v = np.eye(q) - 1.0 / q
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def simplex_rotation(n_classes: int, l: int) -> NDArray[np.float64]:  # noqa: E741
    """Rotation ``R_l`` of the simplex design for cluster ``l`` (``n_classes`` is ``Q``).

    Maps the unit directions ``w_j = (v_j - v_l)/|v_j - v_l|`` (``j != l``) to vectors with
    all components positive and ``v_l`` into the negative orthant (Procrustes fit, exact
    because the two Gram matrices agree).
    """
    q = n_classes
    v = simplex_vertices(q)
    others = [j for j in range(q) if j != l]
    wdir = v[others] - v[l]
    wdir /= np.linalg.norm(wdir, axis=1, keepdims=True)
    a = 1.0 / np.sqrt(2.0)
    bb = (-np.sqrt(2.0) + np.sqrt(2.0 + 2.0 * q)) / (2.0 * q)
    u = a * np.eye(q)[: q - 1] + bb  # (Q-1, Q), rows u_k
    t = -u.sum(axis=0)
    t /= np.linalg.norm(t)
    src = np.vstack([wdir, v[l]])  # rows to map
    dst = np.vstack([u, t])
    omega, _ = orthogonal_procrustes(src, dst)  # src @ omega ~ dst
    return omega.T  # R src_row = dst_row


def separation_margin(params: AdaptedParams, data: ClusterData) -> float:
    """Cluster-separation margin along the composition.

    ``min_{l, j != l, i, r} (R_l (I^(l-1)(x_{j,i}) + beta^(l)))_r``: positive iff every
    truncation map acts as the identity on the images of every foreign cluster (strictly).
    The effective flow of :func:`~ncdynamics.theories.truncation.model.separated_rates` is
    the gradient flow only while this is positive.
    """
    _, z = truncation_path(data.x, params)  # (L, n, Q)
    foreign = data.labels[None, :] != np.arange(params.n_layers)[:, None]  # (L, n)
    return float(np.min(np.where(foreign[:, :, None], z, np.inf)))


def collapse_margin(params: AdaptedParams, data: ClusterData) -> NDArray[np.float64]:
    """Per cluster ``max_{i,r} (R_l (x_{l,i} - ytilde_l))_r`` (simplex design acceptance).

    Negative means that at ``beta^(l) = -ytilde_l`` the whole cluster is fully truncated
    (condition (4.16) of [1]), so full collapse is reachable.
    """
    out = np.empty(data.n_classes)
    for l in range(data.n_classes):  # noqa: E741
        out[l] = np.max((data.cluster(l) - data.ytilde[l]) @ params.R[l].T)
    return out


def simplex_design(
    n_classes: int,
    *,
    n_per: int = 20,
    radius: float = 4.0,
    rho: float = 0.7,
    delta: float = 0.2,
    offset: float = 0.0,
    min_separation: float = 0.3,
    max_collapse: float = -0.02,
    wstar: bool = False,
    rng: np.random.Generator,
    max_draws: int = 200,
) -> Design:
    """Cluster-separated configuration (the simplex design) with acceptance checks.

    Centres ``c_l = radius v_l + offset 1/sqrt(Q)``; points ``c_l + delta U(-1, 1)^Q``;
    pulled-back labels ``ytilde_l = rho c_l``; ``beta^(l)(0) = -c_l``; ``R_l`` from
    :func:`simplex_rotation`; ``W_out`` a random orthogonal matrix times ``diag(U(0.5, 2))``.
    A draw is accepted when :func:`separation_margin` ``> min_separation`` and every
    :func:`collapse_margin` ``< max_collapse``; otherwise the points are redrawn.

    ``n_classes`` is ``Q`` of [1]: the number of classes, which is also the input width and
    the number of hidden layers (``L = Q``).

    Raises
    ------
    RuntimeError
        If no draw passes within ``max_draws``.
    """
    q = check_int(n_classes, "n_classes", low=2)
    n_per = check_int(n_per, "n_per", low=1)
    check_scalar(radius, "radius", low=0, closed="neither")
    check_scalar(delta, "delta", low=0)
    check_scalar(rho, "rho")
    v = simplex_vertices(q)
    centres = radius * v + offset / np.sqrt(q)
    R = np.stack([simplex_rotation(q, l) for l in range(q)])
    labels = np.repeat(np.arange(q), n_per)
    ytilde = rho * centres
    W_out = random_orthogonal(q, rng=rng) * rng.uniform(0.5, 2.0, size=q)[None, :]
    ws = rng.uniform(0.5, 2.0, size=(q, q)) if wstar else None
    for draw in range(1, max_draws + 1):
        x = centres[labels] + delta * rng.uniform(-1.0, 1.0, size=(q * n_per, q))
        data = ClusterData(x, labels, ytilde)
        params = AdaptedParams(R, -centres.copy(), ws)
        if separation_margin(params, data) > min_separation and np.all(
            collapse_margin(params, data) < max_collapse
        ):
            return Design(data, params, W_out, ytilde @ W_out.T, centres, draw)
    raise RuntimeError(
        f"simplex_design found no accepted draw in {max_draws} tries (q={q}, delta={delta}, "
        f"rho={rho}); lower `delta` or relax `min_separation`/`max_collapse`."
    )


def random_config(
    n_classes: int,
    counts: Sequence[int] | NDArray[np.integer[Any]],
    *,
    rng: np.random.Generator,
    beta_scale: float = 0.5,
    min_kink: float = 1e-4,
    max_draws: int = 100,
) -> tuple[ClusterData, AdaptedParams]:
    """Random, generally non-separated configuration (experiment E1).

    ``x ~ N(0, 1)``, ``ytilde ~ N(0, 1)``, ``beta ~ N(0, beta_scale^2)``, Haar ``R_l``
    (``L = Q``, ``n_classes = Q``). Redrawn while any pre-activation lies within ``min_kink``
    of a ReLU kink, so finite differences do not straddle one.
    """
    q = check_int(n_classes, "n_classes", low=1)
    sizes = [check_int(c, "counts", low=1) for c in counts]
    if len(sizes) != q:
        raise ValueError(f"`counts` must have {q} entries (one per class); got {len(sizes)}.")
    labels = np.repeat(np.arange(q), sizes)
    for _ in range(max_draws):
        x = rng.standard_normal((labels.size, q))
        ytilde = rng.standard_normal((q, q))
        R = np.stack([random_orthogonal(q, rng=rng) for _ in range(q)])
        params = AdaptedParams(R, beta_scale * rng.standard_normal((q, q)))
        data = ClusterData(x, labels, ytilde)
        _, z = truncation_path(x, params)
        if np.min(np.abs(z)) > min_kink:
            return data, params
    raise RuntimeError(f"random_config: no draw kept all |z| > {min_kink} in {max_draws} tries.")


@dataclass(frozen=True)
class ClusterMonitor:
    """Geometry of the truncated clusters ``tau^(l)(X_l)`` at one time (experiment E3).

    Attributes
    ----------
    diameter : ndarray of shape (L,)
        Largest pairwise distance within ``I^(L)(X_l)``.
    cov_trace : ndarray of shape (L,)
        Trace of the covariance of ``I^(L)(X_l)`` (NC1-type within-class spread).
    separation : float
        :func:`separation_margin`.
    """

    diameter: NDArray[np.float64]
    cov_trace: NDArray[np.float64]
    separation: float


def monitor_clusters(params: AdaptedParams, data: ClusterData) -> ClusterMonitor:
    """Cluster diameters, covariance traces and the separation margin ([1] Prop. 4.2)."""
    p, z = truncation_path(data.x, params)
    images = p[-1]
    diam = np.empty(data.n_classes)
    cov = np.empty(data.n_classes)
    for l in range(data.n_classes):  # noqa: E741
        pts = images[data.labels == l]
        d = pts[:, None, :] - pts[None, :, :]
        diam[l] = float(np.sqrt(np.max(np.sum(d * d, axis=2))))
        cov[l] = float(np.sum((pts - pts.mean(axis=0)) ** 2) / pts.shape[0])
    foreign = data.labels[None, :] != np.arange(params.n_layers)[:, None]
    sep = float(np.min(np.where(foreign[:, :, None], z, np.inf)))
    return ClusterMonitor(diam, cov, sep)
