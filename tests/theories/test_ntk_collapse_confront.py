"""Calibration of the ntk_collapse confrontation: recovery, an in-regime run, degenerate and
out-of-regime runs.

Recovery: kernel records made by the Riccati flow (44) with a known flow time per step,
recorded late, unevenly, cut mid-transient and with 0.2% noise, must give back ``tau`` inside
its 95% interval; across a learning-rate drop the fit keeps to one rate. In regime: an MLP
trained by full-batch gradient descent on the squared error, in its terminal phase, must get
the verdict ``holds``. Degenerate: records that do not move (the issue's smoke run after its
last LR drop) put ``tau`` at the floor of its search. Out of regime: cross-entropy, the early
phase of training, and a kernel without class-block structure.
"""

import numpy as np
import pytest
import torch
from scipy.integrate import solve_ivp

from ncdynamics import runs
from ncdynamics.models.mlp import MLP
from ncdynamics.probes.invariant import InvariantProbe
from ncdynamics.theories.confrontation import Stream
from ncdynamics.theories.ntk_collapse.confront import CONFRONTATION, TAU_BOUNDS, lr_segments
from ncdynamics.theories.verdict import assess
from ncdynamics.training import Recorder, train

N_FEAT, M, C, MU_S = 6, 4, 3, 0.8


def _verdict(stream):
    fit = CONFRONTATION.fit(stream)
    observed = CONFRONTATION.observe(stream)
    return fit, assess(
        CONFRONTATION.fit, stream, observed, fit, n_records=observed["within_scatter"][0].size
    )[0]


def _flow(seed=0):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((N_FEAT, N_FEAT))
    Et = (A + A.T) / 2 + 1.0 * np.eye(N_FEAT)
    H = rng.standard_normal((N_FEAT, 3))
    return Et, H @ H.T


def _riccati(Et, S0, u):
    def rhs(_, y):
        S = y.reshape(N_FEAT, N_FEAT)
        return (-(Et @ S + S @ Et) - 2 * M * S @ S).ravel()

    sol = solve_ivp(rhs, (0, u[-1]), S0.ravel(), t_eval=u, rtol=1e-11, atol=1e-13)
    return sol.y.T.reshape(-1, N_FEAT, N_FEAT)


def _write(path, steps, S, Et, *, config=None, noise=0.0, lr=None, kappas=(1.0, 0.2, 0.1)):
    """A run with the ntk_invariant records of within-class Grams ``S`` (one per step)."""
    rng = np.random.default_rng(1)
    run = runs.create(path, config={"loss": "mse", **(config or {})})
    labels = np.repeat(np.arange(C), M)
    kd = kappas[0]
    kc, kn = kd - MU_S, kappas[2] if kd - MU_S > kappas[2] else kappas[1]
    for i, t in enumerate(steps):
        S_W = M * S[i] * (1.0 + noise * rng.standard_normal())
        run.save_array("invariant_within_scatter", int(t), S_W)
        run.save_array("invariant_gram_w", int(t), (Et + S_W) / MU_S)  # E~ = mu_s G - S_W
        run.save_array("invariant_kappas", int(t), np.array([kd, kc, kn]))
        run.save_array("invariant_class_means", int(t), rng.standard_normal((C, N_FEAT)))
        run.save_array("ntk_labels", int(t), labels)
        run.log(int(t), {"train/accuracy": 1.0})
    if lr is not None:
        for t, v in lr:
            run.log(int(t), {"lr": v})
    run.flush()
    return run


def test_recovers_flow_time_from_a_late_uneven_stream_cut_mid_transient(tmp_path):
    tau = 0.02
    Et, S0 = _flow()
    steps = np.array([20, 22, 27, 29, 35, 38, 44, 52, 55, 63, 70, 84, 99, 130])
    S = _riccati(Et, S0, tau * steps.astype(float))  # the flow started at step 0
    run = _write(tmp_path / "r", steps, S, Et, noise=0.002, config={"lr": 0.1})
    stream = Stream(run).cut(63)
    assert CONFRONTATION.out_of_regime(stream) == []
    fit, verdict = _verdict(stream)
    low, high = fit.intervals["flow_time_per_step"]
    assert low < tau < high
    assert fit.params["flow_time_per_step"].value == pytest.approx(tau, rel=0.05)
    assert fit.params["flow_time_per_step"].unit == "flow time/step"
    assert verdict.verdict == "holds", verdict.reason
    assert verdict.skill["within_scatter.ahead_skill_vs_persistence"] > 0.9
    # the forecast starts from the last fitted record (step 63) and its band holds the truth
    later = steps[steps > 63].astype(float)
    truth = M * np.trace(S[steps > 63], axis1=1, axis2=2)
    assert np.allclose(fit.curves.predict(later)["within_scatter"], truth, rtol=0.03)
    lo, hi = fit.curves.band(later)["within_scatter"]
    assert np.all((lo < truth) & (truth < hi))


def _training_loop_lr_log(epochs, drops, eta):
    """The learning rate as ncdynamics.training logs it: at epoch e, the rate of epoch e+1."""
    return [(e, eta * 0.1 ** sum(d <= e for d in drops)) for e in range(1, epochs + 1)]


def test_a_learning_rate_drop_splits_the_records_and_the_fit_keeps_to_one_rate(tmp_path):
    tau1, drop = 0.02, 30
    Et, S0 = _flow()
    steps = np.arange(0, 61, 3)
    # flow time: tau1 per step up to the drop, a tenth of it after
    u = tau1 * np.minimum(steps, drop) + 0.1 * tau1 * np.maximum(steps - drop, 0)
    S = _riccati(Et, S0, u.astype(float))
    run = _write(tmp_path / "r", steps, S, Et, lr=_training_loop_lr_log(60, [drop], 0.1))
    assert lr_segments(Stream(run), steps.astype(float)) == [(0, 10), (10, 20)]
    whole = CONFRONTATION.fit(Stream(run))
    assert whole.params["flow_time_per_step"].value == pytest.approx(0.1 * tau1, rel=1e-3)
    assert "steps 30-60" in whole.shown.notes[0]
    early = CONFRONTATION.fit(Stream(run).window(0, drop))
    assert early.params["flow_time_per_step"].value == pytest.approx(tau1, rel=1e-3)
    # kernel records every epoch: the first gap has no logged rate (the loop logs none at 0)
    every = _write(
        tmp_path / "every", np.arange(7), S[:7], Et, lr=_training_loop_lr_log(6, [3], 0.1)
    )
    assert lr_segments(Stream(every), np.arange(7.0)) == [(1, 3), (3, 6)]
    # a window with fewer than 3 records at one rate is out of regime
    short = Stream(run).window(27, 33)
    assert "share one learning rate" in CONFRONTATION.out_of_regime(short)[0]


def test_a_scatter_the_flow_cannot_follow_puts_tau_at_the_floor_of_its_search(tmp_path):
    """The issue's smoke run: the within-class scatter creeps up while the flow (44) shrinks
    it, so the best flow time is none at all (persistence)."""
    Et, S0 = _flow()
    Et = Et + 3.0 * np.eye(N_FEAT)  # positive definite: the flow only shrinks S
    steps = np.arange(0, 40, 4)
    S = S0[None] * (1 + 1e-3 * steps)[:, None, None]
    run = _write(tmp_path / "r", steps, S, Et, config={"lr": 0.1})
    fit, verdict = _verdict(Stream(run))
    assert fit.params["flow_time_per_step"].value == pytest.approx(TAU_BOUNDS[0], rel=1e-3)
    assert verdict.verdict == "degenerate"
    assert "lower bound" in verdict.reason


def test_cross_entropy_early_training_and_a_flat_kernel_are_out_of_regime(tmp_path):
    Et, S0 = _flow()
    steps = np.arange(0, 40, 4)
    S = _riccati(Et, S0, 0.02 * steps.astype(float))
    ce = _write(tmp_path / "ce", steps, S, Et, config={"loss": "cross-entropy"})
    assert "'cross-entropy'" in CONFRONTATION.out_of_regime(Stream(ce))[0]
    flat = _write(tmp_path / "flat", steps, S, Et, kappas=(1.0, 0.2, 0.5))
    reasons = CONFRONTATION.out_of_regime(Stream(flat))
    assert len(reasons) == 1 and "Assumption 3.2" in reasons[0]
    early = _write(tmp_path / "early", steps, S, Et)
    early.log(0, {"train/accuracy": 0.4})
    early.flush()
    reasons = CONFRONTATION.out_of_regime(Stream(early))
    assert len(reasons) == 1 and "train/accuracy 0.4" in reasons[0]
    assert CONFRONTATION.out_of_regime(Stream(early).window(4, 40)) == []


def test_full_batch_gd_on_the_squared_error_fits_but_its_kernel_is_not_borne_out(tmp_path):
    """A small MLP, 4 Gaussian classes of 8, full-batch GD (no momentum) on the MSE loss.

    In the terminal phase the flow fits one record ahead (R^2 0.999) and, carried from the
    first fitted record by the recorded kernel, follows the records with R^2 0.98; but the
    scatter falls only 15% over the fitted stretch, too little for the kernel's anisotropy to
    matter: the same flow under an isotropic invariant predicts the held-out records as well, and
    a random walk with drift explains them as well in-sample. So the verdict is ``not
    distinguished``: what only the theory predicts is not tested by these records. Most of
    the scatter (71%) lies outside the span of the classifier's rows, where the flow holds it
    fixed (Assumption 3.2: penultimate neurons do not interact), and the run shrinks it by 8%:
    the floor that keeps real runs from ``holds`` (docs/theories/ntk_collapse.md)."""
    n_cls, per, d = 4, 8, 16
    rng = np.random.default_rng(0)
    y = np.repeat(np.arange(n_cls), per)
    x = (rng.standard_normal((n_cls, d))[y] + 0.5 * rng.standard_normal((n_cls * per, d))).astype(
        np.float32
    )
    settings = {"loss": "mse", "lr": 0.05, "momentum": 0.0, "batch_size": n_cls * per}
    run = runs.create(tmp_path / "mlp", config={**settings, "epochs": 200})
    torch.manual_seed(0)
    model = MLP(d, n_cls, depth=2, width=32)
    probe = InvariantProbe(per_class=per, logits=False)
    rec = Recorder(run, x, y, probes=[probe], schedule=10, num_classes=n_cls)
    train(model, (x, y), epochs=200, recorder=rec, progress=False, evaluate_test=False, **settings)
    rec.close()
    whole = Stream(run)
    assert "train/accuracy" in CONFRONTATION.out_of_regime(whole)[0]  # step 0: not terminal
    stream = whole.window(100, np.inf)
    assert CONFRONTATION.out_of_regime(stream) == []
    fit, verdict = _verdict(stream)
    assert verdict.verdict == "not distinguished", verdict.reason
    assert verdict.skill[f"rival_ratio.{ISOTROPIC}"] >= 1
    # the measured floor (docs/theories/ntk_collapse.md): most of the scatter lies outside
    # the span of W, where the flow holds it fixed, and there the run shrinks it
    gram = stream.array("invariant_gram_w")[1]
    scatter = stream.array("invariant_within_scatter")[1]
    null = []
    for g, s_w in ((gram[0], scatter[0]), (gram[-1], scatter[-1])):
        w, v = np.linalg.eigh(g)
        span = v[:, w > 1e-8 * w.max()]
        null.append(np.trace(s_w) - np.trace(span.T @ s_w @ span))
    assert null[0] > 0.7 * np.trace(scatter[0])
    assert null[1] < 0.95 * null[0]
    assert verdict.skill["heldout_ratio.drift"] < 1  # it beats the generic curves
    assert fit.shown.goodness["r2_log_within_scatter_ahead"] > 0.99
    assert verdict.skill["within_scatter.ahead_skill_vs_persistence"] > 0.5
    assert fit.params["flow_time_per_step"].unit == "flow time/epoch"
    low, high = fit.intervals["flow_time_per_step"]
    assert TAU_BOUNDS[0] < low < fit.params["flow_time_per_step"].value < high < TAU_BOUNDS[1]


@pytest.mark.parametrize(
    ("family", "seed"),
    [("two_exponentials", 0), ("two_exponentials", 3), ("exponential", 2), ("random_walk", 2)],
)
def test_a_decay_the_flow_does_not_make_does_not_hold(tmp_path, family, seed):
    """Generic streams of the calibration kit: the recorded kernel and the invariant are the
    true flow's, but the scatter moves between the flow's first and last values along a
    generic curve. Carried from the first fitted record by the recorded kernel, the flow
    misses such a curve by 12% or more in log (0.3-0.6% on the flow's own streams), so
    neither the stream nor a window of it may hold. Before issue 28's fix these four held
    (fitted one record ahead, R² 0.91-0.95)."""
    from ncdynamics.experiments.compare import compare
    from ncdynamics.theories.ntk_collapse.calibration import generic_stream
    from ncdynamics.theories.testing import GENERIC_FAMILIES, POSITIVE

    rng = np.random.default_rng([seed, 2, GENERIC_FAMILIES.index(family)])
    generic_stream(tmp_path / "g", family, rng)
    (entry,) = [e for e in compare(tmp_path / "g") if e.theory == "ntk_collapse"]
    assert entry.verdict.verdict not in POSITIVE, entry.verdict.reason


@pytest.mark.parametrize("noise", ["independent", "ar1"])
def test_the_flow_time_interval_is_calibrated_on_the_kits_true_streams(tmp_path, noise):
    """Every residual of the fit shares the first record's noise (the curve is carried from
    it), which a formula for independent or AR(1) residuals cannot see: the intervals were
    2.4x too wide under independent noise when fitted one record ahead, and 2.6x too narrow
    once carried from the first record. Over the kit's ten seeds the 95% intervals must hold
    the true value at least 9 times and their width must match the spread of the fitted values
    (spread over seeds / reported standard error in [0.7, 1.4], both in log)."""
    from ncdynamics.theories.ntk_collapse.calibration import TAU, true_stream

    values, ses, hits = [], [], 0
    for seed in range(10):
        true_stream(tmp_path / str(seed), np.random.default_rng([seed, 1]), noise)
        fit = CONFRONTATION.fit(Stream(runs.open_run(tmp_path / str(seed))))
        low, high = fit.intervals["flow_time_per_step"]
        values.append(np.log(fit.params["flow_time_per_step"].value))
        ses.append(np.log(high / low) / (2 * 1.96))
        hits += low <= TAU <= high
    assert hits >= 9
    assert 0.7 <= np.std(values, ddof=1) / np.median(ses) <= 1.4


def test_a_riccati_decay_under_another_kernel_than_the_recorded_one_does_not_hold(tmp_path):
    """The scatter follows the flow (44) under one invariant, while the recorded kernel is
    another seed's: a Riccati decay unrelated to the recorded kernel (issue 28 item 2). With
    ``E~`` near a multiple of the identity (shift 3) every kernel decays the trace at a
    similar rate, so the flow carried by the wrong kernel fits (R² 0.996) and held before the
    rivals included the flow under permuted invariants (isotropic rival's error ratio 0.42).
    Averaged over permutations, an unrelated invariant predicts the held-out records better
    (ratio 1.19): not distinguished. Of ten such streams (other seeds 1-10) three held
    before and two still hold (seeds 4 and 10: the permuted rival's ratio 0.28 and 0.71,
    docs/theories/ntk_collapse.md)."""
    steps = np.array([20, 22, 27, 29, 35, 38, 44, 52, 55, 63, 70, 84, 99, 130])
    shift = 2.0 * np.eye(N_FEAT)
    et_true, s0 = _flow(0)
    et_recorded, _ = _flow(1)
    S = _riccati(et_true + shift, s0, 0.005 * steps.astype(float))
    run = _write(tmp_path / "r", steps, S, et_recorded + shift, noise=0.002, config={"lr": 0.1})
    _, verdict = _verdict(Stream(run))
    assert verdict.verdict not in ("holds", "holds in a window"), verdict.reason


ISOTROPIC = "the same flow under an isotropic invariant"


def test_the_isotropic_rival_is_fitted_as_the_theory_is(tmp_path):
    """With an isotropic invariant (``E~ = K - S_W`` a multiple of the identity at every
    record) the isotropic rival is the theory itself, so fitted the same way (on the
    trajectory carried from the first fitted record) it must give the same flow time and the
    same held-out predictions. Fitted one record ahead, as before, it gave another tau and
    predicted from the last record under a frozen invariant."""
    steps = np.array([20, 22, 27, 29, 35, 38, 44, 52, 55, 63, 70, 84, 99, 130])
    _, s0 = _flow(0)
    et = 1.5 * np.eye(N_FEAT)
    S = _riccati(et, s0, 0.02 * steps.astype(float))
    run = _write(tmp_path / "r", steps, S, et, noise=0.002, config={"lr": 0.1})
    _assert_rival_is_the_theory(run, ISOTROPIC, steps)


def _assert_rival_is_the_theory(run, rival, steps, cut=63):
    """Fitted on the records up to ``cut``, ``rival`` has the theory's flow time and predicts
    the later records as the theory does."""
    fit = CONFRONTATION.fit(Stream(run).cut(cut))
    tau = fit.params["flow_time_per_step"].value
    assert fit.shown.alternatives[rival]["flow_time_per_step"] == pytest.approx(tau, rel=1e-9)
    later = steps[steps > cut].astype(float)
    theirs = fit.curves.rivals[rival](later)["within_scatter"]
    assert np.allclose(theirs, fit.curves.predict(later)["within_scatter"], rtol=1e-9)


FROZEN = "the same flow under the first fitted record's kernel, held"


def test_the_frozen_kernel_rival_is_the_theory_when_the_recorded_kernel_does_not_move(tmp_path):
    """The frozen-kernel rival drives the flow by the kernel recorded at the first fitted
    record, held; where the run records that same kernel at every record it is the theory
    itself (same flow time, same predictions), and where the kernel moves with the scatter
    (the kit's streams: ``W^T W = (E~ + S_W)/mu_s``) the theory predicts far better."""
    steps = np.array([20, 22, 27, 29, 35, 38, 44, 52, 55, 63, 70, 84, 99, 130])
    et, s0 = _flow(0)
    S = _riccati(et, s0, 0.02 * steps.astype(float))
    run = runs.create(tmp_path / "held", config={"loss": "mse", "lr": 0.1})
    labels = np.repeat(np.arange(C), M)
    rng = np.random.default_rng(3)
    for i, t in enumerate(steps):
        run.save_array("invariant_within_scatter", int(t), M * S[i])
        run.save_array("invariant_gram_w", int(t), (et + M * S[0]) / MU_S)  # never moves
        run.save_array("invariant_kappas", int(t), np.array([1.0, 0.2, 0.1]))
        run.save_array("invariant_class_means", int(t), rng.standard_normal((C, N_FEAT)))
        run.save_array("ntk_labels", int(t), labels)
        run.log(int(t), {"train/accuracy": 1.0})
    run.flush()
    _assert_rival_is_the_theory(run, FROZEN, steps)
    moving = _write(tmp_path / "moving", steps, S, et, noise=0.002, config={"lr": 0.1})
    _, verdict = _verdict(Stream(moving))
    assert verdict.verdict == "holds", verdict.reason
    assert verdict.skill[f"rival_ratio.{FROZEN}"] < 0.1


def _trajectory_loss(tmp_path, noise=0.002):
    """The theory's trajectory loss on a stream of the flow (44) (:func:`_write`)."""
    from ncdynamics.theories.ntk_collapse import confront

    steps = np.array([20, 22, 27, 29, 35, 38, 44, 52, 55, 63, 70, 84, 99, 130])
    et, s0 = _flow(0)
    S = _riccati(et, s0, 0.02 * steps.astype(float))
    run = _write(tmp_path / "r", steps, S, et, noise=noise, config={"lr": 0.1})
    fr = confront._stretch(Stream(run))
    return confront._trajectory_fit(
        fr.start(fr.first), confront._kernels(fr), fr.m, fr.steps[1:], fr.target
    )[1]


def test_a_bounded_loss_is_the_loss_or_stops_only_above_its_bound(tmp_path):
    """``loss(log_tau, above)`` stops carrying the flow once the records reached so far are
    already worse than ``above``: it returns the loss to the bit, or ``inf`` only where the
    loss is above the bound (never at or below it, whatever the rounding of its partial
    sums)."""
    loss = _trajectory_loss(tmp_path)
    grid = np.linspace(np.log(TAU_BOUNDS[0]), np.log(TAU_BOUNDS[1]), 23)
    full = np.array([loss(g) for g in grid])
    for above in (np.min(full), np.median(full[np.isfinite(full)]), 1e-3, np.inf):
        bounded = np.array([loss(g, above) for g in grid])
        same = bounded == full
        assert np.all(same | (np.isinf(bounded) & (full > above))), above
        if above == np.min(full):  # and it does stop: the bound is what saves the time
            assert np.any(np.isinf(bounded) & np.isfinite(full))
    # the loss at its own value is never stopped: ties with the best so far are kept
    assert all(loss(g, v) == v for g, v in zip(grid, full, strict=True) if np.isfinite(v))


def test_the_search_finds_the_minimum_a_full_grid_finds(tmp_path):
    """Walking the grid with the best-so-far bound picks the grid point a full evaluation of
    every point picks, and so the same refined flow time, to the bit."""
    from ncdynamics.theories.ntk_collapse import confront

    loss = _trajectory_loss(tmp_path, noise=0.01)
    calls = {"bounded": 0}

    def unbounded(log_tau, above=np.inf):
        return loss(log_tau)

    def counted(log_tau, above=np.inf):
        calls["bounded"] += np.isfinite(above)
        return loss(log_tau, above)

    assert confront._search_tau(counted).x == confront._search_tau(unbounded).x
    assert calls["bounded"] > 0
