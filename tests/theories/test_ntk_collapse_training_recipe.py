"""The training recipe of Figs. 1/2/12: what it reports about its own records and timing."""

import time

from ncdynamics.probes.invariant import InvariantProbe
from ncdynamics.theories.ntk_collapse.training_recipe import TRAIN_PRESETS, TrainConfig, train_one


def test_kernel_seconds_time_the_kernel_probe_not_another(monkeypatch):
    # Regression: the kernel time was read from the probe list by position, and a probe
    # inserted before the kernel probe made it report the class-means probe's time.
    delay = 0.05
    original = InvariantProbe.__call__

    def slow_call(self, inp):
        time.sleep(delay)
        return original(self, inp)

    monkeypatch.setattr(InvariantProbe, "__call__", slow_call)
    cfg = TrainConfig(
        **{**TRAIN_PRESETS["smoke"], "epochs": 2, "record_every": 1, "kernel_every": 1}
    )
    out = train_one(cfg.__dict__, cfg.init, cfg.lr, seed=0)
    n_kernel_records = 3  # epochs 0, 1, 2
    assert out["seconds_kernel"] >= n_kernel_records * delay
    assert out["seconds_kernel"] <= out["seconds_probes"] <= out["seconds_total"]
