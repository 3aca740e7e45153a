"""The generic unconstrained-features model of the shared floor (``theories/ufm.py``)."""

import importlib.util

import numpy as np
import pytest

from ncdynamics.theories import ufm


def _init(K=3, d=4, n=2, scale=0.3, seed=0):
    rng = np.random.default_rng(seed)
    return scale * rng.standard_normal((K, d)), scale * rng.standard_normal((d, K * n))


@pytest.mark.parametrize("loss", ["ce", "mse"])
def test_gradient_flow_follows_small_step_descent(loss):
    """The flow at time t and gradient descent with step eta after t/eta steps agree to
    O(eta): halving the step halves the gap (for either loss)."""
    W0, H0 = _init()
    t = 2.0
    flow = ufm.solve_gradient_flow(W0, H0, [0.0, t], n=2, loss=loss)
    assert flow.success
    gaps = []
    for eta in (0.02, 0.01):
        k = round(t / eta)
        gd = ufm.run_gd_reference(W0, H0, steps=[0, k], learning_rate=eta, n=2, loss=loss)
        gaps.append(np.abs(gd.ys[-1] - flow.ys[-1]).max())
    assert gaps[1] < 0.6 * gaps[0] and gaps[1] < 1e-2


def test_mse_flow_decreases_the_mse_loss_and_ce_flow_the_ce_loss():
    W0, H0 = _init(seed=1)
    ts = np.linspace(0.0, 3.0, 7)
    for loss, value in (("mse", ufm.mse_loss), ("ce", ufm.ce_loss)):
        traj = ufm.solve_gradient_flow(W0, H0, ts, n=2, loss=loss)
        W, H = ufm.unpack_state(traj.ys, 3)
        values = [float(value(w, h, n=2)) for w, h in zip(W, H, strict=True)]
        assert np.all(np.diff(values) < 0), (loss, values)


def test_gradient_flow_names_a_loss_it_does_not_know():
    W0, H0 = _init()
    with pytest.raises(ValueError, match="`loss`"):
        ufm.solve_gradient_flow(W0, H0, [0.0, 1.0], n=2, loss="hinge")


def test_the_model_has_one_home_in_the_floor():
    """Hadamard uses the floor's model; it keeps no copy of its own."""
    assert importlib.util.find_spec("ncdynamics.theories.hadamard.ufm") is None
    from ncdynamics.theories.hadamard import fast_batched_gd, metrics

    assert fast_batched_gd.check_pair is ufm.check_pair
    assert metrics.ce_loss_from_logits is ufm.ce_loss_from_logits
