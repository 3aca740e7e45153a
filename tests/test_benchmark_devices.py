"""The device path of the torch benchmarks (``--device``), exercised on the CPU at tiny
sizes, so that a GPU run takes a path that is tested. No timing is checked."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def bench_lesde(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    monkeypatch.delenv("NCDYN_BENCH_RESULTS", raising=False)
    path = ROOT / "benchmarks" / "bench_lesde.py"
    spec = importlib.util.spec_from_file_location("_bench_lesde", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    threads = torch.get_num_threads()
    yield module
    torch.set_num_threads(threads)


def test_sde_benchmark_runs_its_torch_variants_on_an_explicit_device(bench_lesde, capsys):
    bench_lesde.bench_sde(4, 1, 2, torch.device("cpu"))
    out = capsys.readouterr().out
    assert "particles float32" in out and "torch float32 loop" in out and "on cpu" in out


def test_trials_benchmark_runs_on_an_explicit_device(bench_lesde, capsys):
    bench_lesde.bench_trials(1, 2, rounds=1, threads=1, device=torch.device("cpu"))
    out = capsys.readouterr().out
    assert "fused" in out and "loop" in out and "cpu" in out
