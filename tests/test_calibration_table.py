"""The calibration tables of docs/confront.md are generated from the committed results.

No check_theory run here: the test regenerates the marked region from the newest file in
benchmarks/results/calibration/ with benchmarks/calibration_table.py and compares.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _benchmarks import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


table = load_benchmark("calibration_table")


def test_docs_table_matches_the_committed_results():
    docs = (ROOT / "docs" / "confront.md").read_text(encoding="utf-8")
    results = json.loads(table.newest_results().read_text(encoding="utf-8"))
    assert table.rewrite(docs, results) == docs, (
        "docs/confront.md is stale: run `python benchmarks/calibration_table.py --render`"
    )
    assert set(results["theories"]) == {"alignment", "hadamard", "lesde", "ntk_collapse"}


def _results(verdicts):
    rows = [
        {
            "kind": "true",
            "family": noise,
            "seed": i,
            "verdict": v,
            "params": {"c": c},
            "intervals": {"c": [c - 0.1, c + 0.1]},
        }
        for i, (noise, v, c) in enumerate(verdicts)
    ]
    rows.append(
        {
            "kind": "generic",
            "family": "logistic",
            "seed": 0,
            "verdict": "holds",
            "params": {},
            "intervals": {},
        }
    )
    rows.append(
        {
            "kind": "generic",
            "family": "logistic",
            "seed": 1,
            "verdict": "fails",
            "params": {},
            "intervals": {},
        }
    )
    return {
        "date": "2026-11-29T00:00:00Z",
        "seed": 0,
        "n_true": 2,
        "n_generic": 2,
        "theories": {"x": {"true_params": {"c": 1.0}, "results": rows}},
    }


def test_render_counts_positives_and_coverage():
    results = _results(
        [
            ("independent", "holds", 1.0),
            ("independent", "fails", 1.05),
            ("ar1", "holds in a window", 1.5),
            ("ar1", "holds", 1.0),
        ]
    )
    text = table.render(results)
    assert "| x | 1/2 | 2/2 | 1/2 | – | – | – | 1/2 | – | – |" in text
    assert "| x | `c` | 1 | 1.00 | 0.50 | – | – |" in text


def test_rewrite_needs_the_markers():
    with pytest.raises(ValueError, match="calibration:table"):
        table.rewrite("# no region\n", _results([]))


def test_render_tables_forecast_bands_when_the_results_hold_them():
    results = _results([("independent", "holds", 1.0), ("ar1", "holds", 1.0)])
    assert "Forecast bands" not in table.render(results)  # files made before issue 28 item 3
    rows = results["theories"]["x"]["results"]
    rows[0].update(band_coverage=[1.0, 0.8], band_z=[1.0, -1.0, 2.0, None])
    rows[1].update(band_coverage=[0.5], band_z=[3.0])
    text = table.render(results)
    assert "Forecast bands" in text
    # coverage 0.9 and 0.5; error/SE sqrt((1 + 1 + 4) / 3) and 3 (a missing z is skipped)
    assert "| x | 0.90 | 0.50 | 1.41 | 3.00 |" in text
