"""Choosing the training device: auto, cpu, cuda, cuda:N."""

from __future__ import annotations

import pytest
import torch

from ncdynamics.training import current_device, resolve_device, use_device


def test_auto_is_cuda_when_present_else_cpu():
    want = "cuda" if torch.cuda.is_available() else "cpu"
    assert resolve_device("auto").type == want
    assert resolve_device(None).type == want
    assert resolve_device(" AUTO ").type == want


def test_cpu_and_bad_spellings():
    assert resolve_device("cpu") == torch.device("cpu")
    assert resolve_device(torch.device("cpu")) == torch.device("cpu")
    for bad in ("tpu", "cuda:x", "", "meta"):
        with pytest.raises(ValueError, match="`device` must be"):
            resolve_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the refusal on a CPU machine")
def test_cuda_is_refused_without_cuda():
    with pytest.raises(ValueError, match="needs CUDA"):
        resolve_device("cuda:0")


def test_use_device_sets_and_restores_the_current_device():
    outer = current_device()
    with use_device("cpu") as dev:
        assert dev == torch.device("cpu") and current_device() == dev
    assert current_device() == outer


#: A quick experiment that trains torch networks on the run's device (a NumPy experiment
#: records ``cpu`` whatever was asked, so it would show nothing here).
TORCH_EXPERIMENT = "alignment.xor"


def test_a_run_records_its_device(tmp_path):
    from ncdynamics import experiments

    assert experiments.get(TORCH_EXPERIMENT).uses_device
    run = experiments.run(TORCH_EXPERIMENT, "smoke", tmp_path / "r", device="cpu", progress=False)
    assert run.status["device"] == "cpu"
    with pytest.raises(ValueError, match="`device` must be"):
        experiments.run("truncation.e1", "smoke", tmp_path / "q", device="gpu", progress=False)
    assert not (tmp_path / "q").exists()  # refused before anything is written


@pytest.mark.gpu
def test_cuda_device_is_current_inside_a_run():
    with use_device("cuda") as dev:
        assert current_device().type == "cuda" and dev.type == "cuda"


def test_a_sweep_passes_its_device_to_every_run_and_checks_the_spelling(tmp_path):
    from ncdynamics import experiments

    assert experiments.get(TORCH_EXPERIMENT).uses_device
    res = experiments.sweep(  # one and two trial workers inside each run
        TORCH_EXPERIMENT, "smoke", tmp_path / "s", grid={"workers": [1, 2]}, device="cpu"
    )
    run_dirs = sorted(p for p in res.path.iterdir() if (p / "status.json").is_file())
    assert len(run_dirs) == 2
    for run_dir in run_dirs:
        assert experiments.read_run(run_dir).status["device"] == "cpu"
    with pytest.raises(ValueError, match="`device` must be"):
        experiments.sweep(
            "truncation.e1", "smoke", tmp_path / "t", grid={"n_seeds": [1]}, device="tpu"
        )
