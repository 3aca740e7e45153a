"""The training recipe of Figs. 1/2/12 records kernels and NC metrics on their own schedules."""

from ncdynamics.theories.ntk_collapse.training_recipe import TRAIN_PRESETS, TrainConfig, train_one


def _steps_with(out, name):
    return sorted({step for step, n, _ in out["records"] if n == name})


def test_kernels_at_every_multiple_of_kernel_every_and_nc_at_record_steps():
    # Regression (issue 19): the kernel probe ran only where the Recorder did (multiples of
    # record_every), so kernel_every=3 with record_every=2 gave kernels at 0, 6, 12 only.
    cfg = TrainConfig(
        **{**TRAIN_PRESETS["smoke"], "epochs": 12, "record_every": 2, "kernel_every": 3}
    )
    out = train_one(cfg.__dict__, cfg.init, cfg.lr, seed=0)
    assert not out["diverged"]
    kernel_steps = [0, 3, 6, 9, 12]
    record_steps = [0, 2, 4, 6, 8, 10, 12]
    assert _steps_with(out, "invariant_norm") == kernel_steps
    assert _steps_with(out, "ntk_kappa_d") == kernel_steps
    for name in ("ntk_traced_features", "ntk_traced_logits", "invariant_kappas"):
        assert sorted(out["arrays"][name]) == kernel_steps, name
    assert sorted(out["arrays"]["class_means_logits"]) == record_steps
    assert _steps_with(out, "nc/nc1") == record_steps
    assert _steps_with(out, "nc/nc3") == record_steps


def test_last_epoch_gets_kernels_and_nc_metrics_off_both_grids():
    cfg = TrainConfig(
        **{**TRAIN_PRESETS["smoke"], "epochs": 7, "record_every": 2, "kernel_every": 3}
    )
    out = train_one(cfg.__dict__, cfg.init, cfg.lr, seed=0)
    assert _steps_with(out, "invariant_norm") == [0, 3, 6, 7]
    assert _steps_with(out, "nc/nc1") == [0, 2, 4, 6, 7]
