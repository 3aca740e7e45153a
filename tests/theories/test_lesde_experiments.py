"""Every LE-SDE experiment runs at its smoke preset and writes figures and claims."""

import json

import pytest

from ncdynamics import runs
from ncdynamics.theories.experiment import config_to_dict
from ncdynamics.theories.lesde.experiments import EXPERIMENTS

SPECS = {s.name: s for s in EXPERIMENTS}


def test_names_and_presets():
    assert set(SPECS) == {
        "lesde.fig1",
        "lesde.fig1_cifar",
        "lesde.fig3",
        "lesde.fig3_cifar",
        "lesde.fig4",
        "lesde.fig5",
        "lesde.fig5_cifar",
        "lesde.thm21",
        "lesde.thm31",
    }
    for spec in EXPERIMENTS:
        assert spec.theory == "lesde"
        for preset in ("smoke", "cpu", "paper"):
            spec.make_config(preset)


@pytest.mark.parametrize("name", sorted(SPECS))
def test_smoke_preset_runs(tmp_path, name):
    spec = SPECS[name]
    cfg = spec.make_config("smoke")
    run = runs.create(
        tmp_path / "run", config=config_to_dict(cfg), seed=0, experiment=name, preset="smoke"
    )
    spec.run(cfg, run, seed=0, progress=False)
    run.mark_completed()
    summary = json.loads((run.path / "summary.json").read_text())
    assert summary["claims"]
    for record in summary["claims"]:  # records of ncdynamics.theories.claims
        assert {"claim", "source", "parts", "ours", "held"} <= set(record)
        assert record["parts"] and record["held"] == all(p["held"] for p in record["parts"])
    assert list((run.path / "figures").glob("*.png"))


def test_unknown_option_is_rejected():
    with pytest.raises(ValueError, match="unknown option"):
        SPECS["lesde.fig4"].make_config("smoke", {"n_trails": 3})
