"""Equations of the LE-SDE [1]: drift matrices, rates and closed-form class means.

Layout: a stack of K per-class p-vectors has shape ``(..., K, p)``; flattened it is
class-major, block k = ``X[k*p:(k+1)*p]`` ([1], Sec. 3). Rates alpha(t), beta(t) are
:class:`Rate` objects holding the value and its integral A(t) = int_0^t alpha.

Errata implemented here (docs/theories/lesde.md, Verified errata 1-3; tested in
``tests/theories/test_lesde_model.py``):

- the drift matrix is block-wise, M[k, l] = E_kl H_kl / K; the paper's "(E ⊗ I_K) ∘ H" is
  wrong for non-diagonal H blocks;
- the L-model eigenvalue of the f-modes is (alpha + beta/(K-1))/K, not (alpha+beta/(K+1))/K
  (C.8);
- eq. (9) with fixed f-vectors is exact only for constant alpha/beta; the s-reduction of
  :func:`L_model_s` is exact for any rates.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar

__all__ = [
    "LEParams",
    "L_model_means",
    "L_model_s",
    "Rate",
    "as_rate",
    "binary_means",
    "d_vectors",
    "drift",
    "drift_matrix",
    "h_isotropic",
    "h_logits",
    "hbar",
    "l_model_decompose",
    "l_model_means",
    "le_matrix",
    "v1_v2_k3",
]

Array = NDArray[np.float64]
# exponent of a mode, lambda(A, B), from the integrated rates (scalars or arrays)
_ModeRate = Callable[[Any, Any], Any]


# ----------------------------------------------------------------------------- rates
@dataclass(frozen=True)
class Rate:
    """A time-varying rate r(t) with its integral R(t) = int_0^t r(tau) dtau.

    Attributes
    ----------
    value : callable
        ``value(t) -> r(t)``, vectorised over an array ``t``.
    integral : callable
        ``integral(t) -> R(t)``, vectorised, with R(0) = 0.
    constant : float or None
        The value when the rate is constant (enables closed forms).
    """

    value: Callable[[Any], Any]
    integral: Callable[[Any], Any]
    constant: float | None = None

    def __call__(self, t: Any) -> Any:
        return self.value(t)


def _quad_integral(f: Callable[[float], float]) -> Callable[[Any], Any]:
    from scipy.integrate import quad

    def integral(t: Any) -> Any:
        ts = np.atleast_1d(np.asarray(t, dtype=np.float64))
        order = np.argsort(ts)
        out = np.empty_like(ts)
        acc, prev = 0.0, 0.0
        for i in order:
            acc += quad(f, prev, ts[i], epsabs=0.0, epsrel=1e-13, limit=200)[0]
            prev = ts[i]
            out[i] = acc
        return out if np.ndim(t) else float(out[0])

    return integral


def as_rate(r: Any, name: str = "rate", *, times: Any = None) -> Rate:
    """Turn a constant, callable or array into a :class:`Rate`.

    Parameters
    ----------
    r : float, callable, ndarray of shape (n_times,) or Rate
        A constant; a vectorised callable ``r(t)`` (its integral is computed by adaptive
        quadrature, relative accuracy ~1e-13); or values on the grid ``times``, linearly
        interpolated (held constant outside the grid) and integrated exactly.
    name : str
        Argument name for messages.
    times : ndarray of shape (n_times,), optional
        Grid of an array rate; defaults to ``0, 1, ..., n_times - 1`` (SGD iterations).
    """
    if isinstance(r, Rate):
        return r
    if callable(r):
        return Rate(r, _quad_integral(lambda s: float(r(s))))
    if np.ndim(r) == 0:
        c = check_scalar(r, name)
        return Rate(
            lambda t: np.full(np.shape(t), c) if np.ndim(t) else c,
            lambda t: c * np.asarray(t, dtype=np.float64) if np.ndim(t) else c * t,
            c,
        )
    vals = check_array(r, name, ndim=1, dtype=np.float64, min_size=1)
    grid = (
        np.arange(vals.size, dtype=np.float64)
        if times is None
        else check_array(times, "times", shape=(vals.size,), dtype=np.float64)
    )
    if vals.size > 1 and np.any(np.diff(grid) <= 0):
        raise ValueError("`times` must be strictly increasing.")
    cum = np.concatenate([[0.0], np.cumsum(np.diff(grid) * (vals[1:] + vals[:-1]) / 2)])

    def value(t: Any) -> Any:
        return np.interp(t, grid, vals)

    def from_start(ts: Array) -> Array:
        # int_{grid[0]}^{t} of the interpolant, held constant outside the grid
        i = np.clip(np.searchsorted(grid, ts, side="right") - 1, 0, grid.size - 1)
        inside = cum[i] + (ts - grid[i]) * (vals[i] + np.interp(ts, grid, vals)) / 2
        beyond = cum[-1] + (ts - grid[-1]) * vals[-1]
        before = (ts - grid[0]) * vals[0]
        return np.where(ts < grid[0], before, np.where(ts > grid[-1], beyond, inside))

    def integral(t: Any) -> Any:
        out = from_start(np.asarray(t, dtype=np.float64)) - from_start(np.zeros(()))
        return out if np.ndim(t) else float(out)

    return Rate(value, integral)


# ----------------------------------------------------------------------------- matrices
def le_matrix(alpha: float, beta: float, n_classes: int) -> Array:
    """LE matrix E = (alpha - beta) I_K + beta 1 1^T ([1], Sec. 2.1).

    Parameters
    ----------
    alpha, beta : float
        Intra- and inter-class elasticity.
    n_classes : int
        K in [1].

    Returns
    -------
    ndarray of shape (K, K)
    """
    k = check_int(n_classes, "n_classes", low=2)
    return (alpha - beta) * np.eye(k) + beta * np.ones((k, k))


def d_vectors(n_classes: int) -> Array:
    """Margin directions d_j = e_j - 1_K / K of eq. (8); row j is d_j, shape (K, K).

    ``n_classes`` is K in [1].
    """
    k = check_int(n_classes, "n_classes", low=2)
    return np.eye(k) - np.full((k, k), 1.0 / k)


def hbar(n_classes: int) -> Array:
    """Rank-one projectors Hbar^j = d_j d_j^T / |d_j|^2 of eq. (8), shape (K, K, K).

    ``n_classes`` is K in [1].
    """
    d = d_vectors(n_classes)
    return np.einsum("ja,jb->jab", d, d) / np.sum(d[0] ** 2)


def h_isotropic(n_classes: int, dim: int) -> Array:
    """H of the l-model (Sec. 3.2.1): every block is I_p; shape (K, K, p, p).

    ``n_classes`` is K and ``dim`` is p in [1].
    """
    k = check_int(n_classes, "n_classes", low=2)
    p = check_int(dim, "dim", low=1)
    return np.broadcast_to(np.eye(p), (k, k, p, p)).copy()


def h_logits(n_classes: int) -> Array:
    """H of the L-model, eq. (8): block (i, j) is Hbar^j; shape (K, K, K, K).

    ``n_classes`` is K in [1].
    """
    hb = hbar(n_classes)
    return np.broadcast_to(hb[None], (hb.shape[0], *hb.shape)).copy()


def drift_matrix(alpha: float, beta: float, h: Any, *, class_probs: Any = None) -> Array:
    """Drift matrix M of the LE-SDE (5) for constant alpha, beta.

    Block (k, l) is ``E_kl H_kl pi_l`` with pi_l = 1/K for balanced sampling ([1], eq. (5);
    App. E for pi). The paper's "(E ⊗ I_K) ∘ H" is wrong for non-diagonal blocks; this is
    the block definition.

    Parameters
    ----------
    alpha, beta : float
    h : ndarray of shape (K, K, p, p)
    class_probs : ndarray of shape (K,), optional
        Probability that class l is drawn; default uniform.

    Returns
    -------
    ndarray of shape (K p, K p)
    """
    h = check_array(h, "h", ndim=4, dtype=np.float64)
    k, _, p, _ = h.shape
    if h.shape != (k, k, p, p):
        raise ValueError(f"`h` must have shape (K, K, p, p); got {h.shape}.")
    pi = _class_probs(class_probs, k)
    e = le_matrix(alpha, beta, k)
    blocks = (e * pi[None, :])[:, :, None, None] * h  # (K, K, p, p)
    return blocks.transpose(0, 2, 1, 3).reshape(k * p, k * p)


def _class_probs(class_probs: Any, k: int) -> Array:
    if class_probs is None:
        return np.full(k, 1.0 / k)
    pi = check_array(class_probs, "class_probs", shape=(k,), dtype=np.float64)
    if np.any(pi < 0) or not np.isclose(pi.sum(), 1.0):
        raise ValueError(f"`class_probs` must be non-negative and sum to 1; got sum {pi.sum()}.")
    return pi


@dataclass(frozen=True)
class LEParams:
    """Parameters of the LE-SDE (5) / LE-ODE (6).

    Build them with :meth:`make`, which validates the inputs and fills the defaults
    (no noise, uniform class probabilities).

    Attributes
    ----------
    alpha, beta : Rate
        Intra- and inter-class elasticity.
    h : ndarray of shape (K, K, p, p)
        Blocks H_kl (``h_isotropic`` or ``h_logits``).
    sigma : float
        Isotropic noise level: Sigma = sigma^2 I.
    class_probs : ndarray of shape (K,)
        Sampling probability of each class (uniform by default).
    """

    alpha: Rate
    beta: Rate
    h: Array
    sigma: float
    class_probs: Array

    @classmethod
    def make(
        cls, alpha: Any, beta: Any, h: Any, *, sigma: float = 0.0, class_probs: Any = None
    ) -> LEParams:
        """Build validated parameters from constants, callables or arrays."""
        h = check_array(h, "h", ndim=4, dtype=np.float64)
        k, _, p, _ = h.shape
        if h.shape != (k, k, p, p):
            raise ValueError(f"`h` must have shape (K, K, p, p); got {h.shape}.")
        sigma = check_scalar(sigma, "sigma", low=0.0)
        return cls(
            as_rate(alpha, "alpha"), as_rate(beta, "beta"), h, sigma, _class_probs(class_probs, k)
        )

    @property
    def n_classes(self) -> int:
        """K in [1]."""
        return int(self.h.shape[0])

    @property
    def dim(self) -> int:
        """p in [1]."""
        return int(self.h.shape[2])

    def blocks(self, t: float) -> Array:
        """Blocks E_kl(t) H_kl pi_l of M_t, shape (K, K, p, p)."""
        k = self.n_classes
        e = le_matrix(float(self.alpha(t)), float(self.beta(t)), k)
        return (e * self.class_probs[None, :])[:, :, None, None] * self.h


def drift(t: float, y: Array, params: LEParams) -> Array:
    """Drift of the LE-ODE (6) on class means: dXbar^k/dt = sum_l E_kl H_kl pi_l Xbar^l.

    Parameters
    ----------
    t : float
    y : ndarray of shape (..., K, p)
        Class means (any leading batch axes).
    params : LEParams

    Returns
    -------
    ndarray of shape (..., K, p)
    """
    return np.einsum("klij,...lj->...ki", params.blocks(t), y)


# ----------------------------------------------------------------------------- closed forms
def binary_means(t: Any, alpha: float, beta: float, c1: float, c2: float) -> Array:
    """Class means of the binary LE-ODE (3) for constant alpha, beta.

    Xbar^1 = (c1-c2)/2 e^{(a-b)t/2} + (c1+c2)/2 e^{(a+b)t/2},
    Xbar^2 = -(c1-c2)/2 e^{(a-b)t/2} + (c1+c2)/2 e^{(a+b)t/2}  ([1], Sec. 2.2).

    Returns
    -------
    ndarray of shape (n_times, 2)
    """
    ts = check_array(t, "t", ndim=1, dtype=np.float64)
    diff = (c1 - c2) / 2 * np.exp((alpha - beta) * ts / 2)
    common = (c1 + c2) / 2 * np.exp((alpha + beta) * ts / 2)
    return np.stack([diff + common, -diff + common], axis=1)


def l_model_decompose(x0: Any) -> tuple[Array, Array]:
    """Split initial class means into c0 = mean_k X^k(0) and c_k = X^k(0) - c0 (eq. 7).

    Parameters
    ----------
    x0 : ndarray of shape (K, p)

    Returns
    -------
    c0 : ndarray of shape (p,)
    c : ndarray of shape (K, p), summing to zero over classes
    """
    x0 = check_array(x0, "x0", ndim=2, dtype=np.float64)
    c0 = x0.mean(axis=0)
    return c0, x0 - c0


def l_model_means(t: Any, x0: Any, alpha: Any, beta: Any) -> Array:
    """Class means of the l-model LE-ODE, eq. (7), exact for time-varying rates.

    Xbar(t) = c e^{(A-B)/K} + (1_K ⊗ c0) e^{(A+(K-1)B)/K}  ([1], Prop. 3.2).

    Parameters
    ----------
    t : ndarray of shape (n_times,)
    x0 : ndarray of shape (K, p)
    alpha, beta : float, callable, ndarray or Rate

    Returns
    -------
    ndarray of shape (n_times, K, p)
    """
    ts = check_array(t, "t", ndim=1, dtype=np.float64)
    c0, c = l_model_decompose(x0)
    k = c.shape[0]
    a = np.asarray(as_rate(alpha, "alpha").integral(ts))
    b = np.asarray(as_rate(beta, "beta").integral(ts))
    diff = np.exp((a - b) / k)[:, None, None] * c[None]
    common = np.exp((a + (k - 1) * b) / k)[:, None, None] * c0[None, None, :]
    return diff + common


def L_model_s(t: Any, s0: Any, alpha: Any, beta: Any) -> Array:
    """Exact reduced coordinates s_k = d_k^T Xbar^k / |d_k|^2 of the L-model.

    s' = (1/K) G s with G = (alpha + beta/(K-1)) I - beta/(K-1) 1 1^T, so
    s(t) = sbar(0) 1 e^{(A-B)/K} + (s(0) - sbar(0) 1) e^{(A + B/(K-1))/K}.

    Parameters
    ----------
    t : ndarray of shape (n_times,)
    s0 : ndarray of shape (K,)

    Returns
    -------
    ndarray of shape (n_times, K)
    """
    ts = check_array(t, "t", ndim=1, dtype=np.float64)
    s0 = check_array(s0, "s0", ndim=1, dtype=np.float64)
    k = s0.size
    a = np.asarray(as_rate(alpha, "alpha").integral(ts))
    b = np.asarray(as_rate(beta, "beta").integral(ts))
    sbar = s0.mean()
    return (
        sbar * np.exp((a - b) / k)[:, None]
        + (s0 - sbar)[None] * np.exp((a + b / (k - 1)) / k)[:, None]
    )


def _s_coordinates(x: Array) -> Array:
    """s_k = d_k^T X^k / |d_k|^2 for X of shape (..., K, K)."""
    k = x.shape[-1]
    d = d_vectors(k)
    return np.einsum("kj,...kj->...k", d, x) / ((k - 1) / k)


def L_model_means(t: Any, x0: Any, alpha: Any, beta: Any) -> Array:
    """Class means of the L-model LE-ODE (eq. 6 with H of eq. 8), exact for any rates.

    Uses the s-reduction: Xbar^k(t) = Xbar^k(0) + (1/K) int_0^t sum_l E_kl s_l d_l dtau, with
    s from :func:`L_model_s`. For constant rates the integrals are closed forms (this is
    eq. (9) with its f-vectors written out); otherwise they are computed by quadrature.

    Parameters
    ----------
    t : ndarray of shape (n_times,)
    x0 : ndarray of shape (K, K)
        Initial class-mean logits; row k is class k.
    alpha, beta : float, callable, ndarray or Rate

    Returns
    -------
    ndarray of shape (n_times, K, K)
    """
    ts = check_array(t, "t", ndim=1, dtype=np.float64)
    x0 = check_array(x0, "x0", ndim=2, dtype=np.float64)
    k = x0.shape[0]
    if x0.shape != (k, k):
        raise ValueError(f"`x0` must have shape (K, K) for the L-model; got {x0.shape}.")
    ra, rb = as_rate(alpha, "alpha"), as_rate(beta, "beta")
    s0 = _s_coordinates(x0)
    sbar, b0 = s0.mean(), s0 - s0.mean()
    # integrals I_r,mode(t) = int_0^t r(tau) e^{lambda_mode(tau)} dtau, r in {alpha, beta}
    lam: dict[str, _ModeRate] = {
        "d": lambda a, b: (a - b) / k,
        "f": lambda a, b: (a + b / (k - 1)) / k,
    }
    if ra.constant is not None and rb.constant is not None:
        al, be = ra.constant, rb.constant
        ints: dict[tuple[str, str], Array] = {}
        for mode, f in lam.items():
            rate = f(al, be)
            g = ts if rate == 0 else np.expm1(rate * ts) / rate
            ints[("a", mode)], ints[("b", mode)] = al * g, be * g
    else:
        ints = _quad_mode_integrals(ts, ra, rb, lam)
    d = d_vectors(k)
    # sum_l E_kl s_l d_l with E_kl = beta + (alpha - beta) delta_kl, s_l = sbar e_d + b0_l e_f
    # beta-part: sum_l s_l d_l = sbar*sum_l d_l + sum_l b0_l d_l = b0 (since sum d_l = 0)
    x = np.broadcast_to(x0, (ts.size, k, k)).copy()
    x += (ints[("b", "f")] / k)[:, None, None] * b0[None, None, :]
    diag_d = (ints[("a", "d")] - ints[("b", "d")]) / k
    diag_f = (ints[("a", "f")] - ints[("b", "f")]) / k
    x += (diag_d[:, None, None] * sbar + diag_f[:, None, None] * b0[None, :, None]) * d[None]
    return x


def _quad_mode_integrals(
    ts: Array, ra: Rate, rb: Rate, lam: dict[str, _ModeRate]
) -> dict[tuple[str, str], Array]:
    from scipy.integrate import quad

    out = {}
    order = np.argsort(ts)
    for rname, r in (("a", ra), ("b", rb)):
        for mode, f in lam.items():

            def integrand(s: float, r: Rate = r, f: _ModeRate = f) -> float:
                return float(r(s)) * float(np.exp(f(ra.integral(s), rb.integral(s))))

            vals = np.empty_like(ts)
            acc, prev = 0.0, 0.0
            for i in order:
                acc += quad(integrand, prev, ts[i], epsabs=0.0, epsrel=1e-12, limit=200)[0]
                prev = ts[i]
                vals[i] = acc
            out[(rname, mode)] = vals
    return out


def v1_v2_k3() -> tuple[Array, Array]:
    """The K = 3 projection vectors v1, v2 of the L-model estimator ([1], App. D.2).

    v1 = (1/4)[1,-1,-1, -1,1,-1, -2,-2,0], v2 = (1/3)[2,-1,-1, -1,2,-1, 0,0,0]; v1.d = 1,
    v2.d = 4/3, v1 annihilates the f-modes and v2 the null space.
    """
    v1 = np.array([1, -1, -1, -1, 1, -1, -2, -2, 0], dtype=np.float64) / 4
    v2 = np.array([2, -1, -1, -1, 2, -1, 0, 0, 0], dtype=np.float64) / 3
    return v1, v2
