import dataclasses

import pytest

from ncdynamics import experiments, report, runs
from ncdynamics.theories.experiment import PRESETS, REQUIRED_PRESETS, ExperimentSpec

NAMES = [s.name for s in experiments.list_experiments()]


def test_registry_lists_the_demo_first_and_every_theory():
    assert NAMES[0] == "demo"
    assert len(NAMES) == len(set(NAMES))


@pytest.mark.parametrize("name", NAMES)
def test_every_experiment_resolves_all_its_presets(name):
    spec = experiments.get(name)
    assert set(REQUIRED_PRESETS) <= set(spec.preset_names) <= set(PRESETS)
    for preset in spec.preset_names:
        config = spec.make_config(preset)
        assert dataclasses.is_dataclass(config)


@pytest.mark.parametrize("name", NAMES)
def test_smoke_preset_runs_and_reports(name, tmp_path):
    run = experiments.run(name, preset="smoke", out=tmp_path / "run", progress=False)
    assert run.state == "completed"
    html = report.write_report(run).read_text()
    assert "<html" in html and "data:image/png;base64" in html
    assert runs.open(tmp_path / "run").state == "completed"


def test_unknown_names_options_and_presets_are_rejected(tmp_path):
    with pytest.raises(ValueError, match="`experiment` must be one of demo"):
        experiments.run("nope")
    with pytest.raises(ValueError, match="unknown option.*'colour'.*known options"):
        experiments.run("demo", out=tmp_path / "a", colour=1)
    with pytest.raises(ValueError, match="`preset` must be one of"):
        experiments.run("demo", preset="huge", out=tmp_path / "b")


def test_spec_requires_the_three_presets_and_allows_only_gpu_beside_them():
    @dataclasses.dataclass(frozen=True)
    class Cfg:
        a: int = 1

    with pytest.raises(ValueError, match="missing \\['paper'\\]"):
        ExperimentSpec("x", "core", "", Cfg, {"smoke": {}, "cpu": {}}, lambda *a, **k: None)
    with pytest.raises(ValueError, match="unknown option"):
        ExperimentSpec(
            "x", "core", "", Cfg, {"smoke": {"b": 1}, "cpu": {}, "paper": {}}, lambda *a, **k: None
        )
    with pytest.raises(ValueError, match="unknown \\['tpu'\\]"):
        ExperimentSpec(
            "x", "core", "", Cfg, {"smoke": {}, "cpu": {}, "paper": {}, "tpu": {}}, print
        )
    spec = ExperimentSpec(
        "x", "core", "", Cfg, {"smoke": {}, "cpu": {}, "paper": {}, "gpu": {"a": 7}}, print
    )
    assert spec.preset_names == ("smoke", "cpu", "paper", "gpu")
    assert spec.make_config("gpu").a == 7


def test_a_preset_the_experiment_lacks_is_refused_before_the_run_directory_exists(tmp_path):
    with pytest.raises(ValueError, match="`preset` of experiment 'demo' must be one of smoke, "):
        experiments.run("demo", preset="gpu", out=tmp_path / "r", progress=False)
    assert not (tmp_path / "r").exists()


def test_failed_experiment_marks_the_run_failed(tmp_path):
    # A valid config that fails while running: MNIST needs a local `root`.
    with pytest.raises(ValueError):
        experiments.run("demo", out=tmp_path / "r", progress=False, dataset="mnist")
    run = runs.open(tmp_path / "r")
    assert run.state == "failed" and "`root` is required" in run.status["error"]
    assert (tmp_path / "r" / "error.txt").exists()


def test_invalid_config_is_refused_before_the_run_directory_exists(tmp_path):
    with pytest.raises(ValueError, match="`dataset` must be one of"):
        experiments.run("demo", out=tmp_path / "r", progress=False, dataset="nope")
    assert not (tmp_path / "r").exists()


def test_config_of_rebuilds_the_typed_config_of_a_run(tmp_path):
    run = experiments.run("demo", out=tmp_path / "r", progress=False, epochs=1, width=8)
    spec, config = experiments.config_of(run)
    assert spec.name == "demo"
    assert config == spec.make_config("smoke", {"epochs": 1, "width": 8})


def test_failure_reason_is_one_line_even_for_a_multi_line_message(tmp_path, monkeypatch):
    from ncdynamics.experiments import _registry

    def boom(config, run, *, seed, progress):
        raise RuntimeError("first line\nsecond line")

    spec = dataclasses.replace(experiments.get("demo"), run=boom)
    monkeypatch.setattr(_registry, "get", lambda name: spec)
    with pytest.raises(RuntimeError):
        experiments.run("demo", out=tmp_path / "r", progress=False)
    assert runs.open(tmp_path / "r").status["error"] == "RuntimeError: first line"


def test_summary_records_what_produced_it(tmp_path):
    run = experiments.run("truncation.e6", "smoke", tmp_path / "r", seed=3, progress=False)
    prov = run.summary["provenance"]
    assert (prov["experiment"], prov["preset"], prov["seed"], prov["device"]) == (
        "truncation.e6",
        "smoke",
        3,
        "cpu",
    )
    assert prov["versions"]["ncdynamics"] and prov["versions"]["ncdynamics_commit"]
