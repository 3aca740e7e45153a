"""The regime atlas: cell aggregation, the dependence check, resumability and bad input."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pandas as pd
import pytest

from ncdynamics.experiments import atlas as atlas_module  # the function (as `sweep`)
from ncdynamics.experiments import fit_dependence
from ncdynamics.experiments.atlas import (
    PLANS,
    AtlasPlan,
    Block,
    aggregate_cells,
    dependence_table,
    read_atlas,
)
from ncdynamics.experiments.atlas_cell import AtlasCellConfig, cell_data
from ncdynamics.theories.verdict import VERDICTS


def _runs(rows: list[dict]) -> pd.DataFrame:
    table = pd.DataFrame(rows)
    table.attrs["axes"] = ["loss", "lr"]
    return table


def _row(loss: str, lr: float, seed: int, verdict: str, **params: float) -> dict:
    return {
        "loss": loss,
        "lr": lr,
        "seed": seed,
        "theory": "alignment",
        "stream": "net/",
        "verdict": verdict,
        "reason": f"{verdict} because of seed {seed}",
        **params,
    }


# ---------------------------------------------------------------------------- cells
def test_verdict_shares_sum_to_one_and_the_most_common_verdict_names_the_cell():
    table = _runs(
        [
            _row("mse", 0.1, 0, "holds"),
            _row("mse", 0.1, 1, "fails"),
            _row("mse", 0.1, 2, "holds"),
            _row("mse", 0.4, 0, "degenerate"),
        ]
    )
    cells = aggregate_cells(table)
    assert len(cells) == 2
    shares = cells[[f"share.{v}" for v in VERDICTS]].sum(axis=1)
    np.testing.assert_allclose(shares, 1.0)
    first = cells[cells["lr"] == 0.1].iloc[0]
    assert first["n_runs"] == 3
    assert first["share.holds"] == pytest.approx(2 / 3)
    assert first["share.fails"] == pytest.approx(1 / 3)
    assert first["verdict"] == "holds"
    assert first["reason"] == "holds because of seed 0"


def test_a_tie_goes_to_the_better_verdict():
    table = _runs([_row("mse", 0.1, 0, "fails"), _row("mse", 0.1, 1, "holds")])
    assert aggregate_cells(table).iloc[0]["verdict"] == "holds"


def test_cell_value_is_the_geometric_mean_and_degenerate_fits_are_left_out():
    table = _runs(
        [
            _row(
                "mse",
                0.1,
                0,
                "holds",
                **{"inv_tau_h": 1.0, "inv_tau_h.low": 0.9, "inv_tau_h.high": 1.1},
            ),
            _row(
                "mse",
                0.1,
                1,
                "fails",
                **{"inv_tau_h": 4.0, "inv_tau_h.low": 3.6, "inv_tau_h.high": 4.4},
            ),
            _row(
                "mse",
                0.1,
                2,
                "degenerate",
                **{"inv_tau_h": 1e6, "inv_tau_h.low": 0.0, "inv_tau_h.high": math.inf},
            ),
        ]
    )
    cell = aggregate_cells(table).iloc[0]
    assert cell["inv_tau_h"] == pytest.approx(2.0)
    assert cell["inv_tau_h.n"] == 2
    # the seeds disagree by a factor 4: the interval must hold both of them
    assert cell["inv_tau_h.low"] < 1.0 and cell["inv_tau_h.high"] > 4.0


def test_one_seed_keeps_its_own_interval_and_the_ratio_to_the_prediction():
    row = _row("cross-entropy", 0.1, 0, "holds")
    row.update(
        {
            "theory": "hadamard",
            "time_scale": 0.02,
            "time_scale.low": 0.015,
            "time_scale.high": 0.03,
            "time_scale.expected": 0.01,
        }
    )
    cell = aggregate_cells(_runs([row])).iloc[0]
    assert (cell["time_scale.low"], cell["time_scale.high"]) == (0.015, 0.03)
    assert cell["time_scale.ratio"] == pytest.approx(2.0)


# ---------------------------------------------------------------------------- dependence
def test_a_parameter_proportional_to_the_setting_agrees_with_exponent_one():
    rng = np.random.default_rng(0)
    lr = np.repeat([0.05, 0.1, 0.2, 0.4], 3)
    p = 0.3 * lr * np.exp(0.05 * rng.standard_normal(lr.size))
    dep = fit_dependence(lr, p, predicted=1.0)
    assert dep.verdict == "agrees", dep.reason
    assert dep.low < 1.0 < dep.high
    assert dep.n_runs == 12 and dep.n_settings == 4


def test_a_parameter_that_does_not_scale_as_predicted_disagrees():
    rng = np.random.default_rng(1)
    lr = np.repeat([0.05, 0.1, 0.2, 0.4], 3)
    p = 0.3 * np.sqrt(lr) * np.exp(0.05 * rng.standard_normal(lr.size))
    dep = fit_dependence(lr, p, predicted=1.0)
    assert dep.verdict == "disagrees", dep.reason
    assert dep.high < 1.0
    assert dep.slope == pytest.approx(0.5, abs=0.1)


def test_identical_seeds_cannot_narrow_the_interval_below_the_fits_own():
    lr = np.repeat([0.1, 0.2], 2)
    p = np.array([0.1, 0.1, 0.16, 0.16])  # exponent log2(1.6) = 0.68, no scatter at all
    tight = fit_dependence(lr, p, predicted=1.0)
    assert tight.verdict == "disagrees"
    wide = fit_dependence(lr, p, predicted=1.0, low=p / 2, high=p * 2)
    assert wide.low < 0 < 1.0 < wide.high  # the fits' own intervals make it this wide
    assert wide.verdict == "undetermined", wide.reason
    assert "own intervals" in wide.reason


def test_an_interval_that_also_holds_no_dependence_does_not_agree():
    """``agrees`` must be able to fail against the null of no dependence at all: a parameter
    that does not move with the setting, measured so noisily that the interval reaches both
    0 and the predicted 1, is ``undetermined``, not a confirmation."""
    rng = np.random.default_rng(3)
    lr = np.repeat([0.05, 0.1, 0.2], 2)
    flat = 0.01 * np.exp(0.8 * rng.standard_normal(lr.size))  # no dependence on lr
    dep = fit_dependence(lr, flat, predicted=1.0)
    assert dep.low < 0 and dep.high > 1.0
    assert dep.verdict == "undetermined", dep.reason
    assert "no dependence" in dep.reason
    # the same noise on a proportional parameter, with many runs, does agree
    lr = np.repeat([0.01, 0.04, 0.16, 0.64], 6)
    prop = 0.3 * lr * np.exp(0.3 * np.random.default_rng(4).standard_normal(lr.size))
    assert fit_dependence(lr, prop, predicted=1.0).verdict == "agrees"


@pytest.mark.parametrize(
    ("x", "values"),
    [([0.1, 0.1, 0.1], [1.0, 2.0, 3.0]), ([0.1, 0.2], [1.0, 2.0]), ([0.1, 0.2, 0.4], [1, -1, 0])],
)
def test_too_few_usable_runs_or_settings_is_undetermined(x, values):
    dep = fit_dependence(x, values, predicted=1.0)
    assert dep.verdict == "undetermined"
    assert math.isnan(dep.slope)


def test_the_dependence_table_fails_a_sweep_whose_parameter_does_not_scale():
    rows = []
    for lr in (0.05, 0.1, 0.2, 0.4):
        for seed in range(2):
            p = 0.2 * lr**0.3 * (1.01 if seed else 0.99)  # not proportional to lr
            q = 0.5 * lr * (1.01 if seed else 0.99)  # proportional
            params = {"inv_tau_h": p, "inv_tau_h.low": 0.95 * p, "inv_tau_h.high": 1.05 * p}
            params |= {"inv_tau_y": q, "inv_tau_y.low": 0.95 * q, "inv_tau_y.high": 1.05 * q}
            rows.append(_row("mse", lr, seed, "holds", **params))
    deps = dependence_table(_runs(rows)).set_index("param")
    assert deps.loc["inv_tau_h", "verdict"] == "disagrees"
    assert deps.loc["inv_tau_y", "verdict"] == "agrees"
    assert deps.loc["inv_tau_h", "line"] == "loss=mse"


def test_failed_fits_do_not_enter_a_dependence():
    rows = [
        _row(
            "mse",
            lr,
            0,
            "fails",
            **{"inv_tau_h": lr, "inv_tau_h.low": lr / 2, "inv_tau_h.high": 2 * lr},
        )
        for lr in (0.1, 0.2, 0.4)
    ]
    assert dependence_table(_runs(rows)).empty


# ---------------------------------------------------------------------------- the runner
_TINY = AtlasPlan(
    "atlas",
    "smoke",
    {"epochs": 12, "record_every": 2, "width": 8},
    (Block("core", {"loss": ("mse",), "lr": (0.2, 0.4)}),),
    seeds=1,
)


def test_a_second_call_does_nothing_new_and_a_new_engine_redoes_only_the_confrontations(
    tmp_path, monkeypatch
):
    out = tmp_path / "atlas"
    first = atlas_module(out=out, plan=_TINY)
    assert first.attrs["atlas"]["runs_now"] == 2
    assert first.attrs["atlas"]["confronted_now"] == 2
    assert set(first["theory"]) == {"alignment", "hadamard", "lesde", "ntk_collapse"}
    assert (first["n_runs"] == 1).all()
    # a theory that could not be confronted says why, with the cell's own note
    ntk = first[first["theory"] == "ntk_collapse"].iloc[0]
    assert ntk["verdict"] == "missing" and "record_ntk" in ntk["reason"]

    again = atlas_module(out=out, plan=_TINY)
    assert again.attrs["atlas"]["runs_now"] == 0
    assert again.attrs["atlas"]["confronted_now"] == 0
    pd.testing.assert_frame_equal(first, again)

    module = importlib.import_module("ncdynamics.experiments.atlas")
    monkeypatch.setattr(module, "engine_key", lambda: "another-engine")
    redone = atlas_module(out=out, plan=_TINY)
    assert redone.attrs["atlas"]["runs_now"] == 0
    assert redone.attrs["atlas"]["confronted_now"] == 2

    found = read_atlas(out)
    assert len(found["cells"]) == 8 and len(found["runs"]) == 8
    assert (out / "cells.csv").is_file() and (out / "dependence.csv").is_file()


def test_the_smoke_plan_stays_small():
    plan = PLANS["smoke"]
    n_cells = sum(math.prod(len(v) for v in b.axes.values()) for b in plan.blocks)
    assert n_cells * plan.seeds <= 16


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"preset": "huge"}, ValueError, "`preset` must be one of"),
        ({"seeds": 0}, ValueError, "`seeds` == 0, must be >= 1"),
        ({"retries": -1}, ValueError, "`retries` == -1"),
        (
            {"plan": AtlasPlan("atlas", "smoke", {}, (Block("b", {"colour": (1, 2)}),), 1)},
            ValueError,
            "axis 'colour' is not an atlas axis",
        ),
        (
            {"plan": AtlasPlan("atlas", "smoke", {}, (Block("b", {}),), 1)},
            ValueError,
            "block 'b' must vary at least one axis",
        ),
        (
            {"plan": AtlasPlan("atlas", "smoke", {}, (Block("b", {"lr": ()}),), 1)},
            ValueError,
            "axis 'lr' must have values",
        ),
        (
            {"plan": AtlasPlan("atlas", "smoke", {}, (), 1)},
            ValueError,
            "`plan.blocks` must hold at least one block",
        ),
        (
            {"plan": AtlasPlan("nope", "smoke", {}, (Block("b", {"lr": (0.1,)}),), 1)},
            ValueError,
            "`experiment` must be one of",
        ),
        (
            {
                "plan": AtlasPlan(
                    "atlas", "smoke", {"lr": -1.0}, (Block("b", {"loss": ("mse",)}),), 1
                )
            },
            ValueError,
            "`lr`",
        ),
    ],
)
def test_bad_input_is_refused_in_one_line_before_anything_runs(tmp_path, kwargs, error, match):
    with pytest.raises(error, match=match) as info:
        atlas_module(out=tmp_path / "a", **kwargs)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "a").exists()


def test_an_out_that_holds_something_else_or_another_plan_is_refused(tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(FileExistsError, match="not a directory"):
        atlas_module(out=tmp_path / "file", plan=_TINY)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "mine.txt").write_text("keep")
    with pytest.raises(FileExistsError, match="not an atlas directory"):
        atlas_module(out=tmp_path / "dir", plan=_TINY)
    assert (tmp_path / "dir" / "mine.txt").read_text() == "keep"


def test_the_cell_refuses_more_classes_or_samples_than_the_data_has():
    with pytest.raises(ValueError, match="`n_classes` must be at most the 10 classes"):
        cell_data(AtlasCellConfig(n_classes=11))
    with pytest.raises(ValueError, match="`train_per_class` must be at most"):
        cell_data(AtlasCellConfig(train_per_class=1000, probe_per_class=2))


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"optimizer": "lbfgs"}, "`optimizer` must be one of"),
        ({"init_scale": 0.0}, "`init_scale`"),
        ({"probe_per_class": 40, "train_per_class": 32}, "`probe_per_class` must be at most"),
        ({"streams": {"net": {}}}, "option `streams` is derived"),
    ],
)
def test_bad_cell_options_are_refused_when_the_config_is_built(options, match):
    with pytest.raises((ValueError, TypeError), match=match):
        AtlasCellConfig(**options)


def test_the_cell_states_its_regime_settings():
    gd = AtlasCellConfig(optimizer="gd", n_classes=4, train_per_class=32)
    assert gd.streams["net"]["batch_size"] == 128  # full batch
    assert gd.streams["net"]["momentum"] == 0.0
    mom = AtlasCellConfig(optimizer="momentum", momentum=0.8)
    assert mom.streams["net"]["momentum"] == 0.8
    adam = AtlasCellConfig(optimizer="adam")
    assert adam.streams["net"]["optimizer"] == "adam" and "momentum" not in adam.streams["net"]


def test_a_theory_that_holds_in_a_window_reports_that_windows_parameters():
    from ncdynamics.experiments.atlas import _entry_row
    from ncdynamics.experiments.compare import CompareEntry
    from ncdynamics.experiments.windows import WindowFit
    from ncdynamics.theories.verdict import Verdict

    windows = [
        WindowFit(0, 100, 20, Verdict("fails", "no"), {"tau": 9.0}, {"tau": (8.0, 10.0)}),
        WindowFit(100, 300, 40, Verdict("holds", "yes"), {"tau": 2.0}, {"tau": (1.5, 2.5)}),
        WindowFit(200, 300, 20, Verdict("holds", "yes"), {"tau": 3.0}, {"tau": (2.0, 4.0)}),
    ]
    entry = CompareEntry(
        "ntk_collapse", "net/", Verdict("holds in a window", "w", (100, 300)), windows=windows
    )
    row = _entry_row(entry)
    assert row["params.tau"] == 2.0 and (row["params.tau.low"], row["params.tau.high"]) == (
        1.5,
        2.5,
    )
    assert row["params_from"] == "window 100-300"
    plain = _entry_row(CompareEntry("ntk_collapse", "net/", Verdict("out of regime", "x")))
    assert "params.tau" not in plain and plain["params_from"] == ""


def test_a_stream_judged_on_a_window_reports_that_windows_parameters():
    """A stream out of regime as a whole gets the verdict of the window it was tested on
    (``fails`` here, window named): its parameters are that window's, so the cell's value
    counts the fit the data determined, as for ``holds in a window``."""
    from ncdynamics.experiments.atlas import _entry_row
    from ncdynamics.experiments.compare import CompareEntry
    from ncdynamics.experiments.windows import WindowFit
    from ncdynamics.theories.verdict import Verdict

    windows = [
        WindowFit(0, 100, 20, Verdict("out of regime", "off"), {}, {}),
        WindowFit(100, 300, 40, Verdict("fails", "no"), {"tau": 2.0}, {"tau": (1.5, 2.5)}),
        WindowFit(200, 300, 20, Verdict("fails", "no"), {"tau": 3.0}, {"tau": (2.0, 4.0)}),
    ]
    entry = CompareEntry("ntk_collapse", "net/", Verdict("fails", "w", (100, 300)), windows=windows)
    row = _entry_row(entry)
    assert (row["params.tau"], row["params.tau.low"], row["params.tau.high"]) == (2.0, 1.5, 2.5)
    assert row["params_from"] == "window 100-300"


def test_a_cell_that_two_blocks_ran_counts_once_per_seed():
    rows = [{**_row("mse", 0.1, 0, "holds"), "block": b} for b in ("lr", "init")]
    rows.append({**_row("mse", 0.1, 1, "fails"), "block": "lr"})
    cell = aggregate_cells(_runs(rows)).iloc[0]
    assert cell["n_runs"] == 2 and cell["share.holds"] == 0.5


def test_the_cnn_base_model_trains_a_cell_and_records_for_every_theory(tmp_path):
    from ncdynamics import experiments

    run = experiments.run(
        "atlas", "smoke", tmp_path / "cnn", model="cnn", epochs=2, width=8, progress=False
    )
    assert run.state == "completed"
    assert "net.class_means_logits" in run.array_names()
    assert "net/pair_a" in run.metrics_wide().columns


def test_the_cnn_base_model_needs_square_images():
    import torch

    from ncdynamics.experiments.atlas_cell import BASE_MODELS

    with pytest.raises(ValueError, match="model 'cnn' needs square one-channel images"):
        BASE_MODELS["cnn"](10, 4, AtlasCellConfig(model="cnn"), torch.Generator())
