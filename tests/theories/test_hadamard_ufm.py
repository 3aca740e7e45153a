"""UFM oracles: construction, gradients, loss = energy,
frozen singular vectors under full GD, the exact discrete map and the ODE limit."""

import numpy as np
import pytest

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.geometry import centering_matrix
from ncdynamics.theories.hadamard.counterexamples import COUNTEREXAMPLES
from ncdynamics.theories.hadamard.fast_batched_gd import run_gd
from ncdynamics.theories.hadamard.init import haar_orthogonal
from ncdynamics.theories.hadamard.metrics import (
    kl_uniform,
    metric_m,
    mode_values,
    nc_alignment,
    normalize_l1,
    reduced_basis,
    residual_energy,
    ufm_metrics,
)
from ncdynamics.theories.hadamard.model import (
    discrete_gd_map,
    energy_full,
    from_reduced,
    iterations_to_time,
    iterations_to_time_logit,
    mse_singular_values,
    to_reduced,
)
from ncdynamics.theories.hadamard.structure import sylvester
from ncdynamics.theories.ufm import (
    ce_descent,
    ce_loss,
    logit_descent,
    mse_descent,
    mse_loss,
    run_logit_gd,
    state_matrices,
    unpack_state,
)


def logits(traj, K):
    """``Z`` at every record of a GD trajectory, time first: (n_log, [R,] K, K n)."""
    ys = np.swapaxes(traj.ys, 0, 1) if traj.ys.ndim == 4 else traj.ys
    return state_matrices(ys, K)[0]


def hadamard_pair(rng, K, d, n, scale=1.0, R=1):
    alpha = scale * rng.uniform(0.2, 1.0, size=(R, K - 1))
    rot = haar_orthogonal(d, rng=rng, size=R)
    W, H = hd.hadamard_init(alpha, alpha, d=d, n=n, rotation=rot)
    return W, H, alpha, rot


@pytest.mark.parametrize("n", [1, 2])
def test_descent_directions_are_negative_gradients(n, rng):
    K, d = 4, 5
    W = rng.normal(size=(K, d))
    H = rng.normal(size=(d, K * n))
    for loss, descent in ((ce_loss, ce_descent), (mse_loss, mse_descent)):
        dW, dH = descent(W, H, n=n)
        for X, dX, is_w in ((W, dW, True), (H, dH, False)):
            fd = np.zeros_like(X)
            for idx in np.ndindex(X.shape):
                E = np.zeros_like(X)
                E[idx] = 1e-6
                plus = loss(W + E, H, n=n) if is_w else loss(W, H + E, n=n)
                minus = loss(W - E, H, n=n) if is_w else loss(W, H - E, n=n)
                fd[idx] = (plus - minus) / 2e-6
            np.testing.assert_allclose(dX, -fd, rtol=1e-6, atol=1e-8)


def test_logit_descent_is_negative_gradient(rng):
    Z = rng.normal(size=(4, 8))
    G = logit_descent(Z, n=2)
    loss = lambda Z_: ce_loss(np.eye(4), Z_, n=2)
    fd = np.zeros_like(Z)
    for idx in np.ndindex(Z.shape):
        E = np.zeros_like(Z)
        E[idx] = 1e-6
        fd[idx] = (loss(Z + E) - loss(Z - E)) / 2e-6
    np.testing.assert_allclose(G, -fd, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("K", [4, 8, 16])
def test_loss_equals_energy_at_hadamard_points(K, n, rng):
    for scale in (0.01, 1.0, 5.0):
        W, H, alpha, _ = hadamard_pair(rng, K, K + 2, n, scale=scale)
        loss = ce_loss(W, H, n=n)[0]
        energy = energy_full(alpha[0] ** 2, n_classes=K, n=n)
        np.testing.assert_allclose(loss, energy, rtol=1e-12)


def test_initial_loss_is_k_log_k():
    W = np.zeros((1, 8, 8))
    np.testing.assert_allclose(ce_loss(W, np.zeros((1, 8, 8))), 8 * np.log(8))


@pytest.mark.parametrize("K", [4, 8, 16])
@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("d_factor", [1, 5])
def test_full_gd_keeps_singular_vectors_frozen_and_follows_discrete_map(K, n, d_factor, rng):
    d = d_factor * K
    W, H, alpha, rot = hadamard_pair(rng, K, d, n, scale=0.5, R=2)
    steps = np.array([0, 500, 3000])
    res = run_gd(W, H, steps=steps, learning_rate=0.01, n=n)
    Z = logits(res, K)
    assert residual_energy(Z, n=n).max() <= 1e-12
    W_end, H_end = unpack_state(res.ys[:, -1], K)
    U, V = reduced_basis(K, n)
    for r in range(2):
        A = U.T @ W_end[r] @ rot[r]  # (K-1, d): should be diag(α) in the first K-1 columns
        B = rot[r].T @ H_end[r] @ V  # (d, K-1)
        off_a = A.copy()
        off_a[np.arange(K - 1), np.arange(K - 1)] = 0
        off_b = B.copy()
        off_b[np.arange(K - 1), np.arange(K - 1)] = 0
        alpha_t = np.diag(A[:, : K - 1])
        beta_t = np.diag(B[: K - 1])
        assert np.abs(off_a).max() <= 1e-12 * alpha_t.max()
        assert np.abs(off_b).max() <= 1e-12 * beta_t.max()
        np.testing.assert_allclose(alpha_t, beta_t, rtol=1e-12)
    mapped = discrete_gd_map(
        to_reduced(alpha**2, n_classes=K, n=n), steps, n_classes=K, n=n, learning_rate=0.01
    )
    modes = to_reduced(mode_values(Z, n=n), n_classes=K, n=n)
    np.testing.assert_allclose(modes, np.swapaxes(mapped.ys, 0, 1), rtol=1e-10)


@pytest.mark.parametrize("K", [4, 8])
def test_gd_matches_reduced_ode_to_first_order_in_step(K, rng):
    alpha = np.sqrt(rng.uniform(0.05, 0.5, size=(1, K - 1)))
    W, H = hd.hadamard_init(alpha, d=K)
    errors = []
    for eta in (0.02, 0.01):
        steps = np.unique(np.geomspace(1, 20 / eta, 40).astype(int))  # τ up to 40
        res = run_gd(W, H, steps=steps, learning_rate=eta)
        gd = to_reduced(mode_values(logits(res, K)[:, 0]), n_classes=K)
        ode = hd.solve_reduced(
            to_reduced(alpha[0] ** 2, n_classes=K),
            iterations_to_time(steps, learning_rate=eta),
            n_classes=K,
        ).ys
        rel = np.abs(gd / ode - 1).max()
        errors.append(rel)
        if eta == 0.01:
            assert rel <= 1e-2  # observed 4e-3 (K=4) and 6e-3 (K=8) over τ <= 40
            assert np.abs(normalize_l1(gd) - normalize_l1(ode)).max() <= 1e-3
    assert 1.6 < errors[0] / errors[1] < 2.4  # first order in η


def test_nc_alignments_equal_sqrt_2m_under_hadamard_init(rng):
    for K, n in ((4, 1), (8, 2), (16, 1)):
        W, H, alpha, _ = hadamard_pair(rng, K, 2 * K, n, R=3)
        Z = W @ H
        m = ufm_metrics(Z, W @ np.swapaxes(W, 1, 2), np.swapaxes(H, 1, 2) @ H, n=n)
        expected = np.sqrt(2 * metric_m(alpha**2))
        for key in ("nc_w", "nc_h", "nc_z"):
            np.testing.assert_allclose(m[key], expected, atol=1e-10)
        np.testing.assert_allclose(m["kl"], kl_uniform(alpha**2), atol=1e-10)
        assert m["residual"].max() <= 1e-13


def test_nc_alignment_is_zero_at_collapse_and_permutation_invariant(rng):
    S = centering_matrix(4)
    assert nc_alignment(3 * S, S) <= 1e-15
    A = rng.normal(size=(4, 4))
    A = A @ A.T
    P = np.eye(4)[[2, 0, 3, 1]]
    np.testing.assert_allclose(nc_alignment(P @ A @ P.T, S), nc_alignment(A, S))


def test_hadamard_dynamics_do_not_depend_on_width_or_rotation(rng):
    K = 8
    alpha = rng.uniform(0.1, 0.6, size=(1, K - 1))
    steps = np.array([0, 100, 2000])
    out = []
    for d in (K, 5 * K):
        rot = haar_orthogonal(d, rng=rng)
        W, H = hd.hadamard_init(alpha, d=d, rotation=rot)
        out.append(mode_values(logits(run_gd(W, H, steps=steps, learning_rate=0.01), K)))
    np.testing.assert_allclose(out[0], out[1], rtol=1e-12)


def test_mse_spectral_init_follows_saxe_sigmoid_and_modes_decouple(rng):
    K, n, eta = 4, 2, 1e-3
    alpha = np.array([[0.01, 0.02, 0.05]])
    W, H = hd.hadamard_init(alpha, d=K, n=n)
    steps = np.arange(0, 4001, 400)
    res = run_gd(W, H, steps=steps, learning_rate=eta, n=n, loss="mse")
    modes = mode_values(logits(res, K)[:, 0], n=n)
    closed = mse_singular_values(alpha[0] ** 2, steps * eta, n=n)
    np.testing.assert_allclose(modes, closed, rtol=5e-3)
    # perturbing one mode leaves the others unchanged
    alpha2 = alpha.copy()
    alpha2[0, 0] *= 3
    W2, H2 = hd.hadamard_init(alpha2, d=K, n=n)
    res2 = run_gd(W2, H2, steps=steps, learning_rate=eta, n=n, loss="mse")
    modes2 = mode_values(logits(res2, K)[:, 0], n=n)
    np.testing.assert_allclose(modes2[:, 1:], modes[:, 1:], rtol=1e-12)


def test_logit_gd_matches_theorem6_flow(rng):
    K, n, eta = 8, 2, 0.01
    a = rng.uniform(0.1, 1.0, size=K - 1)
    U, V = reduced_basis(K, n)
    Z0 = U @ np.diag(a) @ V.T
    steps = np.array([0, 1000, 5000])
    traj = run_logit_gd(Z0, steps=steps, learning_rate=eta, n=n)
    np.testing.assert_array_equal(traj.ts, steps)
    Zs = traj.ys  # (n_log, K, K n) for a single Z0
    assert residual_energy(Zs[1:], n=n).max() <= 1e-12
    gd = to_reduced(mode_values(Zs, n=n), n_classes=K, n=n)
    tau = iterations_to_time_logit(steps, learning_rate=eta, n_classes=K)
    ode = hd.solve_reduced(gd[0], tau, n_classes=K, flow="logit").ys
    np.testing.assert_allclose(gd, ode, rtol=2e-3)


@pytest.mark.parametrize(
    "call, exc, match",
    [
        (lambda: hd.hadamard_init(np.ones(5), d=8), ValueError, "power of 2"),
        (lambda: hd.hadamard_init(np.ones(7), d=6), ValueError, ">= K-1"),
        (
            lambda: run_gd(np.ones((4, 4)), np.ones((4, 5)), steps=[1], learning_rate=0.1),
            ValueError,
            "shape",
        ),
        (
            lambda: run_gd(np.ones((4, 4)), np.ones((4, 4)), steps=[1], learning_rate=-1),
            ValueError,
            "learning_rate",
        ),
        (
            lambda: run_gd(
                np.ones((4, 4)), np.ones((4, 4)), steps=[1], learning_rate=0.1, loss="hinge"
            ),
            ValueError,
            "one of",
        ),
        (
            lambda: run_gd(np.ones((4, 4)), np.ones((4, 4)), steps=[3, 1], learning_rate=0.1),
            ValueError,
            "non-decreasing",
        ),
        (lambda: ce_loss(np.full((4, 4), np.inf), np.ones((4, 4))), ValueError, "finite"),
        (lambda: hd.random_init(4, 0, rng=np.random.default_rng(0)), ValueError, "`d`"),
    ],
)
def test_bad_input_is_rejected(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_residual_energy_needs_the_normalised_basis(rng):
    """Erratum 7: with U = Φ[:, 1:] unnormalised, a Hadamard point has a large residual."""
    W, H, _, _ = hadamard_pair(rng, 8, 8, 1)
    Z = (W @ H)[0]
    U = sylvester(8)[:, 1:]
    printed = np.linalg.norm(Z - U @ (U.T @ Z @ U) @ U.T) / np.linalg.norm(Z)
    assert residual_energy(Z) <= 1e-14
    assert printed > 1.0


def test_collapse_geometry_at_the_end_of_the_normalised_flow():
    """T23: the normalised flow's endpoint, lifted to (W, H), is neural collapse."""
    traj = hd.solve_reduced(COUNTEREXAMPLES["fig1"], [0.0, 5e3], n_classes=8, flow="normalized")
    a = traj.ys[-1]
    assert np.abs(normalize_l1(a) - 1 / 7).max() < 1e-6
    # any scale: the metrics are normalised
    alpha = np.sqrt(from_reduced(a / a.max(), n_classes=8))
    W, H = hd.hadamard_init(alpha, d=10)
    m = ufm_metrics(W @ H, W @ np.swapaxes(W, 1, 2), np.swapaxes(H, 1, 2) @ H)
    for key in ("nc_w", "nc_h", "nc_z"):
        assert m[key].max() < 1e-6


@pytest.mark.slow
def test_singular_vectors_stay_frozen_over_long_gd():
    rng = np.random.default_rng(7)
    K, n, d = 16, 2, 80
    W, H, alpha, rot = hadamard_pair(rng, K, d, n, scale=0.3)
    res = run_gd(W, H, steps=[0, 100_000], learning_rate=0.01, n=n)
    assert residual_energy(logits(res, K), n=n).max() <= 1e-12
