"""Simulation of the LE-SDE (5), the LE-ODE (6) and the discrete dynamics (1)/(4) of [1].

Particles are stored as ``(R, K, n, p)``: R independent trials, K classes, n samples per
class, p feature dimensions. Every simulation returns the shared
:class:`~ncdynamics.theories.Trajectory`, time-first per path: the particle simulations
record ``ys`` of shape ``(R, n_times, K, n, p)`` (the R trials are the ensemble axis), or
the class means ``(R, n_times, K, p)`` when asked; the LE-ODE records
``(n_times, ..., K, p)``.

Two Euler--Maruyama representations of the same scheme are offered:

- ``"particles"``: every particle is stepped, dX_i^k = (M X̄)_k dt + sigma dW_i^k (brute
  force, cost R K n p per step), in torch (:mod:`.fast_particles`, float64 or float32);
  ``"particles-reference"`` is the same scheme as a plain NumPy loop, the reference the
  fast path is tested against;
- ``"class-means"`` (default): the drift is the same for every particle of a class, so the
  Euler--Maruyama particles equal X̄^k(t) + (X_i^k(0) - X̄^k(0)) + sigma (W_i^k - W̄^k). The
  class means are stepped with noise sigma/sqrt(n) and the centred Brownian deviations,
  which are independent of W̄, are drawn exactly at the recorded times. Same law, cost
  R K p per step, and the within-class spread never drowns in the exponentially growing
  common mode (docs/theories/lesde.md, The two Euler-Maruyama schemes).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from ..integrate import Trajectory, solve_ode
from .model import LEParams, drift

__all__ = [
    "simulate_discrete",
    "simulate_sde",
    "solve_leode",
]

Array = NDArray[np.float64]
SCHEMES = ("class-means", "particles", "particles-reference")
DTYPES = ("float64", "float32")
DRIFTS = ("empirical", "mean-field")
RECORDS = ("particles", "means")


def _check_x0(x0: Any, params: LEParams) -> Array:
    x0 = check_array(x0, "x0", ndim=4, dtype=np.float64)
    k, p = params.n_classes, params.dim
    if x0.shape[1] != k or x0.shape[3] != p:
        raise ValueError(f"`x0` must have shape (R, {k}, n, {p}); got {x0.shape}.")
    return x0


def _mode_matrices(params: LEParams) -> tuple[Array, Array]:
    """Flattened (Kp, Kp) matrices with M_t = alpha(t) M_a + beta(t) M_b."""
    k, p = params.n_classes, params.dim
    eye = np.eye(k)
    blocks_a = (eye * params.class_probs)[:, :, None, None] * params.h
    blocks_b = ((1 - eye) * params.class_probs)[:, :, None, None] * params.h

    def flat(b: Array) -> Array:
        return b.transpose(0, 2, 1, 3).reshape(k * p, k * p)

    return flat(blocks_a), flat(blocks_b)


def simulate_sde(
    params: LEParams,
    x0: Any,
    *,
    h: float,
    n_steps: int,
    rng: np.random.Generator,
    scheme: Literal["class-means", "particles", "particles-reference"] = "class-means",
    drift_mode: Literal["empirical", "mean-field"] = "empirical",
    mean_field_init: Any = None,
    record_every: int = 1,
    record: Literal["particles", "means"] = "particles",
    dtype: Literal["float64", "float32"] = "float64",
    device: str | None = None,
) -> Trajectory:
    """Euler--Maruyama for the LE-SDE (5) on particles ([1], eqs. (2), (5)).

    dX_i^k = sum_l E_kl(t) H_kl pi_l Xbar^l dt + sigma dW_i^k, with Xbar the empirical class
    mean (``drift_mode="empirical"``, the literal eq. (2)) or the deterministic LE-ODE path
    started at ``mean_field_init`` (``"mean-field"``, the paper's finite-sample
    approximation in Sec. 2.2).

    Parameters
    ----------
    params : LEParams
    x0 : ndarray of shape (R, K, n, p)
    h : float
        Step size.
    n_steps : int
    rng : numpy.random.Generator
    scheme : {"class-means", "particles", "particles-reference"}
        Representation (see the module docstring); all give the same law. In float64,
        ``"particles"`` draws the same noise from ``rng`` as ``"particles-reference"`` and
        gives the same path to rounding; in float32 it draws from torch's generator.
    drift_mode : {"empirical", "mean-field"}
    mean_field_init : ndarray of shape (K, p), optional
        Start of the mean-field path (default: each trial's empirical initial means).
    record_every : int
        Record every this many steps (step 0 is always recorded).
    record : {"particles", "means"}
        Record the particles, or only the empirical class means (cheaper).
    dtype : {"float64", "float32"}
        Arithmetic of ``scheme="particles"`` (float32: faster, with torch's noise; the
        within-class spread is lost once the common mode grows by ~1e7, see
        :mod:`.fast_particles`). The records are float64 either way. The other schemes
        are float64.
    device : str, optional
        Torch device of ``scheme="particles"`` (e.g. ``"cuda"``; default the CPU).

    Returns
    -------
    Trajectory
        ``ts`` of shape (n_times,) (``record_every * h`` apart) and ``ys`` of shape
        (R, n_times, K, n, p) (particles) or (R, n_times, K, p) (class means).
    """
    x0 = _check_x0(x0, params)
    h = check_scalar(h, "h", low=0.0, closed="neither")
    n_steps = check_int(n_steps, "n_steps", low=1)
    record_every = check_int(record_every, "record_every", low=1)
    check_option(scheme, "scheme", SCHEMES)
    check_option(drift_mode, "drift_mode", DRIFTS)
    check_option(record, "record", RECORDS)
    check_option(dtype, "dtype", DTYPES)
    if (dtype != "float64" or device is not None) and scheme != "particles":
        raise ValueError(
            f"`dtype` must be 'float64' and `device` None with scheme={scheme!r} (they are "
            f"options of scheme='particles'); got dtype={dtype!r}, device={device!r}."
        )
    keep_particles = record == "particles"
    m_a, m_b = _mode_matrices(params)
    t_grid = np.arange(n_steps) * h
    alphas = np.broadcast_to(np.asarray(params.alpha(t_grid), dtype=np.float64), (n_steps,))
    betas = np.broadcast_to(np.asarray(params.beta(t_grid), dtype=np.float64), (n_steps,))
    rec_steps = np.arange(0, n_steps + 1, record_every)
    ts = rec_steps * h
    field = _mean_field_start(x0, mean_field_init) if drift_mode == "mean-field" else None
    if scheme == "particles":
        import torch  # the fast path only: the class-mean scheme stays NumPy

        from .fast_particles import step_particles

        ys = step_particles(
            x0,
            m_a,
            m_b,
            np.ascontiguousarray(alphas),
            np.ascontiguousarray(betas),
            h=h,
            sigma=params.sigma,
            rec_steps=rec_steps,
            keep_particles=keep_particles,
            field0=field,
            rng=rng,
            dtype=torch.float64 if dtype == "float64" else torch.float32,
            device=torch.device(device) if device is not None else None,
        )
        return Trajectory(ts.astype(np.float64), ys, n_evals=int(rec_steps[-1]))
    steps = _EMSteps(m_a, m_b, alphas, betas, h, params.sigma, rec_steps, keep_particles)
    if scheme == "particles-reference":
        out = steps.run_particles(x0, field, rng)
    else:
        out = steps.run_class_means(x0, field, rng)
    return Trajectory(ts.astype(np.float64), out, n_evals=int(rec_steps[-1]))


def _mean_field_start(x0: Array, mean_field_init: Any) -> Array:
    """The start of the mean-field path, (R, K p): each trial's empirical initial class
    means, or ``mean_field_init`` (K, p) for every trial."""
    r, k, _, p = x0.shape
    c = (
        x0.mean(axis=2)
        if mean_field_init is None
        else np.broadcast_to(
            check_array(mean_field_init, "mean_field_init", shape=(k, p), dtype=np.float64),
            (r, k, p),
        )
    )
    return c.reshape(r, k * p).copy()


@dataclass(frozen=True)
class _EMSteps:
    """The NumPy Euler--Maruyama loops of :func:`simulate_sde` (float64): the drift matrix
    at step m is ``alphas[m] m_a + betas[m] m_b``; the records are taken at ``rec_steps``.
    A mean-field path ``field`` (R, K p) drives the drift instead of the empirical means
    when given, and moves by the same matrices."""

    m_a: Array
    m_b: Array
    alphas: Array
    betas: Array
    h: float
    sigma: float
    rec_steps: NDArray[np.int64]
    keep_particles: bool

    def _buffer(self, x0: Array) -> Array:
        """(R, n_times, K, n, p) particles or (R, n_times, K, p) class means."""
        r, k, n, p = x0.shape
        n_rec = self.rec_steps.size
        return np.empty((r, n_rec, k, n, p) if self.keep_particles else (r, n_rec, k, p))

    def run_particles(self, x0: Array, field: Array | None, rng: np.random.Generator) -> Array:
        """``scheme="particles-reference"``: every particle moves, with its own noise."""
        r, k, n, p = x0.shape
        out = self._buffer(x0)
        x = x0.copy()
        j = 0
        for step in range(self.alphas.size + 1):
            if step == self.rec_steps[j]:
                out[:, j] = x if self.keep_particles else x.mean(axis=2)
                j += 1
                if j == self.rec_steps.size:
                    break
            mt = self.alphas[step] * self.m_a + self.betas[step] * self.m_b  # (Kp, Kp)
            src = x.mean(axis=2).reshape(r, k * p) if field is None else field
            x += (self.h * (src @ mt.T)).reshape(r, k, 1, p)
            if self.sigma > 0:
                x += self.sigma * np.sqrt(self.h) * rng.standard_normal(x.shape)
            if field is not None:
                field = field + self.h * (field @ mt.T)
        return out

    def run_class_means(self, x0: Array, field: Array | None, rng: np.random.Generator) -> Array:
        """``scheme="class-means"``: the class means move; the centred deviations of the
        particles are drawn only at the records, exact in law."""
        r, k, n, p = x0.shape
        out = self._buffer(x0)
        x0_mean = x0.mean(axis=2)  # (R, K, p)
        ybar = x0_mean.reshape(r, k * p).copy()
        dev = x0 - x0_mean[:, :, None, :]  # (R, K, n, p)
        sigma, h = self.sigma, self.h
        j = 0
        for step in range(self.alphas.size + 1):
            if step == self.rec_steps[j]:
                if self.keep_particles:
                    out[:, j] = ybar.reshape(r, k, 1, p) + dev
                else:
                    out[:, j] = ybar.reshape(r, k, p) + dev.mean(axis=2)
                j += 1
                if j == self.rec_steps.size:
                    break
            mt = self.alphas[step] * self.m_a + self.betas[step] * self.m_b  # (Kp, Kp)
            src = ybar if field is None else field
            ybar = ybar + h * (src @ mt.T)
            if sigma > 0:
                ybar += sigma * np.sqrt(h / n) * rng.standard_normal(ybar.shape)
            if sigma > 0 and (step + 1) in self.rec_steps:
                # centred Brownian deviations since the last record, exact in law
                span = (step + 1 - self.rec_steps[j - 1]) * h
                dw = rng.standard_normal(dev.shape) * (sigma * np.sqrt(span))
                dev = dev + dw - dw.mean(axis=2, keepdims=True)
            if field is not None:
                field = field + h * (field @ mt.T)
        return out


def solve_leode(
    params: LEParams,
    x0: Any,
    ts: Any,
    *,
    method: Literal["rk", "euler"] = "rk",
) -> Trajectory:
    """Class means of the LE-ODE (6), Xbar' = M_t Xbar ([1], eq. (6)).

    Parameters
    ----------
    params : LEParams
    x0 : ndarray of shape (..., K, p)
    ts : ndarray of shape (n_times,), increasing, starting at the time of ``x0``
    method : {"rk", "euler"}
        ``"rk"``: adaptive DOP853 (rtol 1e-10, atol 1e-12) through the shared
        :func:`~ncdynamics.theories.integrate.solve_ode`; ``"euler"``: forward Euler on the
        grid ``ts`` itself (the paper's LE-ODE imitation with step 1, App. D.2).

    Returns
    -------
    Trajectory
        ``ys`` of shape (n_times, ..., K, p).

    Raises
    ------
    RuntimeError
        When the adaptive integration fails.
    """
    x0 = check_array(x0, "x0", dtype=np.float64)
    ts = check_array(ts, "ts", ndim=1, dtype=np.float64, min_size=1)
    check_option(method, "method", ("rk", "euler"))
    if x0.shape[-2:] != (params.n_classes, params.dim):
        raise ValueError(f"`x0` must end in ({params.n_classes}, {params.dim}); got {x0.shape}.")
    if method == "rk":
        traj = solve_ode(drift, x0, ts, params, method="DOP853", rtol=1e-10, atol=1e-12)
        if not traj.success:
            raise RuntimeError(f"LE-ODE integration failed: {traj.message}")
        return traj
    out = np.empty((ts.size, *x0.shape))
    out[0] = x0
    for i in range(1, ts.size):
        out[i] = out[i - 1] + (ts[i] - ts[i - 1]) * drift(ts[i - 1], out[i - 1], params)
    return Trajectory(ts, out, n_evals=ts.size - 1)


def simulate_discrete(
    params: LEParams,
    x0: Any,
    *,
    h: float,
    n_steps: int,
    rng: np.random.Generator,
    record_every: int = 1,
) -> Trajectory:
    """Discrete LE dynamics (1)/(4): one drawn sample moves every particle ([1], eq. (4)).

    X_i^k(m) = X_i^k(m-1) + h E_{k,L_m}(m) H_{k,L_m} X_{J_m}^{L_m}(m-1) + sqrt(h) sigma zeta,
    with L_m drawn from ``class_probs`` and J_m uniform over the n samples, independently in
    each trial. The paper's binary expansion writes zeta^{L_m} and fixes alpha for class 1;
    the coefficient used here is E_{k,L_m}, the noise zeta_i^k. E(m) is
    evaluated at t = (m-1) h.

    Parameters
    ----------
    params : LEParams
    x0 : ndarray of shape (R, K, n, p)
    h : float
        Step size.
    n_steps : int
    rng : numpy.random.Generator
    record_every : int
        Record every this many steps (step 0 is always recorded).

    Returns
    -------
    Trajectory
        ``ys`` of shape (R, n_times, K, n, p): the particles.
    """
    x0 = _check_x0(x0, params)
    h = check_scalar(h, "h", low=0.0, closed="neither")
    n_steps = check_int(n_steps, "n_steps", low=1)
    record_every = check_int(record_every, "record_every", low=1)
    r, k, n, p = x0.shape
    x = x0.copy()
    rec = np.arange(0, n_steps + 1, record_every)
    xs = np.empty((r, rec.size, k, n, p))
    xs[:, 0] = x
    trials = np.arange(r)
    j = 1
    for step in range(1, n_steps + 1):
        t = (step - 1) * h
        el = rng.choice(k, size=r, p=params.class_probs)  # (R,)
        jm = rng.integers(0, n, size=r)  # (R,)
        src = x[trials, el, jm]  # (R, p)
        a, b = float(params.alpha(t)), float(params.beta(t))
        coef = np.where(np.arange(k)[None, :] == el[:, None], a, b)  # (R, K): E_{k, L}
        hx = np.einsum("rkij,rj->rki", params.h[:, el].transpose(1, 0, 2, 3), src)  # (R,K,p)
        x += h * (coef[:, :, None] * hx)[:, :, None, :]
        if params.sigma > 0:
            x += np.sqrt(h) * params.sigma * rng.standard_normal(x.shape)
        if j < rec.size and step == rec[j]:
            xs[:, j] = x
            j += 1
    return Trajectory((rec * h).astype(np.float64), xs, n_evals=n_steps)
