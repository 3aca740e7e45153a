"""95% intervals for fitted parameters and prediction bands for what a fit predicts.

Every confrontation fits a few parameters by least squares on a stream's records, so the
first-order (Gauss-Newton) approximation is the common tool: with residuals ``r`` (n of
them, weighted as in the fit) and their Jacobian ``J`` at the optimum,

    cov = s^2 (J^T J)^+,   s^2 = |r|^2 / (n - p),

and the interval of parameter ``i`` is ``theta_i -/+ t_{0.975, n-p} sqrt(cov_ii)``. It is
exact for linear models with Gaussian residuals and cheap (one Jacobian), which matters because
``ncdyn compare`` refits every sliding window. Training curves have serially correlated
residuals, which make that formula optimistic, so :func:`covariance_from_jacobian` by default
replaces ``s^2 (J^T J)^+`` by the sandwich of an AR(1) residual model (its docstring): an
AR(1) model rather than a moving-block bootstrap because it costs one matrix product instead
of hundreds of refits, and rather than a Newey-West kernel because with few records and
``rho`` near 0.9 a Bartlett kernel's short bandwidth misses most of the correlation. A theory
whose parameter lives on a log scale (a rate over decades) fits ``log theta`` and reports
``exp`` of the interval, which keeps it positive.

A prediction band propagates ``cov`` through the prediction by the delta method (central
differences in the parameters) and widens it by the residual scatter ``s`` in the scale the
residuals live in (see :func:`delta_band`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray
from scipy.special import ndtri, stdtrit  # scipy.stats's quantiles, without its import cost

__all__ = [
    "LEVEL",
    "MIN_EFFECTIVE_DOF",
    "ar1_meat",
    "ar1_reml_covariance",
    "effective_dof",
    "covariance_from_jacobian",
    "delta_band",
    "intervals_from_covariance",
    "numeric_jacobian",
    "residual_autocorrelation",
]

#: Coverage of every interval and band the toolkit reports.
LEVEL = 0.95


def residual_autocorrelation(residuals: ArrayLike) -> float:
    """Lag-one autocorrelation of residuals in record order, corrected for its small-sample
    bias (``rho + (1 + 3 rho) / n``, Kendall's first-order term) and clipped to ``[0, 0.98]``:
    negative values, which would narrow the intervals, count as zero."""
    r = np.asarray(residuals, dtype=np.float64).ravel()
    denom = float(r @ r)
    if r.size < 3 or denom <= 0 or not math.isfinite(denom):
        return 0.0
    rho = float(r[1:] @ r[:-1]) / denom
    rho += (1.0 + 3.0 * rho) / r.size
    return min(max(rho, 0.0), 0.98)


#: Fewest degrees of freedom the effective-count correction leaves (``t_0.975`` at most 2.78).
MIN_EFFECTIVE_DOF = 4


def effective_dof(n: int, p: int, rho: float, dof: int) -> int:
    """Degrees of freedom of ``n`` AR(1)-correlated residuals and ``p`` parameters: those of
    the effective count ``n (1 - rho) / (1 + rho)``, never more than ``dof`` and never fewer
    than :data:`MIN_EFFECTIVE_DOF` (or ``dof`` when that is fewer). Below that floor the
    quantile would say more about ``rho``'s estimate than the data: residuals of a smooth real
    run often have ``rho`` near 1 from misfit, not noise, and the sandwich has counted it."""
    eff = int(n * (1 - rho) / (1 + rho)) - p
    return max(min(dof, MIN_EFFECTIVE_DOF), min(dof, eff))


def ar1_meat(
    rows: ArrayLike, residuals: ArrayLike, s2: float, rho: float | None = None
) -> NDArray[np.float64]:
    """``J^T Sigma J`` for one series of residuals in record order, ``Sigma_ij = s2
    rho^|i - j|`` with ``rho`` given, else from :func:`residual_autocorrelation` (``s2 J^T J``
    when it is 0): the middle of the AR(1) sandwich. ``rows`` is the series' Jacobian, one
    row per residual."""
    jac = np.atleast_2d(np.asarray(rows, dtype=np.float64))
    if rho is None:
        rho = residual_autocorrelation(residuals)  # clipped at 0
    if rho == 0:
        return np.asarray(s2 * jac.T @ jac, np.float64)
    n = jac.shape[0]
    lags = np.abs(np.subtract.outer(np.arange(n), np.arange(n)))
    return np.asarray(jac.T @ (s2 * rho**lags) @ jac, np.float64)


def _series_index(n: int, series: int, layout: str) -> list[NDArray[np.intp]]:
    idx = np.arange(n)
    if series <= 1:
        return [idx]
    if n % series:
        raise ValueError(f"`series` must divide the {n} residuals; got {series}.")
    if layout == "concatenated":
        return list(idx.reshape(series, n // series))
    if layout == "interleaved":
        return list(idx.reshape(n // series, series).T)
    raise ValueError(f"`layout` must be 'concatenated' or 'interleaved'; got {layout!r}.")


def _jacobian_and_residuals(
    jacobian: ArrayLike, residuals: ArrayLike
) -> tuple[NDArray[np.float64], NDArray[np.float64], int, bool]:
    """The Jacobian (2-D) and residuals (flat) as float64, the residual degrees of freedom,
    and whether a covariance can be computed (more residuals than parameters, all finite)."""
    jac = np.atleast_2d(np.asarray(jacobian, dtype=np.float64))
    res = np.asarray(residuals, dtype=np.float64).ravel()
    n, p = jac.shape
    if res.size != n:
        raise ValueError(
            f"`residuals` must have {n} entries (rows of the Jacobian); got {res.size}."
        )
    dof = n - p
    return jac, res, dof, dof > 0 and bool(np.all(np.isfinite(jac)) and np.all(np.isfinite(res)))


def covariance_from_jacobian(
    jacobian: ArrayLike,
    residuals: ArrayLike,
    *,
    correlated: bool = True,
    series: int = 1,
    layout: str = "concatenated",
) -> tuple[NDArray[np.float64], float, int]:
    """``(cov, s2, dof)``: Gauss-Newton covariance of least-squares parameters.

    With ``correlated`` (the default) the residuals of each series, in record order, are
    modelled as AR(1) with their own lag-one autocorrelation ``rho``
    (:func:`residual_autocorrelation`), and ``cov`` is the sandwich ``B (sum_s J_s^T Sigma_s
    J_s) B`` with ``B = (J^T J)^+`` and ``Sigma_ij = s2 rho_s^|i - j|`` (:func:`ar1_meat`);
    ``rho = 0`` gives the textbook ``s2 B``. Training curves have serially correlated
    residuals, and intervals that assume independence are too narrow by up to ``sqrt((1 +
    rho) / (1 - rho))``. ``series`` residual series are stacked in ``residuals``, either one
    after the other (``"concatenated"``) or record by record (``"interleaved"``, the ravel of a
    records x series array); correlation is never assumed across series. ``dof`` is then that
    of the effective number of records (:func:`effective_dof`), so that the Student-t quantile
    widens with the correlation too.

    ``cov`` is all-``inf`` when there are no degrees of freedom left (``n <= p``); a direction
    the residuals do not depend on (a column of zeros) gets an infinite variance instead of
    the pseudo-inverse's zero, since the data say nothing about it.
    """
    jac, res, dof, usable = _jacobian_and_residuals(jacobian, residuals)
    n, p = jac.shape
    if not usable:
        return np.full((p, p), np.inf), float("nan"), dof
    s2 = float(res @ res) / dof
    bread = np.linalg.pinv(jac.T @ jac)
    if correlated:
        parts = _series_index(n, series, layout)
        meat = sum(ar1_meat(jac[i], res[i], s2) for i in parts)
        cov = bread @ meat @ bread
        # correlated records carry less information than their number: the t quantile uses
        # the effective count n (1 - rho) / (1 + rho) (rho averaged over the series)
        rho = float(np.mean([residual_autocorrelation(res[i]) for i in parts]))
        dof = effective_dof(n, p, rho, dof)
    else:
        cov = s2 * bread
    flat = ~np.any(np.abs(jac) > 0, axis=0)
    cov[flat, :] = np.inf
    cov[:, flat] = np.inf
    return cov, s2, dof


def intervals_from_covariance(
    names: Sequence[str],
    values: ArrayLike,
    cov: ArrayLike,
    dof: int,
    *,
    log_scale: Sequence[bool] | None = None,
    level: float = LEVEL,
) -> dict[str, tuple[float, float]]:
    """Student-t intervals ``value -/+ t sqrt(cov_ii)`` by name.

    With ``log_scale[i]`` true, ``values[i]`` and ``cov`` are for ``log theta_i`` and the
    interval returned is ``exp`` of the log interval (a positive parameter stays positive).
    Infinite variance gives ``(-inf, inf)`` (or ``(0, inf)`` on a log scale).
    """
    vals = np.asarray(values, dtype=np.float64).ravel()
    var = np.diag(np.asarray(cov, dtype=np.float64))
    logs = list(log_scale) if log_scale is not None else [False] * len(names)
    if not (len(names) == vals.size == var.size == len(logs)):
        raise ValueError(
            f"`names`, `values`, `cov` and `log_scale` must agree in size; got {len(names)}, "
            f"{vals.size}, {var.size}, {len(logs)}."
        )
    q = float(stdtrit(dof, 0.5 + level / 2)) if dof > 0 else np.inf
    out: dict[str, tuple[float, float]] = {}
    for name, v, vv, log in zip(names, vals, var, logs, strict=True):
        half = q * np.sqrt(vv) if np.isfinite(vv) and vv >= 0 else np.inf
        lo, hi = (v - half, v + half) if np.isfinite(half) else (-np.inf, np.inf)
        if log:
            with np.errstate(over="ignore"):  # an interval beyond 1e308 is simply infinite
                out[name] = (float(np.exp(lo)), float(np.exp(hi)))
        else:
            out[name] = (float(lo), float(hi))
    return out


def numeric_jacobian(
    func: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    theta: ArrayLike,
    *,
    rel_step: float = 1e-5,
) -> NDArray[np.float64]:
    """Central-difference Jacobian of ``func`` (a flat float array) at ``theta``."""
    th = np.asarray(theta, dtype=np.float64).ravel()
    base = np.asarray(func(th), dtype=np.float64).ravel()
    jac = np.empty((base.size, th.size))
    for i in range(th.size):
        h = rel_step * max(abs(th[i]), 1.0)
        up, down = th.copy(), th.copy()
        up[i] += h
        down[i] -= h
        with np.errstate(invalid="ignore", over="ignore"):  # inf - inf: no finite slope
            diff = (
                np.asarray(func(up), np.float64).ravel()
                - np.asarray(func(down), np.float64).ravel()
            )
            jac[:, i] = diff / (2 * h)
    return jac


def delta_band(
    predict_with: Callable[[NDArray[np.float64], NDArray[np.float64]], Mapping[str, Any]],
    theta: ArrayLike,
    cov: ArrayLike,
    at: ArrayLike,
    *,
    scatter: Mapping[str, float] | None = None,
    log_observables: Sequence[str] = (),
    level: float = LEVEL,
) -> dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]]:
    """A ``level`` prediction band for each observable ``predict_with(theta, at)`` returns.

    The variance at each step is ``g^T cov g`` (``g`` the gradient of the prediction in the
    parameters, by central differences) plus ``scatter[name]**2``, the residual variance of
    the fit. Observables named in ``log_observables`` are banded in ``log`` and exponentiated,
    with ``scatter`` then in log units too. A non-finite covariance gives an infinite band.
    """

    th = np.asarray(theta, dtype=np.float64).ravel()
    cv = np.asarray(cov, dtype=np.float64)
    steps = np.asarray(at, dtype=np.float64)
    z = float(ndtri(0.5 + level / 2))
    centre = {k: np.asarray(v, dtype=np.float64) for k, v in predict_with(th, steps).items()}
    logs = set(log_observables)

    def transformed(name: str) -> Callable[[NDArray[np.float64]], NDArray[np.float64]]:
        def f(t: NDArray[np.float64]) -> NDArray[np.float64]:
            v = np.asarray(predict_with(t, steps)[name], dtype=np.float64)
            return np.log(np.abs(v)) if name in logs else v

        return f

    out: dict[str, tuple[NDArray[np.float64], NDArray[np.float64]]] = {}
    for name, value in centre.items():
        mid = np.log(np.abs(value)) if name in logs else value
        if np.all(np.isfinite(cv)):
            g = numeric_jacobian(transformed(name), th)
            with np.errstate(invalid="ignore", over="ignore"):
                var = np.einsum("ij,jk,ik->i", g, cv, g)
            var = np.where(np.isfinite(var), var, np.inf)
        else:
            var = np.full(mid.shape, np.inf)
        var = var + float((scatter or {}).get(name, 0.0)) ** 2
        half = z * np.sqrt(np.maximum(var, 0.0))
        with np.errstate(invalid="ignore", over="ignore"):  # inf centre or width: inf band
            lo = np.where(np.isfinite(mid), mid - half, mid)
            hi = np.where(np.isfinite(mid), mid + half, mid)
            if name in logs:
                sign = np.sign(value)
                lo, hi = np.sort(np.stack([sign * np.exp(lo), sign * np.exp(hi)]), axis=0)
        out[name] = (lo, hi)
    return out


#: Values of the common AR(1) coefficient that :func:`ar1_reml_covariance` weighs.
REML_RHO_GRID = np.linspace(0.0, 0.99, 100)


def ar1_reml_covariance(
    jacobian: ArrayLike,
    residuals: ArrayLike,
    *,
    series: int = 1,
    layout: str = "concatenated",
    rho_estimate: str = "median",
) -> tuple[NDArray[np.float64], float, int, float]:
    """``(cov, s2, dof, rho)``: an AR(1) sandwich that does not trust the residuals' own
    lag-one correlation.

    A fit with several parameters absorbs the slow part of a correlated noise: its residuals
    ``r = M e`` (``M = I - J J^+``) have a much smaller lag-one autocorrelation and a smaller
    variance than the noise ``e`` itself (with 25 records, six parameters and ``rho = 0.9``,
    about 0.45 instead of 0.9), so :func:`covariance_from_jacobian`, which reads both off the
    residuals, gives intervals that are too narrow exactly when the noise is slow. Here the
    noise model, AR(1) with one coefficient ``rho`` and one variance ``s2`` shared by the
    ``series`` residual series (weighted to one scale, as the fits weight them; no
    correlation across series), is estimated by **restricted** maximum likelihood (REML): the
    likelihood of the residuals themselves, ``-1/2 [(n - p) log s2 + log|R| + log|J^T R^-1
    J|]`` at the profiled ``s2 = r^T P r / (n - p)``, ``P = R^-1 - R^-1 J (J^T R^-1 J)^-1
    J^T R^-1``, which accounts for what the fit removed. With 20-60 records ``rho`` is not
    well determined near 1, so it is not the likelihood's maximum that is used but the median
    of its posterior over :data:`REML_RHO_GRID` under Jeffreys' prior ``(1 - rho^2)^(-1/2)``
    for an AR(1) coefficient, which leans towards a slow noise when the records cannot rule
    it out; the mean of that posterior (or of the sandwiches over it) is pulled towards
    ``rho = 1``, where a trend's variance explodes, and gives intervals 1.4-2.6 times too wide
    under independent noise. ``cov`` is the sandwich ``B J^T s2 R J B`` (``B = (J^T J)^+``)
    at that ``rho`` and its ``s2``, and ``dof`` is :func:`effective_dof` there.

    ``rho_estimate="maximum"`` takes the restricted likelihood's own maximum over the grid
    instead of the posterior median. On a forecast origin's few records (about nine per
    series) the posterior median reads a slow noise into independent residuals (median
    ``rho`` about 0.2, and a noise variance about 1.1-1.4 times the true one), which makes a
    forecast band wider than it needs to be; the maximum is 0 on most such draws, with an
    unbiased variance, and still finds ``rho`` near 0.9 where the noise is that slow
    (tests/theories/test_uncertainty_reml.py). hadamard's forecast band uses it; parameter
    intervals keep the median, which guards them against a slow noise the records cannot rule
    out.

    Costs one ``p x p`` solve per grid value (cheap next to a fit). ``cov`` is all-``inf``
    when ``n <= p`` or an input is not finite; a direction the residuals do not depend on gets
    an infinite variance, as in :func:`covariance_from_jacobian`.
    """
    if rho_estimate not in ("median", "maximum"):
        raise ValueError(f"`rho_estimate` must be 'median' or 'maximum'; got {rho_estimate!r}.")
    jac, res, dof, usable = _jacobian_and_residuals(jacobian, residuals)
    n, p = jac.shape
    if not usable:
        return np.full((p, p), np.inf), float("nan"), dof, float("nan")
    flat = ~np.any(np.abs(jac) > 0, axis=0)
    j = jac[:, ~flat]
    q = j.shape[1]
    parts = _series_index(n, series, layout)
    rho = REML_RHO_GRID
    g = rho.size
    one_minus = 1.0 - rho**2
    # whitening: z_0 = sqrt(1 - rho^2) x_0, z_i = x_i - rho x_(i-1); x^T R^-1 x = |z|^2/(1-rho^2)
    a = np.zeros((g, q, q))
    u = np.zeros((g, q))
    rr = np.zeros(g)
    log_det_r = np.zeros(g)
    for idx in parts:
        js, rs = j[idx], res[idx]
        m = idx.size
        zj = js[None] - rho[:, None, None] * np.concatenate([np.zeros((1, q)), js[:-1]])[None]
        zr = rs[None] - rho[:, None] * np.concatenate([[0.0], rs[:-1]])[None]
        zj[:, 0] *= np.sqrt(one_minus)[:, None]
        zr[:, 0] *= np.sqrt(one_minus)
        a += np.matmul(zj.transpose(0, 2, 1), zj) / one_minus[:, None, None]
        u += np.einsum("gmi,gm->gi", zj, zr) / one_minus[:, None]
        rr += np.einsum("gm,gm->g", zr, zr) / one_minus
        log_det_r += (m - 1) * np.log(one_minus)
    a_inv = np.linalg.pinv(a)
    quad = rr - np.einsum("gi,gik,gk->g", u, a_inv, u)
    # parameters that move the curve alike (collinear columns) make ``a`` singular at every
    # rho: its log-determinant is then that of its nonzero part (the pseudo-determinant, as
    # the pseudo-inverse above), and the residuals keep the degrees of freedom the fit did
    # not use, so no likelihood is -inf - -inf = NaN
    rank = int(np.linalg.matrix_rank(j))
    dof_fit = dof + (q - rank)
    s2 = np.maximum(quad, 1e-300) / dof_fit
    eig = np.linalg.eigvalsh(a)
    log_det_a = np.sum(np.log(np.maximum(eig[:, q - rank :], 1e-300)), axis=1)
    loglik = -0.5 * (dof_fit * np.log(s2) + log_det_r + log_det_a)
    weight = np.exp(loglik - loglik.max()) / np.sqrt(one_minus)
    weight /= weight.sum()
    # the posterior median of rho: the mean of the sandwiches, or rho's posterior mean, are
    # pulled towards rho = 1, where a trend's variance explodes, and are over-wide when the
    # noise is independent
    k = min(int(np.searchsorted(np.cumsum(weight), 0.5)), g - 1)
    if rho_estimate == "maximum":
        k = int(np.argmax(loglik))
    meat = np.zeros((q, q))
    for idx in parts:  # J^T R J with (R x)_i = sum_j rho^|i-j| x_j: a forward and a backward pass
        js = j[idx]
        ahead, behind = js.copy(), js.copy()
        for i in range(1, idx.size):
            ahead[i] += rho[k] * ahead[i - 1]
            behind[-1 - i] += rho[k] * behind[-i]
        meat += js.T @ (ahead + behind - js)
    bread = np.linalg.pinv(j.T @ j)
    cov = np.full((p, p), np.inf)
    cov[np.ix_(~flat, ~flat)] = bread @ (s2[k] * meat) @ bread
    return cov, float(s2[k]), effective_dof(n, p, float(rho[k]), dof), float(rho[k])
