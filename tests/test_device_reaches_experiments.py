"""The device chosen for a run reaches every network an experiment trains.

On a machine without CUDA the only device is the CPU, so this test checks the plumbing rather
than a second device: while each experiment's smoke preset runs with ``device="cpu"``, a global
forward hook records the device of every module's parameters and inputs, and a spy counts the
calls of :func:`ncdynamics.training.current_device`. An experiment that runs a network must ask
for the device, and every forward must run on it. The batched LE-SDE LeNets run functional
forwards, so their trainer's steps are watched too. An experiment that declares
``uses_device=False`` (NumPy) must run no network, and every other one must be seen running
one, so no experiment passes because nothing was observed. The ``gpu`` test repeats this on
CUDA. (That a spawned trial worker inherits the chosen device is tested in
``tests/training/test_trials.py``.)
"""

from __future__ import annotations

import pytest
import torch

from ncdynamics import experiments
from ncdynamics.theories.lesde.trials import BatchedTrainer
from ncdynamics.training import devices

THEORIES = ("alignment", "hadamard", "lesde", "ntk_collapse", "truncation", "demo")


class _Spy:
    def __init__(self, inner):
        self.inner, self.calls = inner, 0

    def get(self):
        self.calls += 1
        return self.inner.get()

    def set(self, value):
        return self.inner.set(value)

    def reset(self, token):
        return self.inner.reset(token)


def _specs(theory):
    return sorted(
        (
            s
            for s in experiments.list_experiments()
            if s.name == theory or s.name.startswith(f"{theory}.")
        ),
        key=lambda s: s.name,
    )


def _watch_batched_lenets(monkeypatch, seen: list[set[str]]) -> None:
    """Record the devices of the batched LeNet trainer's steps (LE-SDE trials), which run
    functional forwards that no module hook sees: the inputs and every stacked parameter."""
    step = BatchedTrainer.step

    def watched(self, x, y):
        seen[0].add(x.device.type)
        seen[0].update(p.device.type for p in self._params.values())
        return step(self, x, y)

    monkeypatch.setattr(BatchedTrainer, "step", watched)


def _check(theory, tmp_path, monkeypatch, device):
    spy = _Spy(devices._CURRENT)
    monkeypatch.setattr(devices, "_CURRENT", spy)
    current: list[set[str]] = [set()]  # the devices seen by the experiment running now
    _watch_batched_lenets(monkeypatch, current)

    def hook(module, args):
        for p in module.parameters(recurse=False):
            current[0].add(p.device.type)
        for a in args:
            if isinstance(a, torch.Tensor):
                current[0].add(a.device.type)

    problems = []
    for spec in _specs(theory):
        name = spec.name
        seen = current[0] = set()
        before = spy.calls
        handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
        try:
            experiments.run(name, "smoke", tmp_path / name, device=device, progress=False)
        finally:
            handle.remove()
        # the declaration is checked both ways: an experiment that says it trains on the
        # device must be seen doing so, and one that says it computes in NumPy must not
        if not seen and spec.uses_device:
            problems.append(f"{name} trains no network that the test could see")
        if seen and not spec.uses_device:
            problems.append(f"{name} declares uses_device=False but ran a network")
        if seen and spy.calls == before:
            problems.append(f"{name} runs networks but never asks for the device")
        if seen - {torch.device(device).type}:
            problems.append(f"{name} ran forwards on {sorted(seen)}, not {device}")
    assert not problems, problems


@pytest.mark.parametrize("theory", THEORIES)
def test_every_network_of_every_experiment_runs_on_the_chosen_device(theory, tmp_path, monkeypatch):
    _check(theory, tmp_path, monkeypatch, "cpu")


@pytest.mark.gpu
@pytest.mark.parametrize("theory", THEORIES)
def test_every_network_runs_on_cuda(theory, tmp_path, monkeypatch):
    _check(theory, tmp_path, monkeypatch, "cuda")


def test_a_numpy_experiment_records_the_cpu_whatever_device_was_asked(tmp_path, monkeypatch):
    # pretend CUDA was asked for and resolved: hadamard computes in NumPy, so its run must not
    # claim to have run on CUDA
    monkeypatch.setattr(devices, "resolve_device", lambda device: torch.device("cuda"))
    run = experiments.run("hadamard.fig1", "smoke", tmp_path / "h", device="cuda", progress=False)
    assert run.status["device"] == "cpu"
    assert run.summary["provenance"]["device"] == "cpu"
