"""Fast path of the brute-force particle scheme of the LE-SDE (5) of [1], in torch.

The same Euler--Maruyama step as the NumPy reference
(:func:`~ncdynamics.theories.lesde.simulate.simulate_sde` with
``scheme="particles-reference"``), on every particle::

    X_i^k <- X_i^k + h (M_t Xbar)_k + sigma sqrt(h) xi_i^k,   xi ~ N(0, I)

with M_t = alpha(t) M_a + beta(t) M_b ([1], eqs. (2), (5)). What makes it faster than the
NumPy loop: the state lives in one preallocated tensor updated in place; the drift is added
once per class (broadcast over the n particles); the Gaussian noise is drawn by torch's
vectorised generator straight into a reused buffer and added with a fused multiply-add;
M_t is formed once when the rates are constant.

The noise dominates the cost (10^5 normal draws per step at K=10, n=1000, p=10). In float64
(the default) it comes from the caller's NumPy generator, drawn into a buffer that the torch
state shares, in the same order as the reference: a float64 path equals the reference's to
rounding, for the same ``rng``. In float32 it comes from torch's vectorised float32
generator (seeded from ``rng``), about twice as fast as NumPy's float64 one (and torch's own
float64 normal is slower than NumPy's): a float32 path agrees with the reference in law only
(tests), and in float32 the within-class spread drowns once the common mode has grown by
about 1e7 (use the class-mean scheme there).
"""

from __future__ import annotations

import numpy as np
import torch
from numpy.typing import NDArray

__all__ = ["step_particles"]

Array = NDArray[np.float64]


def step_particles(
    x0: Array,
    m_a: Array,
    m_b: Array,
    alphas: Array,
    betas: Array,
    *,
    h: float,
    sigma: float,
    rec_steps: NDArray[np.int64],
    keep_particles: bool,
    field0: Array | None,
    rng: np.random.Generator,
    dtype: torch.dtype = torch.float64,
    device: torch.device | None = None,
) -> Array:
    """Euler--Maruyama on all particles; the records as a float64 NumPy array.

    Parameters
    ----------
    x0 : ndarray of shape (R, K, n, p)
    m_a, m_b : ndarray of shape (K p, K p)
        The flattened intra- and inter-class drift matrices.
    alphas, betas : ndarray of shape (n_steps,)
        The rates at the start of each step.
    h, sigma : float
        Step size and noise level.
    rec_steps : ndarray of int, shape (n_times,)
        Steps to record, increasing, starting at 0.
    keep_particles : bool
        Record the particles (else only the empirical class means).
    field0 : ndarray of shape (R, K p) or None
        Start of the mean-field path (``drift_mode="mean-field"``); None for the empirical
        class means.
    rng : numpy.random.Generator
        Draws the float64 noise, or seeds torch's generator for float32.
    dtype : torch.dtype, default=torch.float64
        ``torch.float64`` or ``torch.float32``.
    device : torch.device, optional
        Where the particles are stepped (default CPU). Off the CPU, the float64 noise is
        still NumPy's (copied over every step, same path as on the CPU); the float32 noise
        comes from a generator on that device.

    Returns
    -------
    ndarray of shape (R, n_times, K, n, p) or (R, n_times, K, p)
    """
    r, k, n, p = x0.shape
    dev = torch.device("cpu") if device is None else torch.device(device)
    x = torch.tensor(x0, dtype=dtype, device=dev)  # (R, K, n, p), stepped in place
    if dtype == torch.float64:
        buffer = np.empty(x0.shape)  # NumPy draws into it; `host` shares its memory
        host = torch.from_numpy(buffer)
        noise = host if dev.type == "cpu" else torch.empty_like(x)
        generator = None
    else:
        buffer, host = None, None
        noise = torch.empty_like(x)
        generator = torch.Generator(device=dev).manual_seed(int(rng.integers(0, 2**63 - 1)))
    # (Kp, Kp): src @ M_t^T = src @ (a M_a + b M_b)^T
    mt_a = torch.tensor(m_a.T, dtype=dtype, device=dev)
    mt_b = torch.tensor(m_b.T, dtype=dtype, device=dev)
    field = torch.tensor(field0, dtype=dtype, device=dev) if field0 is not None else None
    constant = bool(np.all(alphas == alphas[0]) and np.all(betas == betas[0]))
    mt_const = float(alphas[0]) * mt_a + float(betas[0]) * mt_b
    scale = sigma * float(np.sqrt(h))
    shape = (r, rec_steps.size, k, n, p) if keep_particles else (r, rec_steps.size, k, p)
    out = torch.empty(shape, dtype=dtype, device=dev)
    n_steps = int(rec_steps[-1])
    j = 0
    with torch.inference_mode():
        for step in range(n_steps + 1):
            if step == rec_steps[j]:
                out[:, j] = x if keep_particles else x.mean(dim=2)
                j += 1
                if j == rec_steps.size:
                    break
            mt = mt_const if constant else float(alphas[step]) * mt_a + float(betas[step]) * mt_b
            src = x.mean(dim=2).reshape(r, k * p) if field is None else field  # (R, Kp)
            x += (h * (src @ mt)).reshape(r, k, 1, p)
            if scale > 0:
                if buffer is not None:
                    rng.standard_normal(out=buffer)
                    if host is not None and noise is not host:
                        noise.copy_(host)
                else:
                    noise.normal_(generator=generator)
                x.add_(noise, alpha=scale)
            if field is not None:
                field = field + h * (field @ mt)
    return out.cpu().numpy().astype(np.float64, copy=False)
