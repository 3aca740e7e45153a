"""The published atlas in docs/atlas.md is generated from the committed results.

No training here: the test regenerates both marked regions (the presets' plans, and the
atlas from the newest folder under benchmarks/results/atlas/) with
benchmarks/atlas_table.py and compares.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _load():
    path = ROOT / "benchmarks" / "atlas_table.py"
    spec = importlib.util.spec_from_file_location("_bench_atlas_table", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


table = _load()


def test_docs_atlas_matches_the_committed_results_and_the_plans():
    docs = (ROOT / "docs" / "atlas.md").read_text(encoding="utf-8")
    found = table._load(table.newest_results())
    assert table.rewrite(docs, found) == docs, (
        "docs/atlas.md is stale: run `python benchmarks/atlas_table.py --render`"
    )
    assert found["meta"]["plan"]["preset"] == "cpu"


def test_the_published_region_states_what_it_covers():
    docs = (ROOT / "docs" / "atlas.md").read_text(encoding="utf-8")
    region = docs.split("<!-- atlas:table -->")[1].split("<!-- /atlas -->")[0]
    assert "planned runs completed and confronted" in region
    for theory in ("alignment", "hadamard", "lesde", "ntk_collapse"):
        assert f"#### {theory}" in region
