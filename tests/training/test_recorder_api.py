"""The Recorder as a new user meets it: any probe-set container, clear warnings."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch
from torch import nn


class ListSink:
    def __init__(self):
        self.logged, self.arrays = [], []

    def log(self, step, values):
        self.logged.append((step, dict(values)))

    def save_array(self, name, step, array):
        self.arrays.append((name, step))

    def flush(self):
        pass


def _sequential(n_out=3):
    torch.manual_seed(0)
    return nn.Sequential(
        nn.Linear(6, 16), nn.ReLU(), nn.Linear(16, 8), nn.ReLU(), nn.Linear(8, n_out)
    )


def _probe_set(n=30, d=6, c=3):
    rng = np.random.default_rng(0)
    return rng.normal(size=(n, d)).astype(np.float32), np.arange(n) % c


def test_a_layer_whose_width_is_not_the_class_count_warns_once_about_nc3_nc4():
    from ncdynamics.training import Recorder

    x, y = _probe_set()
    rec = Recorder(ListSink(), x, y, probes=["collapse"], layer="2")
    model = _sequential()
    expected = r"layer '2'.*\(8, 16\).*NC3 and NC4.*\(3, 16\).*3 classes"
    with pytest.warns(UserWarning, match=expected) as rec_w:
        scalars = rec.record(model, 0)
    assert rec_w[0].filename == __file__  # stacklevel points at the caller
    assert "nc/nc1" in scalars and "nc/nc3" not in scalars
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        rec.record(model, 1)  # once only


def test_the_final_layer_records_nc3_nc4_without_a_warning():
    from ncdynamics.training import Recorder

    x, y = _probe_set()
    rec = Recorder(ListSink(), x, y, probes=["collapse"], layer="4")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        scalars = rec.record(_sequential(), 0)
    assert "nc/nc3" in scalars
