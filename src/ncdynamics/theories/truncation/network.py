"""ReLU network in cumulative, activation-adapted parameters, truncation maps and costs.

Conventions ([1] (1.2); docs/theories/truncation.md, The model in brief):

- ``relu(x) = max(0, x)``; its derivative ``h`` has ``h(0) = 0``, so a coordinate equal to
  zero counts as *truncated*. The positive orthant is open, the negative orthant closed.
- Point clouds are stored row-wise, ``x`` of shape ``(n_points, Q)``.
- ``AdaptedParams`` holds the cumulative parameters of the ``L`` hidden layers in the adapted
  form ``W^(l) = diag(wstar_l) R_l`` with ``R_l`` orthogonal ([1] (2.31)).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, cast

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_option

__all__ = [
    "AdaptedParams",
    "ClusterData",
    "cumulative_to_layers",
    "euclidean_cost",
    "forward_layers",
    "heaviside",
    "input_images",
    "layers_to_cumulative",
    "random_orthogonal",
    "relu",
    "sector_codes",
    "sector_masks",
    "standard_cost",
    "truncate",
    "truncate_general",
    "truncation_path",
]

Weighting = Literal["per_cluster", "global"]
_WEIGHTINGS = ("per_cluster", "global")


def relu(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """ReLU ``sigma(x) = max(0, x)`` componentwise ([1] (1.1))."""
    return np.maximum(x, 0.0)


def heaviside(x: NDArray[np.float64]) -> NDArray[np.float64]:
    """Weak derivative ``h`` of ReLU with ``h(0) = 0`` ([1] (1.2)), as float64 0/1."""
    return (np.asarray(x) > 0).astype(np.float64)


def sector_masks(z: NDArray[np.float64]) -> tuple[NDArray[np.bool_], ...]:
    """Split points ``z`` of shape (n, Q) into the three sector types of [1] Sec. 3.3.

    Returns
    -------
    positive, negative, mixed : bool arrays of shape (n,)
        In the open positive orthant, in the closed negative orthant, or in neither
        (an "off-diagonal" sector).
    """
    z = np.asarray(z)
    positive = np.all(z > 0, axis=-1)
    negative = np.all(z <= 0, axis=-1)
    return positive, negative, ~(positive | negative)


def sector_codes(z: NDArray[np.float64]) -> NDArray[np.int64]:
    """Integer code ``sum_r h(z_r) 2^r`` of the sign-pattern sector of each row ([1] (3.28))."""
    z = np.asarray(z)
    weights = 2 ** np.arange(z.shape[-1])
    return ((z > 0).astype(np.int64) * weights).sum(axis=-1)


def random_orthogonal(q: int, *, rng: np.random.Generator) -> NDArray[np.float64]:
    """Haar-distributed orthogonal ``(q, q)`` matrix (QR of a Gaussian, signs fixed)."""
    a = rng.standard_normal((q, q))
    qmat, rmat = np.linalg.qr(a)
    return qmat * np.sign(np.diag(rmat))[None, :]


@dataclass(frozen=True)
class AdaptedParams:
    """Cumulative parameters of ``L`` hidden layers of width ``Q`` in adapted form.

    ``W^(l) = diag(wstar[l]) @ R[l]`` ([1] (2.31)) and ``beta^(l) = beta[l]`` ([1] (2.6)).

    Attributes
    ----------
    R : ndarray of shape (L, Q, Q)
        Orthogonal factors.
    beta : ndarray of shape (L, Q)
        Cumulative biases ``beta^(l) = (W^(l))^{-1} b^(l)``.
    wstar : ndarray of shape (L, Q), optional
        Positive diagonal scales (the truncation maps do not depend on them); ones by default.
    """

    R: NDArray[np.float64]
    beta: NDArray[np.float64]
    wstar: NDArray[np.float64] | None = field(default=None)

    def __post_init__(self) -> None:
        r = check_array(self.R, "R", ndim=3, dtype=np.float64)
        n_layers, q, q2 = r.shape
        if q != q2:
            raise ValueError(f"`R` must have shape (L, Q, Q); got {r.shape}.")
        beta = check_array(self.beta, "beta", shape=(n_layers, q), dtype=np.float64)
        if self.wstar is None:
            wstar = np.ones((n_layers, q))
        else:
            wstar = check_array(self.wstar, "wstar", shape=(n_layers, q), dtype=np.float64)
            if np.any(wstar <= 0):
                raise ValueError(f"`wstar` must be > 0; got minimum {wstar.min():.3g}.")
        object.__setattr__(self, "R", r)
        object.__setattr__(self, "beta", beta)
        object.__setattr__(self, "wstar", wstar)

    @property
    def n_layers(self) -> int:
        return int(self.R.shape[0])

    @property
    def dim(self) -> int:
        return int(self.R.shape[1])

    def cumulative_weights(self) -> NDArray[np.float64]:
        """``W^(l) = diag(wstar_l) R_l``, shape (L, Q, Q)."""
        wstar = cast(NDArray[np.float64], self.wstar)  # set to an array in __post_init__
        return wstar[:, :, None] * self.R

    def orthogonality_error(self) -> float:
        """``max_l ||R_l^T R_l - 1||_max``."""
        eye = np.eye(self.dim)
        return float(np.abs(np.einsum("lab,lac->lbc", self.R, self.R) - eye).max())


@dataclass(frozen=True)
class ClusterData:
    """Training clusters with pulled-back labels ([1] (1.12), (1.13)).

    Cluster ``l`` (label ``l``) is assigned to hidden layer ``l`` (``L = Q``, [1] Sec. 2.2).

    Attributes
    ----------
    x : ndarray of shape (n_points, Q)
        Inputs ``x_{l,i}``.
    labels : ndarray of shape (n_points,)
        Class (cluster) index in ``[0, n_classes)``; every cluster must be non-empty.
    ytilde : ndarray of shape (n_classes, Q)
        Pulled-back labels ``ytilde_l = (W^(Q+1))^{-1} y_l`` (rows).
    """

    x: NDArray[np.float64]
    labels: NDArray[np.int64]
    ytilde: NDArray[np.float64]

    def __post_init__(self) -> None:
        x = check_array(self.x, "x", ndim=2, dtype=np.float64, min_size=1)
        ytilde = check_array(self.ytilde, "ytilde", ndim=2, dtype=np.float64)
        if ytilde.shape[1] != x.shape[1]:
            raise ValueError(
                f"`ytilde` must have shape (n_classes, {x.shape[1]}); got {ytilde.shape}."
            )
        labels = np.asarray(self.labels)
        if labels.shape != (x.shape[0],) or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(
                f"`labels` must be integers of shape ({x.shape[0]},); got {labels.dtype} "
                f"{labels.shape}."
            )
        counts: NDArray[np.int64] | list[int] = (
            np.bincount(labels, minlength=ytilde.shape[0]) if labels.size else []
        )
        if labels.min() < 0 or labels.max() >= ytilde.shape[0] or np.any(np.asarray(counts) == 0):
            raise ValueError(
                f"`labels` must cover every cluster 0..{ytilde.shape[0] - 1}; got counts "
                f"{list(counts)}."
            )
        object.__setattr__(self, "x", x)
        object.__setattr__(self, "labels", labels.astype(np.int64))
        object.__setattr__(self, "ytilde", ytilde)

    @property
    def n_classes(self) -> int:
        """Number of classes ``Q`` of [1]: one cluster, one label and one layer per class."""
        return int(self.ytilde.shape[0])

    @property
    def dim(self) -> int:
        return int(self.x.shape[1])

    @property
    def counts(self) -> NDArray[np.int64]:
        return np.bincount(self.labels, minlength=self.n_classes)

    def point_weights(self, weighting: Weighting = "per_cluster") -> NDArray[np.float64]:
        """Weight of each point in the cost: ``1/N_l`` ([1] (2.26)) or ``1/N`` ([1] (9.3))."""
        check_option(weighting, "weighting", _WEIGHTINGS)
        if weighting == "global":
            return np.full(self.x.shape[0], 1.0 / self.x.shape[0])
        return 1.0 / self.counts[self.labels]

    def cluster(self, l: int) -> NDArray[np.float64]:  # noqa: E741
        """Rows of cluster ``l``, shape (N_l, Q)."""
        return self.x[self.labels == l]


def truncate(
    x: NDArray[np.float64], R: NDArray[np.float64], beta: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Adapted truncation map ``tau(x) = R^T relu(R (x + beta)) - beta`` ([1] (6.2)).

    It is the Euclidean projection onto the closed cone ``{y : R (y + beta) >= 0}``.

    Parameters
    ----------
    x : ndarray of shape (n, Q)
    R : ndarray of shape (Q, Q)
    beta : ndarray of shape (Q,)

    Returns
    -------
    ndarray of shape (n, Q)
    """
    z = (x + beta) @ R.T  # (n, Q)
    return relu(z) @ R - beta


def truncate_general(
    x: NDArray[np.float64], W: NDArray[np.float64], beta: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Truncation map for an invertible cumulative weight ``W`` ([1] (1.6))::

    tau(x) = W^{-1} relu(W (x + beta)) - beta
    """
    z = (x + beta) @ W.T  # (n, Q)
    return np.linalg.solve(W, relu(z).T).T - beta


def truncation_path(
    x: NDArray[np.float64], params: AdaptedParams, upto: int | None = None
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Forward trajectory of points through the truncation maps ([1] (2.16), (7.1)).

    Returns
    -------
    p : ndarray of shape (k + 1, n, Q)
        ``p[0] = x`` and ``p[l] = I^(l)(x) = tau^(l)(p[l-1])``.
    z : ndarray of shape (k, n, Q)
        Pre-activations in the rotated frame ``z[l-1] = R_l (p[l-1] + beta^(l))``.
    """
    k = params.n_layers if upto is None else upto
    p = np.empty((k + 1, *x.shape))
    z = np.empty((k, *x.shape))
    p[0] = x
    for l in range(k):  # noqa: E741
        z[l] = (p[l] + params.beta[l]) @ params.R[l].T
        p[l + 1] = relu(z[l]) @ params.R[l] - params.beta[l]
    return p, z


def input_images(x: NDArray[np.float64], params: AdaptedParams) -> NDArray[np.float64]:
    """``I^(L)(x)``, the composition of all truncation maps ([1] (2.16)), shape (n, Q)."""
    return truncation_path(x, params)[0][-1]


def cumulative_to_layers(
    W_cum: NDArray[np.float64], beta: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per-layer weights from cumulative ones (inverse of [1] (2.6)-(2.7))::

        W_l = W^(l) (W^(l-1))^{-1},   b_l = W^(l) (beta^(l) - beta^(l-1)),
        W^(0) = 1, beta^(0) = 0.

    Parameters
    ----------
    W_cum : ndarray of shape (L, Q, Q)
    beta : ndarray of shape (L, Q)

    Returns
    -------
    W_layers : ndarray of shape (L, Q, Q)
    b_layers : ndarray of shape (L, Q)
    """
    W_cum = check_array(W_cum, "W_cum", ndim=3, dtype=np.float64)
    beta = check_array(beta, "beta", shape=W_cum.shape[:2], dtype=np.float64)
    n_layers, q, _ = W_cum.shape
    prev_w = np.concatenate([np.eye(q)[None], W_cum[:-1]])  # (L, Q, Q)
    prev_b = np.concatenate([np.zeros((1, q)), beta[:-1]])  # (L, Q)
    W_layers = np.linalg.solve(np.swapaxes(prev_w, 1, 2), np.swapaxes(W_cum, 1, 2))
    W_layers = np.swapaxes(W_layers, 1, 2)  # W^(l) (W^(l-1))^{-1}
    b_layers = np.einsum("lab,lb->la", W_cum, beta - prev_b)
    return W_layers, b_layers


def layers_to_cumulative(
    W_layers: NDArray[np.float64], b_layers: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Cumulative weights and biases of [1] (2.6)::

        W^(l) = W_l ... W_1,   beta^(l) = sum_{j<=l} (W^(j))^{-1} b_j.

    Returns
    -------
    W_cum : ndarray of shape (L, Q, Q)
    beta : ndarray of shape (L, Q)
    """
    W_layers = check_array(W_layers, "W_layers", ndim=3, dtype=np.float64)
    b_layers = check_array(b_layers, "b_layers", shape=W_layers.shape[:2], dtype=np.float64)
    n_layers, q, _ = W_layers.shape
    W_cum = np.empty_like(W_layers)
    beta = np.empty_like(b_layers)
    w, acc = np.eye(q), np.zeros(q)
    for l in range(n_layers):  # noqa: E741
        w = W_layers[l] @ w
        acc = acc + np.linalg.solve(w, b_layers[l])
        W_cum[l], beta[l] = w, acc
    return W_cum, beta


def forward_layers(
    x: NDArray[np.float64], W_layers: NDArray[np.float64], b_layers: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Hidden layers ``x^(l) = relu(W_l x^(l-1) + b_l)`` of [1] (1.1).

    Returns
    -------
    ndarray of shape (L + 1, n, Q)
        ``out[0] = x`` and ``out[l] = x^(l)``.
    """
    out = np.empty((W_layers.shape[0] + 1, *x.shape))
    out[0] = x
    for l in range(W_layers.shape[0]):  # noqa: E741
        out[l + 1] = relu(out[l] @ W_layers[l].T + b_layers[l])
    return out


def euclidean_cost(
    params: AdaptedParams, data: ClusterData, *, weighting: Weighting = "per_cluster"
) -> float:
    """Euclidean input-space cost of [1] (2.26)::

        C = 1/2 sum_j 1/N_j sum_i | I^(L)(x_{j,i}) - ytilde_j |^2.

    ``weighting="global"`` replaces ``1/N_j`` by ``1/N``.
    """
    w = data.point_weights(weighting)
    res = input_images(data.x, params) - data.ytilde[data.labels]  # (n, Q)
    return float(0.5 * np.sum(w * np.sum(res**2, axis=1)))


def standard_cost(
    params: AdaptedParams,
    data: ClusterData,
    W_out: NDArray[np.float64],
    y: NDArray[np.float64],
    *,
    weighting: Weighting = "per_cluster",
) -> float:
    """Standard L2 cost at the output ([1] (2.22)).

    The output layer is ``x^(L+1) = W_out I^(L)(x)`` (the bias convention
    ``b_{L+1} = -W_{L+1} b^(L)``, docs/theories/truncation.md, Other choices), so::

        C~ = 1/2 sum_j 1/N_j sum_i | W_out I^(L)(x_{j,i}) - y_j |^2.

    Parameters
    ----------
    W_out : ndarray of shape (Q, Q)
        ``W^(L+1)``, the map from input space to the output.
    y : ndarray of shape (n_classes, Q)
        Labels ``y_j`` (rows).
    """
    W_out = check_array(W_out, "W_out", shape=(data.dim, data.dim), dtype=np.float64)
    y = check_array(y, "y", shape=data.ytilde.shape, dtype=np.float64)
    w = data.point_weights(weighting)
    res = input_images(data.x, params) @ W_out.T - y[data.labels]
    return float(0.5 * np.sum(w * np.sum(res**2, axis=1)))
