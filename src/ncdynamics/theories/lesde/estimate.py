"""Estimating the LE-SDE from recorded training ([1], Sec. 4.1 and App. D).

Time is the SGD iteration index m (step 1): rates are per iteration. Class-mean logits
``means`` have shape ``(T, K, p)`` (p = K for logits); row k is Xbar^k.

Estimators of A(t) = int alpha and B(t) = int beta:

- :func:`estimate_ab_l` (l-model, eq. (11)/(D.6) corrected: the paper's
  "X̄^k - X̄^{k-1}" is X̄^k - X̄ and D.6's e^{B} is e^{-B}); exact on l-model ODE output;
- :func:`estimate_ab_L` (L-model, K = 3, App. D.1 with v1, v2); equals A + const and
  B + const on L-model ODE output, so its derivatives are asymptotically unbiased;
- :func:`estimate_ab_projection` (exact L-model estimator for any K,
  derived in its docstring from the s-reduction of erratum 3 of docs/theories/lesde.md).

Then :func:`rates_savgol` (alpha-hat, beta-hat), :func:`tail_index` (D.19),
:func:`fit_margin_rates` (constant or power-law rates fitted to the L-model's margin
projections, what the confrontation with runs uses),
:func:`leode_imitation` with :func:`rescale_to_real` and :func:`relative_distance` (D.21),
and :func:`drift_from_impacts`, the direct estimate of E from the elasticity probe.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_labels, check_option
from .model import d_vectors, hbar, v1_v2_k3

__all__ = [
    "ABEstimate",
    "DirectEstimate",
    "LEODEImitation",
    "MarginRateFit",
    "RATE_LAWS",
    "class_means_from_records",
    "drift_from_impacts",
    "estimate_ab_L",
    "estimate_ab_l",
    "estimate_ab_projection",
    "fit_margin_rates",
    "integrated_power_rate",
    "leode_imitation",
    "norm_adjust",
    "rates_savgol",
    "relative_distance",
    "rescale_to_real",
    "tail_index",
]

Array = NDArray[np.float64]
MODELS = ("l", "L")


@dataclass(frozen=True)
class ABEstimate:
    """Estimated integrated elasticities A(t), B(t), each of shape (T,)."""

    A: Array
    B: Array


def class_means_from_records(
    logits: Any, labels: Any, n_classes: int, *, fill: Literal["none", "ffill"] = "none"
) -> Array:
    """Xbar^k(m): mean over trials r with label_{r,m} = k of logits_{r,m}.

    Parameters
    ----------
    logits : ndarray of shape (T, R, p)
    labels : ndarray of shape (T, R)
    n_classes : int
        K in [1].
    fill : {"none", "ffill"}
        Iterations where a class was not drawn are NaN, or carry the last value (the
        first recorded value before a class is first drawn).

    Returns
    -------
    ndarray of shape (T, K, p)
    """
    logits = check_array(logits, "logits", ndim=3, dtype=np.float64)
    k = check_int(n_classes, "n_classes", low=2)
    labels = check_array(labels, "labels", shape=logits.shape[:2])
    check_labels(labels.ravel(), "labels", num_classes=k)
    check_option(fill, "fill", ("none", "ffill"))
    onehot = (labels[..., None] == np.arange(k)).astype(np.float64)  # (T, R, K)
    counts = onehot.sum(axis=1)  # (T, K)
    sums = np.einsum("trk,trp->tkp", onehot, logits)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / counts[..., None]
    means[counts == 0] = np.nan
    if fill == "ffill":
        for t in range(1, means.shape[0]):
            gap = counts[t] == 0
            means[t, gap] = means[t - 1, gap]
        for c in range(k):  # leading gaps take the first recorded value
            seen = np.flatnonzero(counts[:, c] > 0)
            if seen.size and seen[0] > 0:
                means[: seen[0], c] = means[seen[0], c]
    return means


def _reference(x: Array, ref: int) -> Array:
    ref = check_int(ref, "ref", low=1, high=x.shape[0])
    return np.nanmean(x[:ref], axis=0)


def _safe_log(x: Array) -> Array:
    """log|x| with NaN where the result is not finite (zero or NaN entries)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(np.abs(x))
    logs[~np.isfinite(logs)] = np.nan
    return logs


class _quiet_nanmean:
    def __enter__(self) -> None:
        import warnings

        self._ctx = warnings.catch_warnings()
        self._ctx.__enter__()
        warnings.simplefilter("ignore", RuntimeWarning)

    def __exit__(self, *exc: Any) -> None:
        self._ctx.__exit__(*exc)


def estimate_ab_l(means: Any, *, ref: int = 1) -> ABEstimate:
    """l-model estimator of A(t), B(t) ([1], eq. (11), D.6, corrected).

    With Xbar(t) = mean_k Xbar^k(t), c0 = Xbar(0), c_k = Xbar^k(0) - Xbar(0), entry-wise:

        A = avg_j avg_k log| Xbar_j (Xbar^k_j - Xbar_j)^{K-1} / (c0_j c_kj^{K-1}) |
        B = -avg_j avg_k log| c0_j (Xbar^k_j - Xbar_j) / (c_kj Xbar_j) |

    Non-finite logs (zero or NaN entries) are skipped.

    Parameters
    ----------
    means : ndarray of shape (T, K, p)
    ref : int
        Number of initial iterations averaged into the reference (1 = the paper's t = 0).
    """
    x = check_array(means, "means", ndim=3, dtype=np.float64, finite=False)
    k = x.shape[1]
    avg = x.mean(axis=1)  # (T, p)
    dev = x - avg[:, None, :]  # (T, K, p)
    c0 = _reference(avg, ref)
    c = _reference(dev, ref)
    log_common = _safe_log(avg / c0)[:, None, :]  # (T, 1, p)
    log_diff = _safe_log(dev / c)  # (T, K, p)
    with _quiet_nanmean():
        a = np.nanmean(log_common + (k - 1) * log_diff, axis=(1, 2))
        b = -np.nanmean(log_diff - log_common, axis=(1, 2))
    return ABEstimate(a, b)


def estimate_ab_L(means: Any, *, subtract_one: bool = False, ref: int = 1) -> ABEstimate:
    """L-model estimator for K = 3 ([1], App. D.1, D.8-D.16).

    x1 = v1 . Xbar, x2 = (v2 - 4/3 v1) . Xbar, A' = log|x1(t)/x1(0)|, B' = log|x2(t)/x2(0)|,
    A = A' + 2 B', B = 2 (B' - A'). The paper subtracts 1 from x1, x2 before normalising
    (``subtract_one=True``); the reference code does not (default).
    """
    x = check_array(means, "means", shape=(None, 3, 3), dtype=np.float64, finite=False)
    v1, v2 = v1_v2_k3()
    flat = x.reshape(x.shape[0], 9)
    x1, x2 = flat @ v1, flat @ (v2 - 4.0 / 3.0 * v1)
    if subtract_one:
        x1, x2 = x1 - 1.0, x2 - 1.0
    a1 = _safe_log(x1 / _reference(x1, ref))
    b1 = _safe_log(x2 / _reference(x2, ref))
    return ABEstimate(a1 + 2 * b1, 2 * (b1 - a1))


def estimate_ab_projection(means: Any, *, ref: int = 1) -> ABEstimate:
    """Exact L-model estimator for any K, derived from the s-reduction.

    s_k = d_k . Xbar^k / |d_k|^2, S = sum_k s_k, b = s - mean(s):
    A - B = K log|S(t)/S(0)| and A + B/(K-1) = K log(|b(t)|/|b(0)|).

    Derivation: under the L-model ([1] Sec. 3.2.2) the projections s obey
    s' = (1/K) G s with G = (alpha + beta/(K-1)) I - beta/(K-1) 1 1^T, exactly and for any
    rates (erratum 3 of docs/theories/lesde.md, which replaces [1] eq. (9)). G has two
    eigenspaces: the all-ones direction, with eigenvalue alpha - beta, and its orthogonal
    complement, with eigenvalue alpha + beta/(K-1). The sum S lives on the first and the
    centred vector b on the second, so with A, B the integrated rates
    S(t) = S(0) exp((A - B)/K) and b(t) = b(0) exp((A + B/(K-1))/K); taking logarithms
    and solving the two linear equations for A and B gives the estimator. No offset enters
    (unlike D.8-D.16 of [1]), and K is arbitrary.
    """
    x = check_array(means, "means", ndim=3, dtype=np.float64, finite=False)
    k = x.shape[1]
    if x.shape[2] != k:
        raise ValueError(f"`means` must have shape (T, K, K) (logits); got {x.shape}.")
    s = np.einsum("kj,tkj->tk", d_vectors(k), x) / ((k - 1) / k)
    total = s.sum(axis=1)
    spread = np.linalg.norm(s - s.mean(axis=1, keepdims=True), axis=1)
    ab1 = k * _safe_log(total / _reference(total, ref))
    ab2 = k * _safe_log(spread / _reference(spread, ref))
    return ABEstimate((ab1 + (k - 1) * ab2) / k, (k - 1) * (ab2 - ab1) / k)


def rates_savgol(a: Any, window: int, *, polyorder: int = 2) -> Array:
    """alpha-hat = d A / dm by a Savitzky--Golay filter, delta = 1 (App. D.1.2).

    NaN entries are filled by linear interpolation first.
    """
    from scipy.signal import savgol_filter

    a = check_array(a, "a", ndim=1, dtype=np.float64, finite=False, min_size=1)
    window = check_int(window, "window", low=polyorder + 1)
    ok = np.isfinite(a)
    if not ok.any():
        raise ValueError("`a` must have at least one finite entry.")
    if not ok.all():
        idx = np.arange(a.size)
        a = np.interp(idx, idx[ok], a[ok])
    window = min(window if window % 2 else window + 1, a.size if a.size % 2 else a.size - 1)
    if window <= polyorder:
        raise ValueError(f"`a` is too short ({a.size}) for a Savitzky-Golay window.")
    return savgol_filter(a, window_length=window, polyorder=polyorder, deriv=1, delta=1.0)


def tail_index(a: Any, *, tail: int = 1000) -> float:
    """Tail index r = 1 - mean_{last tail} log A(t) / log(1 + t) ([1], D.19).

    t is the 0-based iteration index. If more than half of the tail is negative the series
    is negated first (as for B-hat); logs of non-positive values are skipped. The estimate
    is < 1 exactly when the geometric mean of A over the tail exceeds 1.

    Returns
    -------
    float
        NaN if no tail value is positive.
    """
    a = check_array(a, "a", ndim=1, dtype=np.float64, finite=False, min_size=2)
    tail = check_int(tail, "tail", low=1)
    t = np.arange(a.size, dtype=np.float64)
    sel = slice(max(1, a.size - tail), a.size)
    vals, ts = a[sel], t[sel]
    if np.sum(vals < 0) > vals.size / 2:
        vals = -vals
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.log(vals) / np.log1p(ts)
    ratio = ratio[np.isfinite(ratio)]
    return float(1.0 - ratio.mean()) if ratio.size else float("nan")


def norm_adjust(rate: Any, means: Any) -> Array:
    """rate(t) * avg_k |Xbar^k(t)| (Fig. D.6)."""
    rate = check_array(rate, "rate", ndim=1, dtype=np.float64, finite=False)
    means = check_array(means, "means", ndim=3, dtype=np.float64, finite=False)
    return rate * np.linalg.norm(means, axis=2).mean(axis=1)


@dataclass(frozen=True)
class LEODEImitation:
    """LE-ODE driven by estimated rates: mean and sd over runs, each (T, K, K)."""

    mean: Array
    sd: Array


def leode_imitation(
    alpha_hat: Any,
    beta_hat: Any,
    x0_real: Any,
    *,
    rng: np.random.Generator,
    n_runs: int = 500,
    model: Literal["l", "L"] = "L",
    init: Literal["random", "real"] = "random",
) -> LEODEImitation:
    """Forward-Euler LE-ODE (step 1) driven by alpha-hat(m), beta-hat(m) (App. D.2).

    X^k(m) = X^k(m-1) + (1/K)[alpha(m) H^k X^k(m-1) + beta(m) sum_{l != k} H^l X^l(m-1)],
    H^l = Hbar^l (L-model) or I (l-model). ``init="random"``: X^k(0) ~ N(0, s_k^2 I) with
    s_k = |Xbar^k(0)|/sqrt(K) (the reference code); ``"real"``: start at the real Xbar(0).

    Parameters
    ----------
    alpha_hat, beta_hat : ndarray of shape (T,)
    x0_real : ndarray of shape (K, K)
    """
    al = check_array(alpha_hat, "alpha_hat", ndim=1, dtype=np.float64)
    be = check_array(beta_hat, "beta_hat", shape=al.shape, dtype=np.float64)
    x0 = check_array(x0_real, "x0_real", ndim=2, dtype=np.float64)
    k = x0.shape[0]
    if x0.shape != (k, k):
        raise ValueError(f"`x0_real` must have shape (K, K); got {x0.shape}.")
    check_option(model, "model", MODELS)
    check_option(init, "init", ("random", "real"))
    n_runs = check_int(n_runs, "n_runs", low=1) if init == "random" else 1
    h = hbar(k) if model == "L" else np.broadcast_to(np.eye(k), (k, k, k))
    if init == "random":
        scale = np.linalg.norm(x0, axis=1) / np.sqrt(k)
        x = rng.standard_normal((n_runs, k, k)) * scale[None, :, None]
    else:
        x = x0[None].copy()
    out = np.empty((al.size, *x.shape))
    out[0] = x
    for m in range(1, al.size):
        hx = np.einsum("lij,rlj->rli", h, x)  # (runs, K, K): H^l X^l
        total = hx.sum(axis=1, keepdims=True)
        x = x + (al[m] * hx + be[m] * (total - hx)) / k
        out[m] = x
    return LEODEImitation(out.mean(axis=1), out.std(axis=1))


def rescale_to_real(sim: Any, real: Any, *, k: int = 0, logit: int = 0, tail: int = 1000) -> Array:
    """Multiply ``sim`` (T, K, K) by one scalar matching real[k, logit] over the tail."""
    sim = check_array(sim, "sim", ndim=3, dtype=np.float64)
    real = check_array(real, "real", shape=sim.shape, dtype=np.float64, finite=False)
    sel = slice(max(0, sim.shape[0] - tail), sim.shape[0])
    denom = np.mean(sim[sel, k, logit])
    if denom == 0:
        raise ValueError("`sim` has zero mean on the rescaling window.")
    return sim * (np.nanmean(real[sel, k, logit]) / denom)


def relative_distance(real: Any, sim: Any, *, model: Literal["l", "L"] = "L") -> Array:
    """RD_k(t) = |Xbar^k - Ybar^k|_{H^k} / ((|Xbar^k| + |Ybar^k|)/2) ([1], D.21).

    |v|_{H^k} = |d_k . v|/|d_k| (L-model) or |v| (l-model). Returns (T, K) in [0, 2].
    """
    real = check_array(real, "real", ndim=3, dtype=np.float64, finite=False)
    sim = check_array(sim, "sim", shape=real.shape, dtype=np.float64, finite=False)
    check_option(model, "model", MODELS)
    diff = real - sim
    if model == "L":
        d = d_vectors(real.shape[1])
        num = np.abs(np.einsum("kj,tkj->tk", d, diff)) / np.linalg.norm(d[0])
    else:
        num = np.linalg.norm(diff, axis=2)
    den = (np.linalg.norm(real, axis=2) + np.linalg.norm(sim, axis=2)) / 2
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


@dataclass(frozen=True)
class DirectEstimate:
    """Drift matrix measured by single SGD steps (elasticity probe).

    Attributes
    ----------
    E : ndarray of shape (K, K)
        E[k, l]: per-iteration response of class-k features to a step on a class-l sample.
    alpha, beta : float
        Mean of the diagonal and of the off-diagonal of E.
    """

    E: Array
    alpha: float
    beta: float


def drift_from_impacts(
    impacts: Any,
    x_source: Any,
    y_source: Any,
    y_probe: Any,
    n_classes: int,
    *,
    lr: float,
    model: Literal["l", "L"] = "l",
) -> DirectEstimate:
    """Direct estimate of E in X^k <- X^k + E_{k,L} H_{k,L} X_J^L ([1], eq. (4), h = 1).

    One SGD step on source j (class l) changes probe i (class k) by lr * impacts[j, i].
    Least squares over all pairs of the block, pooled:
    E_kl = lr * sum <impact_ji, u_j> / sum |u_j|^2 with u_j = H x_j (H = I for the l-model,
    Hbar^l for the L-model).

    Parameters
    ----------
    impacts : ndarray of shape (n_sources, n_probe, p)
        Change of the probe features per unit step size (from the elasticity probe).
    x_source : ndarray of shape (n_sources, p)
        Pre-step features of the sources.
    y_source : ndarray of shape (n_sources,)
    y_probe : ndarray of shape (n_probe,)
    n_classes : int
        K in [1].
    lr : float
        The training step size (converts "per unit step" to "per iteration").
    """
    imp = check_array(impacts, "impacts", ndim=3, dtype=np.float64)
    n_src, n_probe, p = imp.shape
    xs = check_array(x_source, "x_source", shape=(n_src, p), dtype=np.float64)
    k = check_int(n_classes, "n_classes", low=2)
    ys = check_labels(y_source, "y_source", n_samples=n_src, num_classes=k)
    yp = check_labels(y_probe, "y_probe", n_samples=n_probe, num_classes=k)
    check_option(model, "model", MODELS)
    if model == "L":
        if p != k:
            raise ValueError(f"the L-model needs logits (p = K = {k}); got p = {p}.")
        u = np.einsum("jab,jb->ja", hbar(k)[ys], xs)
    else:
        u = xs
    proj = np.einsum("jip,jp->ji", imp, u)  # (n_src, n_probe)
    e = np.full((k, k), np.nan)
    for kk in range(k):
        for ll in range(k):
            src, prb = ys == ll, yp == kk
            if src.any() and prb.any():
                den = prb.sum() * np.sum(u[src] ** 2)
                e[kk, ll] = lr * proj[np.ix_(src, prb)].sum() / den if den > 0 else np.nan
    off = ~np.eye(k, dtype=bool)
    return DirectEstimate(e, float(np.nanmean(np.diag(e))), float(np.nanmean(e[off])))


# ---------------------------------------------------------------- rate laws of the margins
RateLaw = Literal["constant", "power-law"]
RATE_LAWS: tuple[RateLaw, ...] = ("constant", "power-law")
#: Search bounds of the tail indices r_alpha, r_beta of the power-law rates (D.17): below 0
#: the rates grow, above 1 their integrals A, B converge.
TAIL_INDEX_BOUNDS = (-1.0, 4.0)
#: Least residual scale (log units, i.e. relative error) of a margin record: float64 records
#: of an exact solution fit both rate laws to ~1e-14, and this floor makes such fits tie in
#: the information criterion, so that the simpler law is kept.
LOG_RESIDUAL_FLOOR = 1e-9
_GRID = np.linspace(TAIL_INDEX_BOUNDS[0], TAIL_INDEX_BOUNDS[1], 11)


def integrated_power_rate(t: Any, r: float) -> Array:
    """I(t; r) = int_0^t (1 + u)^{-r} du ([1], (D.17)-(D.18) with alpha_0 = 1).

    ``((1+t)^{1-r} - 1)/(1 - r)``, continuous through ``r = 1`` (``log(1+t)``) and equal to
    ``t`` at ``r = 0`` (constant rates).
    """
    x = np.log1p(np.asarray(t, dtype=np.float64))
    a = 1.0 - float(r)
    if abs(a) < 1e-8:
        return np.asarray(x * (1.0 + a * x / 2.0), dtype=np.float64)
    return np.asarray(np.expm1(a * x) / a, dtype=np.float64)


def _power_rate_slope(t: Array, r: float) -> Array:
    """dI(t; r)/dr of :func:`integrated_power_rate` (for the fit's Jacobian)."""
    x = np.log1p(t)
    a = 1.0 - float(r)
    if abs(a) < 1e-6:  # series in a: d/da [x + a x^2/2 + a^2 x^3/6] = x^2/2 + a x^3/3
        return np.asarray(-(x**2 / 2.0 + a * x**3 / 3.0), dtype=np.float64)
    e = np.exp(a * x)
    return np.asarray(-(a * x * e - np.expm1(a * x)) / a**2, dtype=np.float64)


@dataclass(frozen=True)
class MarginRateFit:
    """A rate law of the L-model fitted to the logs of the two margin projections.

    With ``A(t) = alpha_0 I(t; r_alpha)`` and ``B(t) = beta_0 I(t; r_beta)``
    (:func:`integrated_power_rate`; ``r = 0`` gives constant rates ``alpha = alpha_0``),
    the exact L-model reduction (see :func:`estimate_ab_projection`) gives

        log|S(t)| = c_S + (A - B)/K,      log|b(t)| = c_b + (A + B/(K-1))/K.

    Attributes
    ----------
    law : {"constant", "power-law"}
    names : tuple of str
        ``("c_margin", "c_spread", "alpha", "beta")`` or, for the power law,
        ``("c_margin", "c_spread", "alpha0", "beta0", "r_alpha", "r_beta")``.
    theta : ndarray of shape (n_params,)
    cov : ndarray of shape (n_params, n_params)
        Gauss-Newton covariance of ``theta`` (each observable weighted by its residual scale).
    dof : int
        Residuals minus parameters.
    n_classes : int
    scatter : ndarray of shape (2,)
        Residual standard deviation of ``log|S|`` and ``log|b|`` (floored at
        :data:`LOG_RESIDUAL_FLOOR`).
    n_records : int
    aic, aicc : float
        Akaike's criterion (and its small-sample correction) of the Gaussian likelihood with
        one variance per observable, the two variances counted as parameters.
    """

    law: str
    names: tuple[str, ...]
    theta: Array
    cov: Array
    dof: int
    n_classes: int
    scatter: Array
    n_records: int
    aic: float
    aicc: float

    def curves(self, t: Any, theta: Any = None) -> tuple[Array, Array]:
        """``(log|S|, log|b|)`` of the law at steps ``t`` (with ``theta``, default the fit)."""
        th = self.theta if theta is None else np.asarray(theta, dtype=np.float64)
        return _log_curves(self.law, th, np.asarray(t, dtype=np.float64), self.n_classes)


def _rates_of(law: str, theta: Array) -> tuple[float, float, float, float]:
    if law == "constant":
        return float(theta[2]), float(theta[3]), 0.0, 0.0
    return float(theta[2]), float(theta[3]), float(theta[4]), float(theta[5])


def _log_curves(law: str, theta: Array, t: Array, k: int) -> tuple[Array, Array]:
    a0, b0, ra, rb = _rates_of(law, theta)
    a, b = a0 * integrated_power_rate(t, ra), b0 * integrated_power_rate(t, rb)
    return theta[0] + (a - b) / k, theta[1] + (a + b / (k - 1)) / k


def _design(t: Array, k: int, ra: float, rb: float) -> tuple[Array, Array]:
    """Design matrices of (c_S, c_b, alpha0, beta0) at fixed tail indices."""
    ia, ib = integrated_power_rate(t, ra), integrated_power_rate(t, rb)
    one, zero = np.ones_like(t), np.zeros_like(t)
    x_s = np.stack([one, zero, ia / k, -ib / k], axis=1)
    x_b = np.stack([zero, one, ia / k, ib / (k * (k - 1))], axis=1)
    return x_s, x_b


def _linear_at(
    t: Array, ys: Array, yb: Array, k: int, ra: float, rb: float, w: Array
) -> tuple[Array, float]:
    """Weighted least squares of (c_S, c_b, alpha0, beta0) at fixed (r_alpha, r_beta)."""
    x_s, x_b = _design(t, k, ra, rb)
    x = np.concatenate([w[0] * x_s, w[1] * x_b])
    y = np.concatenate([w[0] * ys, w[1] * yb])
    coef = np.linalg.lstsq(x, y, rcond=None)[0]
    res = y - x @ coef
    return coef, float(res @ res)


def _fit_theta(
    law: str, t: Array, ys: Array, yb: Array, k: int, w: Array, start: Array | None = None
) -> Array:
    """Weighted least squares of the law; the power law starts at ``start`` or at the best
    point of a grid of tail indices (the other parameters solved linearly there)."""
    if law == "constant":
        return _linear_at(t, ys, yb, k, 0.0, 0.0, w)[0]
    from scipy.optimize import least_squares

    if start is None:
        best = _best_on_grid(t, ys, yb, k, w)
        start = np.concatenate([_linear_at(t, ys, yb, k, *best, w)[0], best])
    start = np.array(start, dtype=np.float64)
    lo, hi = TAIL_INDEX_BOUNDS
    start[4:] = np.clip(start[4:], lo + 1e-9, hi - 1e-9)

    def residuals(th: Array) -> Array:
        fs, fb = _log_curves(law, th, t, k)
        return np.concatenate([w[0] * (ys - fs), w[1] * (yb - fb)])

    def jacobian(th: Array) -> Array:
        a0, b0, ra, rb = th[2:6]
        x_s, x_b = _design(t, k, ra, rb)
        da, db = a0 * _power_rate_slope(t, ra) / k, b0 * _power_rate_slope(t, rb) / k
        j_s = np.concatenate([x_s, np.stack([da, -db], axis=1)], axis=1)
        j_b = np.concatenate([x_b, np.stack([da, db / (k - 1)], axis=1)], axis=1)
        return -np.concatenate([w[0] * j_s, w[1] * j_b])

    bounds = ([-np.inf] * 4 + [lo, lo], [np.inf] * 4 + [hi, hi])
    sol = least_squares(
        residuals, start, jac=jacobian, bounds=bounds, x_scale="jac", xtol=1e-12, ftol=1e-12
    )
    return np.asarray(sol.x, dtype=np.float64)


def _best_on_grid(t: Array, ys: Array, yb: Array, k: int, w: Array) -> tuple[float, float]:
    """The (r_alpha, r_beta) of :data:`_GRID` x :data:`_GRID` with the least weighted residual
    once the linear parameters are solved (all pairs at once, by stacked QR)."""
    ints = np.stack([integrated_power_rate(t, r) for r in _GRID])  # (G, T)
    ia, ib = np.repeat(ints, _GRID.size, axis=0), np.tile(ints, (_GRID.size, 1))  # (G^2, T)
    one, zero = np.ones_like(ia), np.zeros_like(ia)
    x_s = np.stack([one, zero, ia / k, -ib / k], axis=2)  # (G^2, T, 4)
    x_b = np.stack([zero, one, ia / k, ib / (k * (k - 1))], axis=2)
    x = np.concatenate([w[0] * x_s, w[1] * x_b], axis=1)  # (G^2, 2T, 4)
    y = np.concatenate([w[0] * ys, w[1] * yb])
    scale = np.linalg.norm(x, axis=1, keepdims=True)  # columns to unit norm: conditioning
    q = np.linalg.qr(x / np.where(scale > 0, scale, 1.0))[0]
    sse = float(y @ y) - np.sum(np.einsum("gnk,n->gk", q, y) ** 2, axis=1)
    best = int(np.argmin(sse))
    return float(_GRID[best // _GRID.size]), float(_GRID[best % _GRID.size])


def fit_margin_rates(
    steps: Any,
    log_margin: Any,
    log_spread: Any,
    n_classes: int,
    *,
    law: RateLaw = "constant",
) -> MarginRateFit:
    """Fit a rate law of the L-model to ``log|S|`` and ``log|b|`` ([1], eq. (9), (D.17)).

    The two observables are fitted jointly (they share alpha and beta), each weighted by
    the inverse of its residual scale, re-estimated three times; this maximises the
    Gaussian likelihood with one variance per observable. The power law is searched on a
    grid of tail indices (the other parameters enter linearly) and then refined, with
    ``r_alpha``, ``r_beta`` in :data:`TAIL_INDEX_BOUNDS`.

    Parameters
    ----------
    steps : ndarray of shape (T,)
        Record times (the stream's steps; the rate laws count time from step 0).
    log_margin, log_spread : ndarray of shape (T,)
        ``log|S|`` and ``log|b|`` (any constant offset is absorbed by ``c_S``, ``c_b``).
    n_classes : int
        K >= 2.
    law : {"constant", "power-law"}

    Returns
    -------
    MarginRateFit
    """
    from ..uncertainty import ar1_reml_covariance, numeric_jacobian

    t = check_array(steps, "steps", ndim=1, dtype=np.float64)
    ys = check_array(log_margin, "log_margin", shape=t.shape, dtype=np.float64)
    yb = check_array(log_spread, "log_spread", shape=t.shape, dtype=np.float64)
    k = check_int(n_classes, "n_classes", low=2)
    check_option(law, "law", RATE_LAWS)
    n_params = 4 if law == "constant" else 6
    if 2 * t.size <= n_params:
        raise ValueError(
            f"`steps` must hold more than {n_params // 2} records for the {law} law; got {t.size}."
        )
    w = np.ones(2)
    theta = _fit_theta(law, t, ys, yb, k, w)
    for i in range(3):
        if i:
            theta = _fit_theta(law, t, ys, yb, k, w, theta)
        fs, fb = _log_curves(law, theta, t, k)
        sse = np.array([np.sum((ys - fs) ** 2), np.sum((yb - fb) ** 2)])
        scatter = np.sqrt(np.maximum(sse / t.size, LOG_RESIDUAL_FLOOR**2))
        w = 1.0 / scatter

    def weighted(th: Array) -> Array:
        f1, f2 = _log_curves(law, th, t, k)
        return np.concatenate([w[0] * (ys - f1), w[1] * (yb - f2)])

    cov, _, dof, _ = ar1_reml_covariance(
        numeric_jacobian(weighted, theta), weighted(theta), series=2
    )
    n_res, n_par = 2 * t.size, n_params + 2  # the two variances are parameters too
    loglik = -0.5 * t.size * float(np.sum(np.log(2 * np.pi * scatter**2) + 1.0))
    aic = 2 * n_par - 2 * loglik
    spare = n_res - n_par - 1
    aicc = aic + 2 * n_par * (n_par + 1) / spare if spare > 0 else np.inf
    names = (
        ("c_margin", "c_spread", "alpha", "beta")
        if law == "constant"
        else ("c_margin", "c_spread", "alpha0", "beta0", "r_alpha", "r_beta")
    )
    return MarginRateFit(law, names, theta, cov, dof, k, scatter, t.size, aic, float(aicc))
