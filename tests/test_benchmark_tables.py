"""The tables of docs/performance.md are generated from the committed benchmark results.

No timing here: the test regenerates the marked regions from the newest results file in
benchmarks/results/ with benchmarks/make_tables.py and compares them with the page.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _benchmarks import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


make_tables = load_benchmark("make_tables")


def _results() -> dict:
    return json.loads(make_tables.newest_results().read_text(encoding="utf-8"))


def test_docs_tables_match_the_committed_results():
    docs = (ROOT / "docs" / "performance.md").read_text(encoding="utf-8")
    assert docs.count("<!-- bench:table ") >= 5
    assert make_tables.rewrite(docs, _results()) == docs, (
        "docs/performance.md differs from the committed results; run "
        "`python benchmarks/make_tables.py`"
    )


def test_every_record_has_the_documented_fields():
    fields = {
        "benchmark",
        "variant",
        "size",
        "median_s",
        "min_s",
        "max_s",
        "baseline",
        "ratio",
        "device",
        "threads",
        "torch",
        "commit",
    }
    for rec in _results()["records"]:
        assert fields <= rec.keys(), sorted(fields - rec.keys())
        assert rec["min_s"] <= rec["median_s"] <= rec["max_s"]
        if rec["ratio"] is not None:
            assert rec["ratio_min"] <= rec["ratio_max"]


def _results_with(*records: dict) -> dict:
    base = {
        "variant": "v",
        "size": "",
        "median_s": 2.0,
        "min_s": 1.0,
        "max_s": 3.0,
        "rounds": 3,
        "clock": "wall",
        "baseline": None,
        "ratio": None,
        "ratio_min": None,
        "ratio_max": None,
        "device": "cpu",
        "note": "",
        "time": "2026-01-01T00:00:00Z",
        "loadavg": 1.0,
        "host": "h",
        "threads": 1,
        "torch": "2",
        "commit": "abc",
    }
    return {"quick": False, "records": [{**base, **r} for r in records]}


def test_rewrite_replaces_only_marked_regions():
    results = _results_with({"benchmark": "a", "variant": "fast"})
    text = "intro\n<!-- bench:table a -->\nstale | row\n<!-- /bench -->\noutro\n"
    new = make_tables.rewrite(text, results)
    assert new.startswith("intro\n<!-- bench:table a -->\n| variant |")
    assert "stale" not in new and "| fast |" in new and new.endswith("<!-- /bench -->\noutro\n")
    assert make_tables.rewrite(new, results) == new  # idempotent


def test_a_scaling_region_gives_each_variants_growth_exponent():
    results = _results_with(
        {"benchmark": "s", "variant": "quadratic", "n": 100, "median_s": 1.0},
        {"benchmark": "s", "variant": "quadratic", "n": 400, "median_s": 16.0},
        {"benchmark": "s", "variant": "linear", "n": 200, "median_s": 4.0},
        {"benchmark": "s", "variant": "linear", "n": 100, "median_s": 2.0},
        {"benchmark": "s", "variant": "no size", "median_s": 5.0},  # left out: no `n`
    )
    text = make_tables.rewrite("<!-- bench:scaling s -->\n<!-- /bench -->\n", results)
    rows = [line for line in text.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[1:] == [
        "| quadratic | 100 | 1.00 s | — | — |",
        "| quadratic | 400 | 16.00 s | 16× | 2.00 |",
        "| linear | 100 | 2.00 s | — | — |",  # sorted by n within a variant
        "| linear | 200 | 4.00 s | 2× | 1.00 |",
    ]
    assert "no size" not in text


def test_a_table_without_records_is_an_error():
    with pytest.raises(KeyError, match="missing"):
        make_tables.rewrite(
            "<!-- bench:table missing -->\n<!-- /bench -->", _results_with({"benchmark": "a"})
        )


def test_ratios_are_baseline_over_variant_with_round_range():
    timing = load_benchmark("_timing")
    slow = timing.Timing("slow", (4.0, 6.0, 8.0))
    fast = timing.Timing("fast", (1.0, 2.0, 2.0))
    r, lo, hi = timing.ratio(slow, fast)
    assert (r, lo, hi) == (3.0, 3.0, 4.0)
    rec = timing.emit("b", fast, baseline=slow)
    assert rec["ratio"] == 3.0 and rec["median_s"] == 2.0 and rec["baseline"] == "slow"


def test_interleaved_rotates_the_order_and_scales():
    timing = load_benchmark("_timing")
    order: list[str] = []
    out = timing.interleaved(
        {"a": lambda: order.append("a"), "b": lambda: order.append("b")},
        rounds=3,
        warmup=0,
        scale={"a": 1.0, "b": 10.0},
    )
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert len(out["a"].times) == 3 and out["b"].variant == "b"


def test_interleaved_syncs_after_every_call_and_keeps_the_last_outputs():
    timing = load_benchmark("_timing")
    events: list[str] = []
    calls = {"a": 0}

    def a() -> int:
        calls["a"] += 1
        events.append("a")
        return calls["a"]

    outputs: dict[str, object] = {}
    timing.interleaved(
        {"a": a, "b": lambda: events.append("b") or "b-result"},
        rounds=2,
        warmup=1,
        sync=lambda: events.append("sync"),
        outputs=outputs,
    )
    # every call, warm-up included, is followed by a sync before the next one starts
    assert events == ["a", "sync", "b", "sync"] * 2 + ["b", "sync", "a", "sync"]
    assert outputs == {"a": 3, "b": "b-result"}  # the last timed call of each


def test_ratio_text_gives_the_median_ratio_and_the_round_range():
    timing = load_benchmark("_timing")
    slow = timing.Timing("slow", (4.0, 6.0, 8.0))
    fast = timing.Timing("fast", (1.0, 2.0, 2.0))
    assert timing.ratio_text(slow, fast) == "  3.00x [3.00, 4.00]"


def test_a_partial_rerun_replaces_only_the_tables_it_recorded():
    run_all = load_benchmark("run_all")
    kept = [
        {"script": "bench_ntk", "benchmark": "ntk-peer-mlp", "variant": "ours full", "v": 1},
        {"script": "bench_ntk", "benchmark": "ntk-usercnn", "variant": "ours full", "v": 1},
        {"script": "bench_ntk", "benchmark": "ntk-usercnn", "variant": "old variant", "v": 1},
        {"script": "bench_lesde", "benchmark": "lesde_sde", "variant": "ours", "v": 1},
    ]
    new = [{"script": "bench_ntk", "benchmark": "ntk-usercnn", "variant": "ours full", "v": 2}]
    merged = run_all.merge_records(kept, new)
    assert [r["benchmark"] for r in merged] == ["ntk-peer-mlp", "lesde_sde", "ntk-usercnn"]
    usercnn = [r for r in merged if r["benchmark"] == "ntk-usercnn"]
    assert usercnn == new  # the table is replaced whole: its stale variant is gone
