"""The device chosen for a run reaches every network an experiment trains.

On a machine without CUDA the only device is the CPU, so this test checks the plumbing rather
than a second device: while each experiment's smoke preset runs with ``device="cpu"``, a global
forward hook records the device of every module's parameters and inputs, and a spy counts the
calls of :func:`ncdynamics.training.current_device`. An experiment that runs a network must ask
for the device, and every forward must run on it. The ``gpu`` test repeats this on CUDA.
"""

from __future__ import annotations

import pytest
import torch

from ncdynamics import experiments
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


def _names(theory):
    return sorted(
        s.name
        for s in experiments.list_experiments()
        if s.name == theory or s.name.startswith(f"{theory}.")
    )


def _check(theory, tmp_path, monkeypatch, device):
    spy = _Spy(devices._CURRENT)
    monkeypatch.setattr(devices, "_CURRENT", spy)
    problems = []
    for name in _names(theory):
        seen: set[str] = set()

        def hook(module, args, seen=seen):
            for p in module.parameters(recurse=False):
                seen.add(p.device.type)
            for a in args:
                if isinstance(a, torch.Tensor):
                    seen.add(a.device.type)

        before = spy.calls
        handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
        try:
            experiments.run(name, "smoke", tmp_path / name, device=device, progress=False)
        finally:
            handle.remove()
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
