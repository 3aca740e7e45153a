"""Streams for the lesde confrontation tests: margins of the L-model with known rates.

``margin_means`` builds class-mean logits whose margin projections (``S`` and ``|b|``) follow
the exact L-model reduction for the integrated rates ``A``, ``B``, with optional
multiplicative noise on each: ``X^k = s_k d_k`` so that ``d_k . X^k / |d_k|^2 = s_k``.
"""

import numpy as np

from ncdynamics import runs
from ncdynamics.theories.lesde.estimate import integrated_power_rate
from ncdynamics.theories.lesde.model import d_vectors

K = 3
#: alpha(t) = 0.3 (1+t)^-0.6, beta(t) = -0.1 (1+t)^-0.8, per step (D.17)
DECAYING = {"alpha0": 0.3, "beta0": -0.1, "r_alpha": 0.6, "r_beta": 0.8}


def integrated(t, alpha0, beta0, r_alpha, r_beta):
    """``(A(t), B(t))`` of power-law rates."""
    return alpha0 * integrated_power_rate(t, r_alpha), beta0 * integrated_power_rate(t, r_beta)


def margin_means(t, a, b, *, noise=0.0, rng=None, s0=0.1, b0=0.02, n_classes=K):
    """Class-mean logits (T, K, K) with ``S = s0 e^{(A-B)/K}``, ``|b| = b0 e^{(A+B/(K-1))/K}``."""
    k = n_classes
    e1 = e2 = np.zeros_like(t)
    if noise:
        e1, e2 = noise * rng.standard_normal(t.size), noise * rng.standard_normal(t.size)
    total = s0 * np.exp((a - b) / k + e1)
    spread = b0 * np.exp((a + b / (k - 1)) / k + e2)
    u = np.linspace(1.0, -1.0, k)
    u /= np.linalg.norm(u)  # a fixed unit direction summing to zero
    s = total[:, None] / k + spread[:, None] * u[None]
    return s[:, :, None] * d_vectors(k)[None]


def write_means(path, steps, means, config=None, prefix=""):
    """A run holding ``class_means_logits`` (the Recorder's name) at ``steps``."""
    run = runs.create(path, config=config)
    for t, m in zip(steps, means, strict=True):
        run.save_array(f"{prefix}class_means_logits".replace("/", "."), int(t), m)
    return run


def uneven_steps(rng, start=40.0, stop=1500.0, n=30):
    """Geometric record times with jitter: a stream that starts late and is unevenly spaced."""
    return np.unique(np.round(np.geomspace(start, stop, n) + rng.uniform(0, 5, n))).astype(float)
