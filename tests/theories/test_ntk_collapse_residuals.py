"""Oracle O2: the residual phases of Sec. 4.1, eqs. (8)-(18)."""

import numpy as np
import pytest
from scipy.linalg import expm

from ncdynamics.theories.labels import label_matrix
from ncdynamics.theories.ntk_collapse.blocks import block_eigenvalues, block_kernel
from ncdynamics.theories.ntk_collapse.residuals import (
    residual_components,
    residual_flow,
    residual_gd,
    residual_phases,
)

C, M = 4, 5
VALS = dict(diag=3.0, intra=1.2, inter=0.3)


def test_residual_flow_matches_matrix_exponential_o2(rng):
    K = block_kernel(C, M, **VALS)
    r0 = rng.standard_normal((3, C * M))
    ts = np.array([0.0, 0.05, 0.3, 2.0])
    out = residual_flow(r0, ts, C, **VALS)
    np.testing.assert_array_equal(out.ts, ts)
    for k, t in enumerate(ts):
        np.testing.assert_allclose(out.ys[k], r0 @ expm(-t * K).T, rtol=1e-10, atol=1e-13)


def test_residual_gd_multiplies_each_phase_by_one_minus_eta_lambda(rng):
    lam = block_eigenvalues(C, M, **VALS)
    eta = 0.9 / lam.global_
    r0 = rng.standard_normal(C * M)
    traj = residual_gd(r0, C, **VALS, learning_rate=eta, n_steps=6)
    np.testing.assert_allclose(traj.ts, eta * np.arange(7))
    ph0 = residual_phases(r0, C)
    for t in range(7):
        ph = residual_phases(traj.ys[t], C)
        np.testing.assert_allclose(
            ph.global_, (1 - eta * lam.global_) ** t * ph0.global_, atol=1e-12
        )
        np.testing.assert_allclose(ph.class_, (1 - eta * lam.class_) ** t * ph0.class_, atol=1e-12)
        np.testing.assert_allclose(ph.single, (1 - eta * lam.single) ** t * ph0.single, atol=1e-12)


def test_residual_components_eq17_18(rng):
    R = rng.standard_normal((C, C * M))
    parts = residual_components(R, C)
    Y = label_matrix(C, M)
    N = C * M
    np.testing.assert_allclose(parts.class_, R @ Y.T @ Y / M, atol=1e-12)
    np.testing.assert_allclose(parts.global_, R @ np.ones((N, N)) / N, atol=1e-12)
    np.testing.assert_allclose(np.kron(parts.class_means, np.ones((1, M))), parts.class_)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: residual_phases(np.ones(7), 2), "multiple of n_classes"),
        (
            lambda: residual_gd(
                np.ones(4), 2, diag=1, intra=0.5, inter=0, learning_rate=-1, n_steps=2
            ),
            "learning_rate",
        ),
    ],
)
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
