"""LE-SDE on CIFAR-10 (issue 19 item 4): the CIFAR experiments and the paper presets.

The CIFAR runs read small CIFAR-format batch files that the tests write (tests/cifar_format.py);
nothing is downloaded.
"""

import json

import numpy as np
import pytest

from cifar_format import py2_pickle
from ncdynamics import runs
from ncdynamics.theories.experiment import config_to_dict
from ncdynamics.theories.lesde.experiments import EXPERIMENTS
from ncdynamics.theories.lesde.experiments.geomnist_trials import load_data, trials_settings

SPECS = {s.name: s for s in EXPERIMENTS}
PER_CLASS = {"train": 12, "test": 5}  # images of each of the ten classes per split


def _cifar_dir(tmp_path, rng):
    base = tmp_path / "cifar-10-batches-py"
    base.mkdir()
    for i in range(1, 6):
        labels = np.repeat(np.arange(10), PER_CLASS["train"] // 5 + (i <= PER_CLASS["train"] % 5))
        # class c is brighter in channel c % 3: learnable, like the real classes
        data = rng.integers(0, 120, (labels.size, 3, 32, 32)).astype(np.uint8)
        for c in range(10):
            data[labels == c, c % 3] += 120
        entry = {b"data": data.reshape(labels.size, -1), b"labels": labels.tolist()}
        (base / f"data_batch_{i}").write_bytes(py2_pickle(entry))
    labels = np.repeat(np.arange(10), PER_CLASS["test"])
    data = rng.integers(0, 256, (labels.size, 3072)).astype(np.uint8)
    (base / "test_batch").write_bytes(py2_pickle({b"data": data, b"labels": labels.tolist()}))
    return tmp_path


SMALL = {
    "download": False,
    "n_train_per_class": 8,
    "n_test_per_class": 4,
    "n_trials": 2,
    "n_iter": 90,
    "eval_every": 30,
    "val_subset": 12,
}


def _run(tmp_path, name, overrides):
    spec = SPECS[name]
    cfg = spec.make_config("cpu", overrides)
    run = runs.create(
        tmp_path / name, config=config_to_dict(cfg), seed=0, experiment=name, preset="cpu"
    )
    spec.run(cfg, run, seed=0, progress=False)
    run.mark_completed()
    return json.loads((run.path / "summary.json").read_text())


def test_cifar_data_are_three_classes_of_rgb_images_in_minus_one_one(tmp_path, rng):
    root = _cifar_dir(tmp_path, rng)
    cfg = trials_settings(
        SPECS["lesde.fig1_cifar"].make_config("cpu", {"root": str(root), **SMALL})
    )
    ds = load_data(cfg, 0.0, seed=3)
    assert ds.x_train.shape == (3 * 8, 3, 32, 32) and ds.x_test.shape == (3 * 4, 3, 32, 32)
    assert np.bincount(ds.y_train).tolist() == [8, 8, 8] and ds.num_classes == 3
    assert ds.x_train.dtype == np.float32
    assert -1.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0 and ds.x_train.min() < -0.9
    again = load_data(cfg, 0.0, seed=3)
    np.testing.assert_array_equal(ds.x_train, again.x_train)


@pytest.mark.parametrize("name", ["lesde.fig1_cifar", "lesde.fig3_cifar", "lesde.fig5_cifar"])
def test_cifar_experiment_runs_on_cifar_format_files(tmp_path, rng, name):
    root = _cifar_dir(tmp_path, rng)
    extra = {"window": 21} if name != "lesde.fig1_cifar" else {"n_snapshots": 5}
    if name == "lesde.fig3_cifar":
        extra.update(probe_per_class=3, sources_per_class=1, elasticity_nets=1)
    if name == "lesde.fig5_cifar":
        extra.update(n_runs=10, tail=30)
    summary = _run(tmp_path, name, {"root": str(root), **SMALL, **extra})
    for record in summary["claims"]:
        assert record["parts"] and record["held"] == all(p["held"] for p in record["parts"])
    assert any("CIFAR-10" in record["claim"] for record in summary["claims"])


@pytest.mark.parametrize(
    ("overrides", "p_err", "match"),
    [
        ({"n_train_per_class": 13}, 0.0, "`n_train_per_class` must be at most the 12"),
        ({"n_test_per_class": 6}, 0.0, "`n_test_per_class` must be at most the 5"),
        ({}, 0.3, "`p_err` must be 0 on dataset 'cifar10'"),
    ],
)
def test_cifar_bad_settings_are_one_line_errors(tmp_path, rng, overrides, p_err, match):
    root = _cifar_dir(tmp_path, rng)
    cfg = SPECS["lesde.fig3_cifar"].make_config("cpu", {"root": str(root), **SMALL, **overrides})
    with pytest.raises(ValueError, match=match):
        load_data(trials_settings(cfg), p_err, seed=0)


def test_cifar_without_files_says_where_they_were_looked_for(tmp_path):
    cfg = SPECS["lesde.fig1_cifar"].make_config("cpu", {"root": str(tmp_path), **SMALL})
    with pytest.raises(FileNotFoundError, match="download=True"):
        load_data(trials_settings(cfg), 0.0, seed=0)


def test_fig4_refuses_cifar(tmp_path):
    spec = SPECS["lesde.fig4"]
    cfg = spec.make_config("smoke", {"dataset": "cifar10", "root": str(tmp_path)})
    run = runs.create(tmp_path / "r", config=config_to_dict(cfg), seed=0, experiment="lesde.fig4")
    with pytest.raises(ValueError, match="`dataset` must be 'geomnist' for lesde.fig4"):
        spec.run(cfg, run, seed=0, progress=False)


# --- paper presets = the paper's stated setup ([1], Sec. 4.1, App. D) ----------------------


@pytest.mark.parametrize("name", ["lesde.fig1_cifar", "lesde.fig3_cifar", "lesde.fig5_cifar"])
def test_cifar_paper_preset_is_the_papers_cifar_setup(name):
    cfg = SPECS[name].make_config("paper")
    assert cfg.dataset == "cifar10" and cfg.download and cfg.root
    assert (cfg.n_train_per_class, cfg.n_test_per_class) == (5000, 1000)
    assert (cfg.n_iter, cfg.lr, cfg.n_trials) == (300_000, 0.005, 100)
    if name == "lesde.fig3_cifar":
        assert cfg.window == 551
    else:
        assert cfg.window == 21


@pytest.mark.parametrize("name", ["lesde.fig1", "lesde.fig3", "lesde.fig4", "lesde.fig5"])
def test_geomnist_paper_preset_is_the_papers_geomnist_setup(name):
    cfg = SPECS[name].make_config("paper")
    assert cfg.dataset == "geomnist"
    assert (cfg.n_train_per_class, cfg.n_test_per_class) == (500, 500)
    assert (cfg.n_iter, cfg.lr, cfg.n_trials) == (100_000, 0.005, 100)
    if name == "lesde.fig3":
        # the authors' notebook's window (issue 29); the text's 191 is --set window=191
        assert cfg.window == 151
    if name in ("lesde.fig1", "lesde.fig5"):
        assert cfg.window == 21
    if name == "lesde.fig4":
        assert set(np.round(np.arange(1, 9) / 10, 6)) <= set(np.round(cfg.p_errs, 6))
        assert cfg.tail == 1000
