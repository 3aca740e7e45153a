"""A short, readable reference for the collapse metrics NC1--NC4.

:func:`reference_collapse_metrics` computes the keys of
:func:`ncdynamics.probes.collapse_metrics` with the same conventions, the direct way: a loop
over classes, within- and between-class scatter as ``np.cov`` computes them, a pseudo-inverse,
and explicit distances to every class mean for NC4. Everything is float64. It exists so that
the tests can check the fast streaming and dense paths (``_fast_collapse_stream``,
``_fast_collapse_dense``) against it; it costs O(n C d) memory for NC4 and a (d, d) matrix for
NC1, so use :func:`~ncdynamics.probes.collapse_metrics` on real data.

Definitions are in ``docs/metrics.md``.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._simplex import etf_gram

__all__ = ["reference_collapse_metrics"]

#: Eigenvalues of Sigma_B below this fraction of the largest are treated as zero (the same
#: cut as the fast path's 1e-8 on the singular values of the centred means, squared).
_PINV_RTOL = 1e-16


def _pinv_between(sigma_b: NDArray[np.float64], n_classes: int) -> NDArray[np.float64]:
    """Pseudo-inverse of Sigma_B on its top C - 1 eigen-directions.

    The count-weighted centred means sum to zero, so Sigma_B has rank at most C - 1; the
    C-th eigenvalue is zero up to rounding and must not be inverted.
    """
    lam, vec = np.linalg.eigh(sigma_b)  # ascending
    lam, vec = lam[::-1][: n_classes - 1], vec[:, ::-1][:, : n_classes - 1]
    keep = lam > _PINV_RTOL * lam[0]
    return (vec[:, keep] / lam[keep]) @ vec[:, keep].T


def reference_collapse_metrics(
    features: ArrayLike,
    labels: ArrayLike,
    weight: ArrayLike | None = None,
    bias: ArrayLike | None = None,
    *,
    num_classes: int | None = None,
    nc1_divide_by_classes: bool = True,
    etf_normalize_means: bool = False,
) -> dict[str, float]:
    """NC1--NC4 computed directly (slow; for tests).

    Same arguments, keys and conventions as :func:`ncdynamics.probes.collapse_metrics`;
    inputs are trusted (no validation), and every class needs at least one sample.
    """
    h = np.asarray(features, dtype=np.float64)  # (n, d)
    y = np.asarray(labels)  # (n,)
    if num_classes is None:
        num_classes = int(y.max()) + 1 if weight is None else np.shape(weight)[0]
    C = num_classes
    n = h.shape[0]
    members = [h[y == c] for c in range(C)]  # C arrays (n_c, d)
    mu = np.array([m.mean(axis=0) for m in members])  # (C, d) class means
    mu_g = h.mean(axis=0)  # (d,) global mean
    M = (mu - mu_g).T  # (d, C) centred means

    # within-class covariance Sigma_W (normalised by N) and between-class Sigma_B = M M^T / C
    sigma_w = sum(np.cov(m, rowvar=False, bias=True) * len(m) for m in members) / n
    sigma_b = M @ M.T / C
    nc1 = float(np.trace(sigma_w @ _pinv_between(np.atleast_2d(sigma_b), C)))
    out = {
        "nc1": nc1 / C if nc1_divide_by_classes else nc1,
        "within_trace": float(np.trace(np.atleast_2d(sigma_w))),
        "between_trace": float(np.trace(np.atleast_2d(sigma_b))),
        "nc1_std": float(np.mean([m.std(axis=0) for m in members])),
    }

    v = np.array([np.mean(np.sum((m - mu[c]) ** 2, axis=1)) for c, m in enumerate(members)])
    pairs = [(i, j) for i in range(C) for j in range(i + 1, C)]
    out["cdnv"] = float(
        np.mean([(v[i] + v[j]) / (2 * np.sum((mu[i] - mu[j]) ** 2)) for i, j in pairs])
    )

    norms = np.linalg.norm(M, axis=0)  # (C,)
    out["nc2_equinorm"] = float(norms.std() / norms.mean())
    cos = np.array(
        [M[:, i] @ M[:, j] / (norms[i] * norms[j]) for i in range(C) for j in range(C) if i != j]
    )
    out["nc2_equiangular"] = float(cos.std())
    out["nc2_maxangle"] = float(np.mean(np.abs(cos + 1.0 / (C - 1))))
    means = M / norms if etf_normalize_means else M
    gram = means.T @ means  # (C, C)
    out["nc2_etf"] = float(np.linalg.norm(gram / np.linalg.norm(gram) - etf_gram(C)))

    if weight is not None:
        w = np.asarray(weight, dtype=np.float64)  # (C, d)
        dist = float(np.linalg.norm(M / np.linalg.norm(M) - w.T / np.linalg.norm(w)))
        out["nc3"] = dist
        out["nc3_papyan"] = dist**2
        b = np.zeros(C) if bias is None else np.asarray(bias, dtype=np.float64)
        logits = h @ w.T + b  # (n, C)
        to_means = np.array([np.linalg.norm(h - mu[c], axis=1) for c in range(C)]).T  # (n, C)
        out["nc4"] = float(np.mean(logits.argmax(axis=1) != to_means.argmin(axis=1)))
    return out
