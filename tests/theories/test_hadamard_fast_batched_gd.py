"""The batched fast path of gradient descent on the UFM against its plain references."""

import numpy as np
import pytest

from ncdynamics.theories.hadamard.fast_batched_gd import run_gd
from ncdynamics.theories.labels import label_matrix
from ncdynamics.theories.ufm import (
    pack_state,
    run_gd_reference,
    state_matrices,
    unpack_state,
)

# float64 throughout: both paths take the same steps in a different operation order, so they
# agree to rounding, amplified over ~150 steps
RTOL, ATOL = 1e-11, 1e-12


def independent_gd(W, H, n_iter, eta, n, loss):
    """Second reference: one realisation, fresh arrays, gradients written out by hand."""
    Y = label_matrix(W.shape[0], n)
    for _ in range(n_iter):
        Z = W @ H
        if loss == "ce":
            E = np.exp(Z - Z.max(axis=0))
            G = Y - E / E.sum(axis=0)
        else:
            G = Y - Z
        W, H = W + eta * G @ H.T, H + eta * W.T @ G
    return W, H


@pytest.mark.parametrize("loss", ["ce", "mse"])
@pytest.mark.parametrize(
    "K, n, d, scale",
    [(8, 1, 16, 0.3), (8, 2, 9, 0.5), (4, 3, 7, 0.4), (8, 1, 8, 6.0)],
)
def test_fast_batched_gd_matches_reference_on_random_inputs(loss, K, n, d, scale, rng):
    # scale 6 starts with |Z| > 300 under CE, so the max-shifted softmax branch is covered
    if loss == "mse" and scale > 1:
        scale = 0.3
    R, eta = 3, 0.01
    steps = [0, 1, 70, 150]
    W = scale * rng.normal(size=(R, K, d))  # random, asymmetric, d != K in most cases
    H = scale * rng.normal(size=(R, d, K * n))
    fast = run_gd(W, H, steps=steps, learning_rate=eta, n=n, loss=loss)
    assert fast.ys.shape == (R, len(steps), K + K * n, d)
    np.testing.assert_array_equal(fast.ts, steps)
    for r in range(R):
        ref = run_gd_reference(W[r], H[r], steps=steps, learning_rate=eta, n=n, loss=loss)
        assert ref.ys.shape == fast.ys.shape[1:]
        size = np.abs(ref.ys).max()
        np.testing.assert_allclose(fast.ys[r], ref.ys, rtol=RTOL, atol=ATOL * size)
        W_ind, H_ind = independent_gd(W[r], H[r], steps[-1], eta, n, loss)
        W_end, H_end = unpack_state(fast.ys[r, -1], K)
        np.testing.assert_allclose(W_end, W_ind, rtol=RTOL, atol=ATOL * scale)
        np.testing.assert_allclose(H_end, H_ind, rtol=RTOL, atol=ATOL * scale)
    # the records are the states at the requested iterations, iteration 0 exactly the start
    np.testing.assert_array_equal(fast.ys[:, 0], pack_state(W, H))
    assert not np.allclose(fast.ys[:, 1], fast.ys[:, 0])


def test_fast_batched_gd_on_one_realisation_drops_the_batch_axis(rng):
    K, n, d = 4, 2, 6
    W, H = rng.normal(size=(K, d)), rng.normal(size=(d, K * n))
    steps = [0, 5, 40]
    single = run_gd(W, H, steps=steps, learning_rate=0.05, n=n)
    batched = run_gd(W[None], H[None], steps=steps, learning_rate=0.05, n=n)
    assert single.ys.shape == (3, K + K * n, d)
    np.testing.assert_array_equal(single.ys, batched.ys[0])
    assert single.n_evals == 40


def test_state_packing_round_trips_and_gives_the_nc_matrices(rng):
    K, n, d = 4, 3, 5
    W, H = rng.normal(size=(2, K, d)), rng.normal(size=(2, d, K * n))
    state = pack_state(W, H)
    assert state.shape == (2, K + K * n, d)
    W2, H2 = unpack_state(state, K)
    np.testing.assert_array_equal(W2, W)
    np.testing.assert_array_equal(H2, H)
    Z, WWt, HtH = state_matrices(state, K)
    np.testing.assert_allclose(Z, W @ H, rtol=1e-14)
    np.testing.assert_allclose(WWt, W @ W.transpose(0, 2, 1), rtol=1e-14)
    np.testing.assert_allclose(HtH, H.transpose(0, 2, 1) @ H, rtol=1e-14)
    with pytest.raises(ValueError, match="n_classes"):
        unpack_state(state, 5)


def test_fast_batched_gd_reports_divergence():
    W = np.full((1, 4, 4), 3.0)
    with np.errstate(all="ignore"), pytest.raises(FloatingPointError, match="learning_rate"):
        run_gd(W, W, steps=[0, 200], learning_rate=50.0, loss="mse")
