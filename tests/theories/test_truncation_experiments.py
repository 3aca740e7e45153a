"""Registration and smoke runs of the truncation experiments."""

import numpy as np
import pytest

from ncdynamics import runs
from ncdynamics.theories import truncation
from ncdynamics.theories.experiment import config_to_dict
from ncdynamics.theories.truncation.experiments import EXPERIMENTS

NAMES = [f"truncation.e{i}" for i in range(1, 9)]
SPECS = {s.name: s for s in EXPERIMENTS}


def run(name, preset, *, out, seed, progress=False):
    """Run one of our experiments without the registry (which imports every theory)."""
    spec = SPECS[name]
    config = spec.make_config(preset)
    r = runs.create(out, config=config_to_dict(config), seed=seed, experiment=name, preset=preset)
    spec.run(config, r, seed=seed, progress=progress)
    r.mark_completed()
    return r


def test_registry_discovers_our_experiments():
    from ncdynamics.experiments._registry import list_experiments

    registered = {s.name for s in list_experiments()}
    assert set(NAMES) <= registered


def test_experiments_have_three_valid_presets():
    assert [s.name for s in EXPERIMENTS] == NAMES
    for spec in EXPERIMENTS:
        assert set(spec.presets) == {"smoke", "cpu", "paper"}
        for preset in ("smoke", "cpu", "paper"):
            spec.make_config(preset)


def test_public_names_resolve():
    for name in truncation.__all__:
        assert hasattr(truncation, name), name


@pytest.mark.parametrize("name", ["truncation.e2", "truncation.e7"])
def test_smoke_run_writes_summary_claims_and_figure(tmp_path, name):
    r = run(name, "smoke", out=tmp_path / "run", seed=0, progress=False)
    summary = r.summary
    assert summary["claims"]
    assert all(isinstance(c["held"], bool) for c in summary["claims"])
    assert r.figures()
    assert not r.metrics.empty


def test_smoke_run_is_reproducible(tmp_path):
    a = run("truncation.e2", "smoke", out=tmp_path / "a", seed=3, progress=False)
    b = run("truncation.e2", "smoke", out=tmp_path / "b", seed=3, progress=False)
    assert a.summary["event_times"] == b.summary["event_times"]
    np.testing.assert_array_equal(a.metrics["value"].to_numpy(), b.metrics["value"].to_numpy())


def test_unknown_override_is_rejected():
    with pytest.raises(ValueError, match="unknown option"):
        SPECS["truncation.e3"].make_config("smoke", {"not_a_field": 1})
