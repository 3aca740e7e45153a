"""``benchmarks/bench_ntk.py`` runs its device path on the CPU, writes well-formed records and
skips the neural-tangents peer with a message when it cannot run (no timing is checked)."""

import argparse
import importlib.util
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "bench_ntk.py"
KEYS = {"benchmark", "variant", "size", "n", "median_s", "min_s", "max_s", "rounds", "clock"}
KEYS |= {"baseline", "ratio", "ratio_min", "ratio_max", "host", "torch", "time", "loadavg"}


@pytest.fixture
def bench(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH.parent))  # its shared `_timing` module
    monkeypatch.delenv("NCDYN_BENCH_RESULTS", raising=False)
    spec = importlib.util.spec_from_file_location("bench_ntk_under_test", BENCH)
    mod = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, mod)  # its dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


def _args(device="cpu"):
    return argparse.Namespace(
        device=device,
        rounds=1,
        quick=True,
        mlp_baseline=False,
        baseline_max_gb=16.0,
        skip_generic=True,
        memory=False,
    )


def test_user_cnn_case_runs_with_the_device_argument_and_records_results(bench, capsys):
    model, x = bench.build("usercnn", 4, device="cpu")
    assert x.shape == (4, 1, 8, 8) and x.device.type == "cpu"
    assert next(model.parameters()).device.type == "cpu"
    bench.run_case("usercnn", 4, _args("cpu"))
    out = capsys.readouterr().out
    assert "first / warm" in out and "trace / floor" in out
    recs = bench.results()
    assert recs and all(KEYS <= set(r) for r in recs)
    assert all(r["device"] == "cpu" and r["min_s"] <= r["median_s"] <= r["max_s"] for r in recs)
    full = [r for r in recs if r["benchmark"] == "ntk-usercnn" and r["variant"] == "ours full"]
    assert len(full) == 1 and full[0]["baseline"] == "baseline full"
    assert full[0]["max_rel_diff"] < 1e-5  # float32 kernel against the torch.func recipe
    assert full[0]["size"] == "N=4" and full[0]["ratio_min"] <= full[0]["ratio_max"]


def test_peer_is_skipped_with_a_message_when_missing(bench, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "jax", None)  # an import of it raises ImportError
    monkeypatch.setitem(sys.modules, "neural_tangents", None)
    msg = bench.load_peer()
    assert isinstance(msg, str) and "skipped" in msg and "ntk-peer" in msg
    bench.run_peer(_args("cpu"))
    assert "neural-tangents comparison skipped" in capsys.readouterr().out
    assert bench.results() == []


def test_peer_is_skipped_on_a_gpu_device(bench, capsys):
    bench.run_peer(_args("cuda"))
    assert "for the CPU only" in capsys.readouterr().out


def test_dense_columns_leave_out_only_linear_weights(bench):
    model, _ = bench.build("usercnn", 2, device="cpu")
    head = model.head.weight.numel()  # (10, 128): its Gram factors into u.u and g.g
    assert bench.dense_columns(model) == bench.n_params(model) - head == 4906


def test_symmetric_products_agree_with_a_plain_product(bench):
    import numpy as np
    import torch

    a_t = torch.randn(7, 5, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    ways = bench.symmetric_products(a_t, "cpu")
    assert set(ways) == {"gemm", "syrk"}
    expected = (a_t.T @ a_t).numpy()
    for name, way in ways.items():
        got = np.asarray(way())
        assert np.allclose(np.triu(got), np.triu(expected), rtol=1e-12, atol=0), name


def test_gram_floors_are_recorded_against_ours_and_the_baseline(bench):
    bench.run_case("usercnn", 4, _args("cpu"))
    floors = {
        (r["variant"], r["baseline"])
        for r in bench.results()
        if r["benchmark"] == "ntk-usercnn-floor"
    }
    assert ("passes + Gram floor, trace", "ours trace") in floors
    assert ("passes + Gram floor, full", "ours full") in floors
    assert ("passes + Gram floor, full", "baseline full") in floors


def test_scaling_case_records_each_mode_at_every_size(bench, capsys):
    bench.run_scaling(_args("cpu"))
    out = capsys.readouterr().out
    assert "growth exponent" in out
    recs = [r for r in bench.results() if r["benchmark"] == "ntk-scaling"]
    assert sorted((r["variant"], r["n"]) for r in recs) == [
        ("ours full", 25),
        ("ours full", 50),
        ("ours trace", 25),
        ("ours trace", 50),
    ]
