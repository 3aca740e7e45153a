"""The atlas's unconstrained-features base model (``model="ufm"``): a cell inside the
Hadamard theory's regime, the cells that leave it, and a plan that grows by blocks."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ncdynamics.experiments import atlas as atlas_module
from ncdynamics.experiments.atlas import PLANS, AtlasPlan, Block, read_atlas
from ncdynamics.experiments.atlas_cell import (
    BASE_MODELS,
    ONE_HOT,
    AtlasCellConfig,
    cell_data,
)

UFM = {"model": "ufm", "dataset": ONE_HOT}


def test_the_ufm_cell_is_a_two_layer_linear_net_on_the_one_hot_codes_of_its_samples():
    cfg = AtlasCellConfig(**UFM, n_classes=4, train_per_class=3, probe_per_class=3, width=5)
    x, y = cell_data(cfg)
    assert np.array_equal(x, np.eye(12, dtype=np.float32))
    assert np.array_equal(y, np.repeat(np.arange(4), 3))
    net = BASE_MODELS["ufm"](12, 4, cfg, torch.Generator().manual_seed(0))
    shapes = sorted(tuple(p.shape) for p in net.parameters())
    assert shapes == [(4, 5), (5, 12)]  # W (K x d) and H (d x K n), no biases
    with torch.no_grad():
        h = net.features(torch.from_numpy(x))
        assert torch.allclose(net(torch.from_numpy(x)), net.classifier(h))
    # the default initialisation is the theory's standard one: entries N(0, 1/K)
    big = AtlasCellConfig(**UFM, n_classes=4, train_per_class=50, probe_per_class=50, width=200)
    net = BASE_MODELS["ufm"](200, 4, big, torch.Generator())
    w = torch.cat([p.detach().flatten() for p in net.parameters()])
    assert float(w.std()) == pytest.approx(1 / math.sqrt(4), rel=0.05)


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"model": "ufm"}, "model 'ufm' needs dataset 'one-hot'"),
        ({"dataset": ONE_HOT}, "dataset 'one-hot' is the input of model 'ufm' only"),
        ({**UFM, "train_per_class": 4, "probe_per_class": 2}, "model 'ufm' records every sample"),
    ],
)
def test_the_ufm_model_and_its_one_hot_data_go_together(options, match):
    with pytest.raises(ValueError, match=match):
        AtlasCellConfig(**options)


def test_the_ufm_cell_states_what_the_hadamard_prediction_reads():
    cfg = AtlasCellConfig(**UFM, n_classes=4, train_per_class=2, probe_per_class=2)
    net = cfg.streams["net"]
    assert net["batch_size"] == 8 and net["train_per_class"] == 2 and net["momentum"] == 0.0


def _ufm_block_plan() -> AtlasPlan:
    smoke = PLANS["smoke"]
    (block,) = [b for b in smoke.blocks if b.axes.get("model") == ("ufm",)]
    return AtlasPlan(smoke.experiment, smoke.preset, smoke.fixed, (block,), smoke.seeds)


@pytest.fixture(scope="module")
def ufm_atlas(tmp_path_factory):
    out = tmp_path_factory.mktemp("atlas") / "ufm"
    return atlas_module(out=out, plan=_ufm_block_plan()), out


def test_hadamard_holds_on_the_ufm_and_squared_error_is_out_of_its_regime(ufm_atlas):
    cells, _ = ufm_atlas
    had = cells[cells["theory"] == "hadamard"]
    ce = had[had["loss"] == "cross-entropy"]  # full-batch gradient descent
    assert len(ce) >= 2
    assert set(ce["verdict"]) <= {"holds", "holds in a window"}, ce["reason"].tolist()
    # c against 2 sqrt(n) eta / B per epoch: gradient descent follows the flow to first order
    # in its step, which is c itself, so the relative error is at most about c
    for _, cell in ce.iterrows():
        assert cell["time_scale.n"] == cell["n_runs"]
        assert abs(cell["time_scale.ratio"] - 1) <= cell["time_scale.expected"]
    mse = had[had["loss"] == "mse"]
    assert len(mse) >= 1 and set(mse["verdict"]) == {"out of regime"}
    # outside by its declared loss (and, like every run from a random start, by its first
    # records' distance from the Hadamard subspace; the cross-entropy runs hold after them)
    assert all("loss" in named.split(", ") for named in mse["outside"])


def test_the_dependence_check_tests_c_against_the_learning_rate(ufm_atlas):
    cells, out = ufm_atlas
    deps = read_atlas(out)["dependence"]
    had = deps[(deps["theory"] == "hadamard") & (deps["axis"] == "lr")]
    assert len(had) == 1
    row = had.iloc[0]
    assert row["predicted"] == 1.0 and row["n_settings"] == 2 and row["n_runs"] == 4
    # c grows with the rate as predicted, up to gradient descent's first-order lag behind
    # the flow: each step multiplies by (1 + x)^2 where the flow gives e^(2x), so the fitted
    # c falls below 2 sqrt(n) eta by a share that grows with the step (docs/atlas.md)
    assert 0 < row["low"] <= row["slope"] <= row["high"] and abs(row["slope"] - 1) < 0.1
    ce = cells[(cells["theory"] == "hadamard") & (cells["loss"] == "cross-entropy")]
    ratio = ce.sort_values("lr")["time_scale.ratio"].to_numpy()
    assert ratio[1] < ratio[0] < 1


_BASE = AtlasPlan(
    "atlas",
    "smoke",
    {"epochs": 6, "record_every": 2, "width": 8},
    (Block("core", {"loss": ("mse",), "lr": (0.2,)}),),
    seeds=1,
)


def test_a_plan_that_adds_blocks_resumes_the_atlas_and_runs_only_the_new_ones(tmp_path):
    out = tmp_path / "atlas"
    assert atlas_module(out=out, plan=_BASE).attrs["atlas"]["runs_now"] == 1
    grown = AtlasPlan(
        _BASE.experiment,
        _BASE.preset,
        _BASE.fixed,
        (*_BASE.blocks, Block("more", {"lr": (0.4,)}, {"loss": "mse"})),
        seeds=1,
    )
    again = atlas_module(out=out, plan=grown)
    assert again.attrs["atlas"]["runs_now"] == 1 and again.attrs["atlas"]["confronted_now"] == 1
    assert [b["name"] for b in read_atlas(out)["meta"]["plan"]["blocks"]] == ["core", "more"]
    changed = AtlasPlan(
        _BASE.experiment,
        _BASE.preset,
        _BASE.fixed,
        (Block("core", {"loss": ("mse",), "lr": (0.3,)}),),
        seeds=1,
    )
    with pytest.raises(ValueError, match="another plan"):
        atlas_module(out=out, plan=changed)


def test_a_window_row_whose_prediction_cannot_be_read_keeps_its_verdict(tmp_path):
    from ncdynamics.experiments.atlas import _fill_expected

    row = {
        "theory": "hadamard",
        "stream": "net/",
        "verdict": "holds in a window",
        "params_from": "window 8-200",
        "params.time_scale": 0.3,
    }
    _fill_expected(row, tmp_path / "not-a-run")
    assert "params.time_scale.expected" not in row
    assert row["verdict"] == "holds in a window"
