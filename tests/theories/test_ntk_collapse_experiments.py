"""The ntk_collapse experiments: registration, theory demos' claims at the smoke preset."""

import numpy as np
import pytest

from ncdynamics.experiments._registry import get, run
from ncdynamics.theories.ntk_collapse.estimate import block_values_over_time, predictions_over_time

THEORY = ("phases", "invariant", "zero-invariant", "negative-invariant", "equal-bias")
TRAINING = ("fig1", "fig2", "fig12")


def test_all_experiments_are_registered_with_their_presets():
    for short in THEORY:
        assert set(get(f"ntk_collapse.{short}").presets) == {"smoke", "cpu", "paper"}
    for short in TRAINING:  # the trainings also run at the paper's scale on a GPU
        assert set(get(f"ntk_collapse.{short}").presets) == {"smoke", "cpu", "paper", "gpu"}
    assert get("ntk_collapse.fig12").make_config("cpu").loss == "cross-entropy"
    assert get("ntk_collapse.fig2").make_config("paper").epochs == 400


@pytest.mark.parametrize("short", THEORY)
def test_theory_demo_smoke_reproduces_its_claims(short, tmp_path):
    r = run(f"ntk_collapse.{short}", preset="smoke", out=tmp_path / short, progress=False)
    claims = r.summary["claims"]
    assert claims
    for c in claims:
        expected = "as printed" not in c["claim"]  # the paper's theta is the erratum
        assert c["held"] is expected, c
    assert r.figures()


@pytest.mark.slow
@pytest.mark.parametrize("short", TRAINING)
def test_training_smoke_writes_summary_and_figures(short, tmp_path):
    r = run(f"ntk_collapse.{short}", preset="smoke", out=tmp_path / short, progress=False)
    assert r.summary["claims"]
    assert r.figures()
    prefix = "" if short == "fig1" else "run00/"
    blocks = block_values_over_time(r, prefix)
    assert {"ntk_kappa_d", "ntk_kappa_c", "ntk_kappa_n", "alpha"} <= set(blocks.columns)
    pred = predictions_over_time(r, prefix, n_per_class=3)
    assert len(pred) == len(blocks)
    assert np.all(pred["residual_fraction"] >= 0)
    # class means of the logits are recorded, so the logit theories can be confronted too
    assert f"{prefix.replace('/', '.')}class_means_logits" in r.array_names()


def test_sweep_resumes_from_its_finished_trainings(tmp_path, monkeypatch):
    """A killed Fig. 2 sweep keeps each finished training (a checkpoint per trial), so
    `--resume` trains only the others and the result is the uninterrupted one."""
    from ncdynamics.theories.ntk_collapse.experiments import fig2_invariant_vs_collapse as f2

    opts = {"epochs": 1, "record_every": 1, "kernel_every": 1}
    whole = run("ntk_collapse.fig2", preset="smoke", out=tmp_path / "whole", progress=False, **opts)
    real, calls = f2.train_one, []

    def dies_on_the_second(cfg, init, lr, seed, *a):
        calls.append(lr)
        if len(calls) == 2:
            raise KeyboardInterrupt  # the process killed in the middle of the sweep
        return real(cfg, init, lr, seed, *a)

    monkeypatch.setattr(f2, "train_one", dies_on_the_second)
    with pytest.raises(KeyboardInterrupt):
        run("ntk_collapse.fig2", preset="smoke", out=tmp_path / "cut", progress=False, **opts)
    calls.clear()
    monkeypatch.setattr(f2, "train_one", lambda *a: (calls.append(a[2]), real(*a))[1])
    resumed = run(
        "ntk_collapse.fig2", preset="smoke", out=tmp_path / "cut", resume=True,
        progress=False, **opts,
    )  # fmt: skip
    lrs = get("ntk_collapse.fig2").make_config("smoke").lrs
    assert calls == [lrs[1]]  # only the training that had not finished
    assert resumed.state == "completed"
    assert [r["lr"] for r in resumed.summary["runs"]] == list(lrs)
    for a, b in zip(whole.summary["runs"], resumed.summary["runs"], strict=True):
        assert a["nc/nc3"] == b["nc/nc3"] and a["train/accuracy"] == b["train/accuracy"]


def test_training_presets_follow_the_authors_metric_estimator_and_frequency():
    # mselezniova/ntk_collapse: EPOCH_STEP = 1 (metrics every epoch), half-split kernel values
    for short in TRAINING:
        spec = get(f"ntk_collapse.{short}")
        paper = spec.make_config("paper")
        assert (paper.record_every, paper.kernel_every) == (1, 1)
        for preset in ("smoke", "cpu", "paper"):
            assert spec.make_config(preset).kernel_estimator == "half-split"


@pytest.mark.slow
def test_fig1_smoke_records_the_block_residual_it_judges(tmp_path):
    r = run("ntk_collapse.fig1", preset="smoke", out=tmp_path / "fig1", progress=False)
    res = r.summary["block_residual"]
    assert set(res) == {"logits", "features"} and all(np.isfinite(v) for v in res.values())
    parts = {p["part"] for c in r.summary["claims"] for p in c["parts"]}
    assert {
        "feature kernel: close to its block fit",
        "logit kernel: close to its block fit",
    } <= parts
