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
