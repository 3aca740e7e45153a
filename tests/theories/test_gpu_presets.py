"""The `gpu` presets: the paper's settings at paper compute scale on the data a device holds."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ncdynamics import cli, experiments
from ncdynamics.theories.experiment import PRESETS, config_to_dict

DOCS = Path(__file__).resolve().parents[2] / "docs" / "theories"

#: The experiments whose `paper` preset needs a GPU (issue 33).
GPU_EXPERIMENTS = {
    "ntk_collapse.fig1",
    "ntk_collapse.fig2",
    "ntk_collapse.fig12",
    "alignment.universality",
    "alignment.digits",
    "alignment.depth",
    "alignment.readings",
    "lesde.fig3",
    "lesde.fig4",
    "lesde.fig5",
}
#: What a `gpu` preset may change from `paper`: the data set (full MNIST cannot reach a device
#: machine) and how many trial processes share the GPU.
MAY_DIFFER = {"dataset", "workers"}


def _differences(name: str) -> dict[str, tuple[object, object]]:
    spec = experiments.get(name)
    paper = config_to_dict(spec.make_config("paper"))
    gpu = config_to_dict(spec.make_config("gpu"))
    return {k: (paper[k], gpu[k]) for k in paper if paper[k] != gpu[k]}


def test_exactly_the_experiments_that_need_a_gpu_declare_a_gpu_preset():
    having = {s.name for s in experiments.list_experiments() if "gpu" in s.presets}
    assert having == GPU_EXPERIMENTS


@pytest.mark.parametrize("name", sorted(GPU_EXPERIMENTS))
def test_gpu_preset_is_the_paper_preset_but_for_the_data_and_the_processes(name):
    diff = _differences(name)
    assert set(diff) <= MAY_DIFFER, diff
    if "dataset" in diff:  # MNIST where the paper used it, as the mnist-5k images
        assert diff["dataset"] == ("mnist", "mnist-5k")


def _gpu_section(theory: str) -> str:
    text = (DOCS / f"{theory}.md").read_text(encoding="utf-8")
    m = re.search(r"^## The `gpu` preset.*?(?=^## |\Z)", text, flags=re.S | re.M)
    assert m, f"docs/theories/{theory}.md has no '## The `gpu` preset' section"
    return m.group(0)


@pytest.mark.parametrize("name", sorted(GPU_EXPERIMENTS))
def test_docs_settings_table_lists_every_difference_from_the_paper(name):
    section = _gpu_section(name.split(".")[0])
    rows = [line for line in section.splitlines() if line.startswith(f"| `{name}`")]
    assert rows, f"no row for {name} in the gpu settings table"
    for field, (_, value) in _differences(name).items():
        if field == "workers":  # parallelism, not a setting of the paper
            continue
        assert any(f"`{field}`" in r and f"`{value}`" in r for r in rows), (name, field, value)


def test_cli_offers_every_preset_and_lacking_ones_are_refused(capsys, tmp_path):
    assert cli._PRESETS == PRESETS
    assert cli.main(["claims", "--run", "gpu", "--only", "hadamard.fig1"]) != 0
    assert "must name experiments with a 'gpu' preset; got ['hadamard.fig1']" in (
        capsys.readouterr().err
    )
    out = str(tmp_path / "r")
    assert cli.main(["run", "hadamard.fig1", "--preset", "gpu", "--out", out, "--no-progress"]) != 0
    assert "must be one of smoke, cpu, paper; got 'gpu'" in capsys.readouterr().err
