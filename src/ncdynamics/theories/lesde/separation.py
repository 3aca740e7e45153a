"""Separation of features under the LE-SDE [1]: tests, directions and Monte-Carlo theorems.

- :func:`binary_separable`: the 1-D test of Sec. 2.2;
- :func:`linearly_separable`: exact linear separability by a feasibility LP (HiGHS);
- :func:`pairwise_separable`: Def. C.1, by the LP or by projecting on the difference of
  class means;
- :func:`separated_fraction`, :func:`threshold_fraction`: graded versions of the two tests,
  the fraction of points on their own class's side of the best hyperplane or threshold
  (1 exactly when the sets are separable), for claims that a handful of points must not
  decide;
- :func:`projection_direction`: nu of (C.24), the normalised difference of two class means;
- :func:`theorem21_probability`, :func:`theorem31_probability`: the phase transitions of
  Theorems 2.1 and 3.1 by Monte Carlo on the exact class-mean Euler--Maruyama scheme;
- :func:`etf_gram_error`: distance of normalised class means from a simplex ETF (Prop. 3.4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from .model import LEParams, Rate, h_isotropic
from .simulate import simulate_sde

__all__ = [
    "SeparationEstimate",
    "binary_separable",
    "etf_gram_error",
    "linearly_separable",
    "pairwise_separable",
    "projection_direction",
    "separated_fraction",
    "theorem21_probability",
    "threshold_fraction",
    "theorem31_probability",
]

Array = NDArray[np.float64]


def binary_separable(x1: Any, x2: Any) -> Any:
    """Whether two 1-D samples are separated: min x1 > max x2 or max x1 < min x2 (Sec. 2.2).

    Parameters
    ----------
    x1 : ndarray of shape (..., n1)
    x2 : ndarray of shape (..., n2)
        Same leading axes as ``x1``.

    Returns
    -------
    bool or ndarray of bool with the leading shape
    """
    x1 = check_array(x1, "x1", dtype=np.float64, min_size=1)
    x2 = check_array(x2, "x2", dtype=np.float64, min_size=1)
    if x1.shape[:-1] != x2.shape[:-1]:
        raise ValueError(f"`x1` and `x2` must share leading axes; got {x1.shape}, {x2.shape}.")
    up = x1.min(axis=-1) > x2.max(axis=-1)
    down = x1.max(axis=-1) < x2.min(axis=-1)
    return up | down


def linearly_separable(a: Any, b: Any) -> bool:
    """Exact strict linear separability of two point sets by a feasibility LP.

    Finds w, c with <w, a_i> - c >= 1 and <w, b_j> - c <= -1 (equivalent to strict
    separation by scaling). Solved with ``scipy.optimize.linprog`` (HiGHS).

    Parameters
    ----------
    a : ndarray of shape (n, p)
    b : ndarray of shape (m, p)
    """
    from scipy.optimize import linprog

    a = check_array(a, "a", ndim=2, dtype=np.float64, min_size=1)
    b = check_array(b, "b", ndim=2, dtype=np.float64, min_size=1)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"`a` and `b` must have the same dimension; got {a.shape}, {b.shape}.")
    scale = max(np.abs(a).max(), np.abs(b).max(), 1e-300)
    a, b = a / scale, b / scale
    p = a.shape[1]
    # variables (w, c); constraints -(a w - c) <= -1 and (b w - c) <= -1
    a_ub = np.vstack([np.hstack([-a, np.ones((len(a), 1))]), np.hstack([b, -np.ones((len(b), 1))])])
    b_ub = -np.ones(len(a) + len(b))
    res = linprog(
        np.zeros(p + 1), A_ub=a_ub, b_ub=b_ub, bounds=[(None, None)] * (p + 1), method="highs"
    )
    return bool(res.status == 0)


def pairwise_separable(x: Any, *, method: Literal["lp", "meandiff"] = "lp") -> Array:
    """Pairwise separability of K classes (Def. C.1): for every pair k < l a hyperplane.

    Parameters
    ----------
    x : ndarray of shape (K, n, p)
    method : {"lp", "meandiff"}
        ``"lp"``: exact, by :func:`linearly_separable`; ``"meandiff"``: project on
        nu = Xbar^k - Xbar^l and apply :func:`binary_separable` (sufficient only).

    Returns
    -------
    ndarray of bool, shape (K, K)
        Symmetric; the diagonal is True.
    """
    x = check_array(x, "x", ndim=3, dtype=np.float64)
    check_option(method, "method", ("lp", "meandiff"))
    k = x.shape[0]
    out = np.ones((k, k), dtype=bool)
    for i in range(k):
        for j in range(i + 1, k):
            if method == "lp":
                ok = linearly_separable(x[i], x[j])
            else:
                nu = x[i].mean(axis=0) - x[j].mean(axis=0)
                ok = bool(binary_separable(x[i] @ nu, x[j] @ nu))
            out[i, j] = out[j, i] = ok
    return out


def separated_fraction(a: Any, b: Any) -> float:
    """Fraction of the points of ``a`` and ``b`` on their own side of the least-violation
    hyperplane: a graded form of :func:`linearly_separable`.

    Solves the L1 soft-margin LP (HiGHS, sparse)::

        min  sum_i s_i   over w, c, s >= 0
        s.t. <w, a_i> - c >= 1 - s_i,   <w, b_j> - c <= -1 + s_j

    and returns the fraction of points with ``s < 1`` (strictly on their class's side). It is
    1 exactly when the sets are strictly linearly separable (then every ``s`` is 0), so a run
    reports how many of its draws the separation fails on instead of all-or-nothing.

    Parameters
    ----------
    a : ndarray of shape (n, p)
    b : ndarray of shape (m, p)

    Returns
    -------
    float in [0, 1]
    """
    from scipy import sparse
    from scipy.optimize import linprog

    a = check_array(a, "a", ndim=2, dtype=np.float64, min_size=1)
    b = check_array(b, "b", ndim=2, dtype=np.float64, min_size=1)
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"`a` and `b` must have the same dimension; got {a.shape}, {b.shape}.")
    scale = max(np.abs(a).max(), np.abs(b).max(), 1e-300)
    x = np.vstack([a, b]) / scale  # (n + m, p)
    sign = np.concatenate([np.ones(len(a)), -np.ones(len(b))])  # +1 for a, -1 for b
    n, p = x.shape
    # variables (w (p), c, s (n)); rows: -sign_i (<w, x_i> - c) - s_i <= -1
    dense = np.hstack([-sign[:, None] * x, sign[:, None]])  # (n, p + 1)
    a_ub = sparse.hstack([sparse.csr_matrix(dense), -sparse.identity(n, format="csr")]).tocsr()
    cost = np.concatenate([np.zeros(p + 1), np.ones(n)])
    bounds = [(None, None)] * (p + 1) + [(0, None)] * n
    res = linprog(cost, A_ub=a_ub, b_ub=-np.ones(n), bounds=bounds, method="highs")
    if res.status != 0:  # the soft-margin LP is always feasible and bounded below
        raise RuntimeError(f"soft-margin LP failed: {res.message}")
    margin = sign * (x @ res.x[:p] - res.x[p])
    return float(np.mean(margin > 0))


def threshold_fraction(x1: Any, x2: Any) -> float:
    """Fraction of two 1-D samples on their own side of the best threshold: a graded form of
    :func:`binary_separable` (1 exactly when that test holds).

    Over both orientations (``x1`` above or below) and every threshold between sorted
    values, the largest fraction of the ``n1 + n2`` points correctly placed.

    Parameters
    ----------
    x1 : ndarray of shape (n1,)
    x2 : ndarray of shape (n2,)

    Returns
    -------
    float in [0, 1]
    """
    x1 = check_array(x1, "x1", ndim=1, dtype=np.float64, min_size=1)
    x2 = check_array(x2, "x2", ndim=1, dtype=np.float64, min_size=1)
    values = np.concatenate([x1, x2])
    is1 = np.concatenate([np.ones(x1.size, bool), np.zeros(x2.size, bool)])
    order = np.argsort(values, kind="stable")
    v, lab = values[order], is1[order]
    # cut after position i (0..n): points 0..i-1 below, i..n-1 above; only between distinct values
    below1 = np.concatenate([[0], np.cumsum(lab)])  # x1 points below the cut
    below2 = np.concatenate([[0], np.cumsum(~lab)])
    n = v.size
    valid = np.ones(n + 1, bool)
    valid[1:n] = v[1:] > v[:-1]
    up = (below2 + (x1.size - below1))[valid]  # x1 above the cut
    down = (below1 + (x2.size - below2))[valid]  # x1 below the cut
    return float(max(up.max(), down.max()) / n)


def projection_direction(means: Any, k: int, l: int, *, n_avg: int = 2) -> Array:
    """nu = (Xbar^k(T) - Xbar^l(T)) / |.| at the end of a trajectory ([1], (C.24)).

    Parameters
    ----------
    means : ndarray of shape (n_times, K, p)
    k, l : int
        The pair of classes.
    n_avg : int
        Average the last ``n_avg`` times (the reference code uses 2).

    Returns
    -------
    ndarray of shape (p,), unit norm
    """
    means = check_array(means, "means", ndim=3, dtype=np.float64)
    kk = means.shape[1]
    k = check_int(k, "k", low=0, high=kk - 1)
    l = check_int(l, "l", low=0, high=kk - 1)
    if k == l:
        raise ValueError(f"`k` and `l` must differ; got {k} and {l}.")
    n_avg = check_int(n_avg, "n_avg", low=1, high=means.shape[0])
    diff = means[-n_avg:, k].mean(axis=0) - means[-n_avg:, l].mean(axis=0)
    norm = np.linalg.norm(diff)
    if norm == 0:
        raise ValueError("`means` of classes k and l coincide; nu is undefined.")
    return diff / norm


@dataclass(frozen=True)
class SeparationEstimate:
    """Monte-Carlo probability of separation.

    Attributes
    ----------
    probability : float
    n_reps : int
    separated : ndarray of bool, shape (n_reps,)
    """

    probability: float
    n_reps: int
    separated: NDArray[np.bool_]


def theorem21_probability(
    alpha: float,
    beta: float,
    *,
    t_end: float,
    rng: np.random.Generator,
    n: int = 200,
    sigma: float = 1.0,
    h: float = 0.01,
    init_mean: float = 0.5,
    init_sd: float = 1.0,
    n_reps: int = 200,
) -> SeparationEstimate:
    """P(binary separation at t_end) for the binary LE-SDE (2) ([1], Thm. 2.1).

    X^1(0) ~ N(+init_mean, init_sd^2), X^2(0) ~ N(-init_mean, init_sd^2), n per class,
    Euler--Maruyama with the empirical class means (exact class-mean scheme).
    """
    alpha = check_scalar(alpha, "alpha")
    beta = check_scalar(beta, "beta")
    t_end = check_scalar(t_end, "t_end", low=0.0, closed="neither")
    n_reps = check_int(n_reps, "n_reps", low=1)
    n = check_int(n, "n", low=1)
    params = LEParams.make(alpha, beta, h_isotropic(2, 1), sigma=sigma)
    x0 = init_sd * rng.standard_normal((n_reps, 2, n, 1))
    x0[:, 0] += init_mean
    x0[:, 1] -= init_mean
    n_steps = int(round(t_end / h))
    paths = simulate_sde(params, x0, h=h, n_steps=n_steps, rng=rng, record_every=n_steps)
    final = paths.ys[:, -1, :, :, 0]  # (R, 2, n)
    sep = binary_separable(final[:, 0], final[:, 1])
    return SeparationEstimate(float(sep.mean()), n_reps, np.asarray(sep))


def theorem31_probability(
    r: float,
    *,
    t_end: float,
    rng: np.random.Generator,
    n_classes: int = 3,
    dim: int = 3,
    n: int = 100,
    sigma: float = 1.0,
    h: float = 0.05,
    n_reps: int = 50,
    method: Literal["lp", "meandiff"] = "lp",
) -> SeparationEstimate:
    """P(all pairs separable at t_end) for the l-model LE-SDE with gamma = g/4 ([1], Thm. 3.1).

    g(t) = (1+t)^{-r}, beta = -g/4, alpha = beta + g, so alpha - beta = g and
    alpha + (K-1) beta = g (1 - (K-1)/4) > 0 for K <= 4. r < 1 gives gamma = omega(1/t),
    r > 1 gives gamma = o(1/t). Initial features are N(0, I) with class means e_k.

    Parameters
    ----------
    r : float
        Decay exponent of gamma.
    t_end : float
        Time at which separation is tested.
    rng : numpy.random.Generator
    n_classes : int, default=3
        K in [1], at most 4 (so that alpha + (K-1) beta > 0).
    dim : int, default=3
        p in [1], at least K.
    n : int
        Samples per class.
    sigma, h : float
        Noise level and Euler--Maruyama step.
    n_reps : int
        Monte-Carlo repetitions.
    method : {"lp", "meandiff"}
        Separability test (:func:`pairwise_separable`).
    """
    r = check_scalar(r, "r", low=0.0)
    k = check_int(n_classes, "n_classes", low=2, high=4)
    p = check_int(dim, "dim", low=k)
    n_reps = check_int(n_reps, "n_reps", low=1)

    def g_int(t: Any) -> Any:
        t = np.asarray(t, dtype=np.float64)
        return np.log1p(t) if r == 1 else ((1 + t) ** (1 - r) - 1) / (1 - r)

    g = lambda t: (1 + np.asarray(t, dtype=np.float64)) ** (-r)
    beta = Rate(lambda t: -g(t) / 4, lambda t: -g_int(t) / 4)
    alpha = Rate(lambda t: 0.75 * g(t), lambda t: 0.75 * g_int(t))
    params = LEParams.make(alpha, beta, h_isotropic(k, p), sigma=sigma)
    x0 = rng.standard_normal((n_reps, k, n, p)) + np.eye(k, p)[None, :, None, :]
    n_steps = int(round(t_end / h))
    paths = simulate_sde(params, x0, h=h, n_steps=n_steps, rng=rng, record_every=n_steps)
    sep = np.array(
        [pairwise_separable(paths.ys[i, -1], method=method).all() for i in range(n_reps)]
    )
    return SeparationEstimate(float(sep.mean()), n_reps, sep)


def etf_gram_error(means: Any) -> float:
    """max |G_kl + 1/(K-1)| over k != l, G the Gram matrix of Xbar^k/|Xbar^k| (Prop. 3.4).

    Parameters
    ----------
    means : ndarray of shape (K, p)

    Returns
    -------
    float
        0 exactly when the normalised class means form a simplex ETF (eq. 10).
    """
    means = check_array(means, "means", ndim=2, dtype=np.float64)
    k = means.shape[0]
    norms = np.linalg.norm(means, axis=1, keepdims=True)
    if np.any(norms == 0):
        raise ValueError("`means` must have non-zero rows.")
    u = means / norms
    g = u @ u.T
    return float(np.max(np.abs(g[~np.eye(k, dtype=bool)] + 1.0 / (k - 1))))
