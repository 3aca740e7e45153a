"""Calibration of the Hadamard confrontation: recovery, an in-regime run, out-of-regime runs.

Recovery: class-mean logits made by the reduced ODE (9) with a known time scale, recorded
late, unevenly and cut mid-transient, with 0.5% noise, must give back ``c`` inside its 95%
interval. In regime: gradient descent on the UFM (the theory's own ``hadamard.fig2``
experiment, K = 4, cross-entropy, eta = 0.01) must get the verdict ``holds`` with ``c`` near
the predicted ``2 eta``. Out of regime: a squared-error run, a decaying learning rate and the
early, off-subspace records of a random initialisation must not be ``holds``.
"""

import warnings

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.experiments._registry import run as run_experiment
from ncdynamics.theories.confrontation import Stream
from ncdynamics.theories.hadamard.confront import (
    CONFRONTATION,
    OFFDIAGONAL_MAX,
    offdiagonal_fraction,
)
from ncdynamics.theories.hadamard.metrics import reduced_basis
from ncdynamics.theories.hadamard.model import solve_reduced
from ncdynamics.theories.verdict import assess


def _verdict(stream):
    fit = CONFRONTATION.fit(stream)
    observed = CONFRONTATION.observe(stream)
    n = observed["logit_scale"][0].size
    return fit, assess(CONFRONTATION.fit, stream, observed, fit, n_records=n)[0]


def _ode_run(path, steps, c, *, noise=0.0, config=None, lr=None, seed=0):
    """A run whose class-mean logits follow the reduced ODE from step 0 with time scale c."""
    K = 4
    a0 = np.array([0.05, 0.03, 0.02])
    a = solve_reduced(a0, c * np.asarray(steps), n_classes=K, rtol=1e-11, atol=1e-13).ys
    rng = np.random.default_rng(seed)
    U, V = reduced_basis(K)
    run = runs.create(path, config=config or {})
    for i, (t, at) in enumerate(zip(steps, a, strict=True)):
        sv = K * at * np.exp(noise * rng.standard_normal(K - 1))
        run.save_array("class_means_logits", int(t), (U @ np.diag(sv) @ V.T).T)
        if lr is not None:
            run.log(int(t), {"lr": lr[i]})
    run.flush()
    return run, a0, a


def test_recovers_time_scale_from_a_late_uneven_stream_cut_mid_transient(tmp_path):
    c = 0.05
    steps = np.array([30, 33, 41, 47, 60, 66, 83, 101, 118, 150, 171, 230, 260, 400, 600])
    run, a0, a = _ode_run(tmp_path / "r", steps, c, noise=0.005)
    stream = Stream(run).cut(171)  # mid-transient: the anisotropy is still falling
    assert CONFRONTATION.out_of_regime(stream) == []
    fit, verdict = _verdict(stream)
    low, high = fit.intervals["time_scale"]
    assert low < c < high
    assert fit.params["time_scale"].value == pytest.approx(c, rel=0.05)
    assert fit.params["time_scale"].unit == "1/step" and fit.params["time_scale"].expected is None
    assert fit.params["time_scale"].bound[0] < low and high < fit.params["time_scale"].bound[1]
    assert verdict.verdict == "holds", verdict.reason
    # the prediction starts from the first record (step 30), not from step 0
    later = steps[steps > 171]
    pred = fit.curves.predict(later.astype(float))["logit_scale"]
    truth = np.exp(np.mean(np.log(4 * a[steps > 171]), axis=1))
    assert np.allclose(pred, truth, rtol=0.05)
    lo, hi = fit.curves.band(later.astype(float))["logit_scale"]
    assert np.all((lo < truth) & (truth < hi))


def test_uneven_records_from_step_zero_give_the_same_time_scale(tmp_path):
    steps = np.array([0, 2, 3, 9, 10, 25, 40, 41, 90, 200])
    run, _, _ = _ode_run(tmp_path / "r", steps, 0.05)
    fit = CONFRONTATION.fit(Stream(run))
    assert fit.params["time_scale"].value == pytest.approx(0.05, rel=1e-4)


@pytest.fixture(scope="module")
def ufm_run(tmp_path_factory):
    """GD on the UFM, K = 4, cross-entropy, eta = 0.01: random and Hadamard initialisations."""
    out = tmp_path_factory.mktemp("hadamard") / "fig2"
    return run_experiment(
        "hadamard.fig2",
        preset="smoke",
        out=out,
        progress=False,
        n_iterations=6000,
        n_log=40,
        n_realizations=1,
    )


def test_gd_on_the_ufm_from_a_hadamard_init_holds_with_c_near_2_eta(ufm_run):
    stream = Stream(ufm_run, "hadamard.")
    assert CONFRONTATION.out_of_regime(stream) == []
    fit, verdict = _verdict(stream)
    assert verdict.verdict == "holds", verdict.reason
    assert fit.params["time_scale"].expected == pytest.approx(0.02)
    assert fit.params["time_scale"].unit == "1/iteration"
    # gradient descent follows the flow to O(eta): c within 1% of 2 eta
    assert fit.params["time_scale"].value == pytest.approx(0.02, rel=0.01)


def test_random_init_holds_once_the_logits_reach_the_hadamard_subspace(ufm_run):
    whole = Stream(ufm_run, "random.")
    reasons = CONFRONTATION.out_of_regime(whole)
    assert len(reasons) == 1 and "off-diagonal fraction" in reasons[0]
    steps, means = whole.array("class_means_logits")
    off = np.array([offdiagonal_fraction(m) for m in means])
    inside = np.flatnonzero(off > OFFDIAGONAL_MAX)[-1] + 1  # first record of the tail inside
    window = whole.window(steps[inside], np.inf)
    assert CONFRONTATION.out_of_regime(window) == []
    fit, verdict = _verdict(window)
    assert verdict.verdict == "holds", verdict.reason
    low, high = fit.intervals["time_scale"]
    assert low < fit.params["time_scale"].expected < high


def test_squared_error_and_a_decaying_learning_rate_are_out_of_regime(tmp_path):
    steps = np.arange(0, 200, 10)
    mse, _, _ = _ode_run(tmp_path / "mse", steps, 0.05, config={"loss": "mse", "lr": 0.01})
    reasons = CONFRONTATION.out_of_regime(Stream(mse))
    assert len(reasons) == 1 and "'mse'" in reasons[0]
    lr = 0.1 * 0.5 ** (steps / 100)
    decay, _, _ = _ode_run(tmp_path / "decay", steps, 0.05, lr=lr)
    reasons = CONFRONTATION.out_of_regime(Stream(decay))
    assert len(reasons) == 1 and "recorded lr changes" in reasons[0]
    sgd = runs.create(tmp_path / "sgd", config={"momentum": 0.9, "lr": 0.05})
    U, V = reduced_basis(4)
    sgd.save_array("class_means_logits", 0, (U @ np.diag([3.0, 2.0, 1.0]) @ V.T).T)
    assert "momentum 0.9" in CONFRONTATION.out_of_regime(Stream(sgd))[0]


def test_a_plateau_without_dynamics_is_not_holds(tmp_path):
    steps = np.arange(0, 100, 5)
    run, _, _ = _ode_run(tmp_path / "flat", steps, 1e-12, noise=0.01)
    fit, verdict = _verdict(Stream(run))
    # the flow explains none of the scatter around a constant: fails on R^2, and c is barely
    # identified (its interval spans more than a decade)
    assert verdict.verdict == "fails", verdict.reason
    low, high = fit.intervals["time_scale"]
    assert high / low > 10


def test_expected_time_scale_of_a_training_loop_run_is_per_epoch(tmp_path):
    steps = np.arange(0, 60, 3)
    config = {
        "lr": 0.05,
        "epochs": 60,
        "batch_size": 40,
        "momentum": 0.0,
        "samples_per_class": 10,
        "loss": "cross-entropy",
    }
    run, _, _ = _ode_run(tmp_path / "r", steps, 0.02, config=config)
    fit = CONFRONTATION.fit(Stream(run))
    # 2 sqrt(n) eta / B per epoch: SGD steps of eta / N on the summed loss, N / B per epoch
    assert fit.params["time_scale"].expected == pytest.approx(2 * np.sqrt(10) * 0.05 / 40)
    assert fit.params["time_scale"].unit == "1/epoch"


def test_a_record_with_a_zero_singular_value_is_observed_without_warnings(tmp_path):
    """All-zero class-mean logits (e.g. a zero-initialised last layer) have zero singular
    values: the observables there are the geometric mean 0 and an undefined anisotropy, shown
    as such, with no floating-point warning; the fit says why it cannot be made."""
    from ncdynamics.theories.confrontation import Undetermined

    steps = np.arange(0, 60, 5)
    run, _, _ = _ode_run(tmp_path / "zero", steps, 0.02)
    run.save_array("class_means_logits", 60, np.zeros((4, 4)))
    run.flush()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        observed = CONFRONTATION.observe(Stream(run))
        with pytest.raises(Undetermined, match="singular value is zero"):
            CONFRONTATION.fit(Stream(run))
    scale = observed["logit_scale"][1]
    anisotropy = observed["logit_anisotropy"][1]
    assert scale[-1] == 0 and np.all(scale[:-1] > 0)
    assert np.isnan(anisotropy[-1]) and np.all(np.isfinite(anisotropy[:-1]))
