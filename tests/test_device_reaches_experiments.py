"""The device chosen for a run reaches every network an experiment trains.

On a machine without CUDA the only device is the CPU, so this test checks the plumbing rather
than a second device: while each experiment's smoke preset runs with ``device="cpu"``, a global
forward hook records the device of every module's parameters and inputs, and a spy counts the
calls of :func:`ncdynamics.training.current_device`. An experiment that runs a network must ask
for the device, and every forward must run on it. The batched LE-SDE LeNets run functional
forwards, so their trainer's steps are watched too. An experiment that declares
``uses_device=False`` (NumPy) must run no network, and every other one must be seen running
one, so no experiment passes because nothing was observed. The ``gpu`` test repeats this on
CUDA. The smoke presets train in one process, so one experiment is also run with two trial
workers, each of which records the device it was handed and the devices of its forwards
(``tests/training/test_trials.py`` tests :func:`~ncdynamics.training.run_trials` alone).
"""

from __future__ import annotations

import functools
import json
import os
import uuid
from pathlib import Path

import pytest
import torch

from ncdynamics import experiments
from ncdynamics.theories.lesde.trials import BatchedTrainer
from ncdynamics.training import devices

THEORIES = ("alignment", "hadamard", "lesde", "ntk_collapse", "truncation", "demo", "atlas")

_HADAMARD = "the reduced logit ODE and its small-net GD, in NumPy"
_TRUNCATION = "the effective flows and GD on the layer maps, in NumPy and CPU float64 tensors"
_NTK_THEORY = "the block flow (19) and its closed forms, in NumPy"
#: The experiments that train no torch network, each with why: they declare
#: ``uses_device=False`` and record ``cpu`` whatever device was asked. Every other experiment
#: must be seen training on the chosen device.
NUMPY_EXPERIMENTS: dict[str, str] = {
    **{f"hadamard.fig{i}": _HADAMARD for i in range(1, 11)},
    "hadamard.thm8": _HADAMARD,
    "lesde.thm21": "Monte Carlo of the binary LE-SDE, in NumPy",
    "lesde.thm31": "Monte Carlo of the LE-SDE with decaying elasticity, in NumPy",
    **{
        f"ntk_collapse.{n}": _NTK_THEORY
        for n in ("equal-bias", "invariant", "negative-invariant", "phases", "zero-invariant")
    },
    **{f"truncation.e{i}": _TRUNCATION for i in range(1, 9)},
}


def _note_devices(seen: set[str], module: torch.nn.Module, inputs: tuple) -> None:
    """A forward pre-hook's body: add the device types of the module's own parameters and of
    its tensor inputs to ``seen``."""
    seen.update(p.device.type for p in module.parameters(recurse=False))
    seen.update(a.device.type for a in inputs if isinstance(a, torch.Tensor))


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
        _note_devices(current[0], module, args)

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


def test_the_numpy_experiments_are_exactly_those_listed():
    # an experiment that trains a network cannot opt out of the device checks unnoticed
    declared = {s.name for s in experiments.list_experiments() if not s.uses_device}
    assert declared == set(NUMPY_EXPERIMENTS)


def _watched_trial(fn, log_dir, *args):
    """In a trial worker: run the trial, then write the device this process was handed, the
    device current in it and the devices of every forward it ran (module level: pickled)."""
    seen: set[str] = set()

    def hook(module, inputs):
        _note_devices(seen, module, inputs)

    handle = torch.nn.modules.module.register_module_forward_pre_hook(hook)
    try:
        return fn(*args)
    finally:
        handle.remove()
        record = {
            "pid": os.getpid(),
            "chosen": str(devices.chosen_device()),
            "current": str(devices.current_device()),
            "forwards": sorted(seen),
        }
        (Path(log_dir) / f"{uuid.uuid4().hex}.json").write_text(json.dumps(record))


def _check_trial_workers(tmp_path, monkeypatch, device):
    from ncdynamics.theories.alignment.experiments import fig06_xor
    from ncdynamics.training import trials

    log_dir = tmp_path / "trials"
    log_dir.mkdir()
    calls = []

    def run_watched(fn, trial_args, **options):
        calls.append((options.get("workers"), len(trial_args)))
        return trials.run_trials(
            functools.partial(_watched_trial, fn, str(log_dir)), trial_args, **options
        )

    monkeypatch.setattr(fig06_xor, "run_trials", run_watched)
    run = experiments.run(
        "alignment.xor", "smoke", tmp_path / "r", device=device, progress=False, workers=2
    )
    assert calls and all(w == 2 and n >= 2 for w, n in calls)  # a pool of two processes ran
    records = [json.loads(p.read_text()) for p in sorted(log_dir.iterdir())]
    assert len(records) == sum(n for _, n in calls)
    assert os.getpid() not in {r["pid"] for r in records}
    want = str(devices.resolve_device(device))
    assert {r["chosen"] for r in records} == {want}
    assert {r["current"] for r in records} == {want}
    assert all(r["forwards"] for r in records)  # every trial trained a network we saw
    assert {t for r in records for t in r["forwards"]} == {torch.device(want).type}
    assert run.status["device"] == want


def test_trial_workers_train_on_the_chosen_device(tmp_path, monkeypatch):
    _check_trial_workers(tmp_path, monkeypatch, "cpu")


@pytest.mark.gpu
def test_trial_workers_train_on_cuda(tmp_path, monkeypatch):
    _check_trial_workers(tmp_path, monkeypatch, "cuda")
