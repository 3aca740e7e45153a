"""The published atlas in docs/atlas.md is generated from the committed results.

No training here: the test regenerates both marked regions (the presets' plans, and the
atlas from the newest folder under benchmarks/results/atlas/) with
benchmarks/atlas_table.py and compares.
"""

from __future__ import annotations

from pathlib import Path

from _benchmarks import load_benchmark

ROOT = Path(__file__).resolve().parents[1]


table = load_benchmark("atlas_table")


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


def _cells(rows):
    import pandas as pd

    out = []
    for settings, verdict in rows:
        shares = {f"share.{v}": 0.0 for v in ("holds", "holds in a window", "out of regime")}
        shares[f"share.{verdict}"] = 1.0
        out.append({**settings, **shares, "verdict": verdict})
    return pd.DataFrame(out)


def test_a_boundary_is_judged_only_where_it_could_have_failed():
    """A paper's boundary 'agrees' only when the theory holds on its near side and not beyond;
    holding nowhere leaves the boundary not located, and cells beyond it that the regime check
    put out of regime confirm nothing measured."""
    rule = ("never", {"optimizer": ("momentum",)})
    near, far = {"optimizer": "gd"}, {"optimizer": "momentum"}
    assert table.judge_boundary(_cells([(near, "holds"), (far, "fails")]), rule).startswith(
        "agrees"
    )
    assert table.judge_boundary(_cells([(near, "holds"), (far, "holds")]), rule).startswith(
        "does not agree"
    )
    nowhere = table.judge_boundary(_cells([(near, "fails"), (far, "fails")]), rule)
    assert nowhere.startswith("not located"), nowhere
    declared = table.judge_boundary(_cells([(near, "holds"), (far, "out of regime")]), rule)
    assert declared.startswith("by declaration only"), declared
    falls = ("falls", "init_scale", {})
    rising = _cells([({"init_scale": 1.0}, "holds"), ({"init_scale": 4.0}, "fails")])
    assert table.judge_boundary(rising, falls).startswith("agrees")
    flat = _cells([({"init_scale": 1.0}, "fails"), ({"init_scale": 4.0}, "fails")])
    assert table.judge_boundary(flat, falls).startswith("not located")


def _probes(verdicts):
    import pandas as pd

    return pd.DataFrame(
        [
            {"optimizer": "momentum", "verdict": "out of regime", "forced_verdict": v}
            for v in verdicts
        ]
    )


def test_a_declared_boundary_is_measured_by_the_forced_fits_beyond_it():
    """Cells beyond a boundary the theory's regime declares are unfitted; the forced fits of
    their runs (atlas.probe_run) decide it instead: holding on none of them agrees, holding on
    any does not, and without them nothing was measured."""
    rule = ("never", {"optimizer": ("momentum",)})
    cells = _cells([({"optimizer": "gd"}, "holds"), ({"optimizer": "momentum"}, "out of regime")])
    agrees = table.judge_boundary(cells, rule, probes=_probes(["fails", "degenerate"]))
    assert agrees.startswith("agrees, measured past its declared regime"), agrees
    assert "none of the 2 runs" in agrees and "degenerate 1, fails 1" in agrees
    differs = table.judge_boundary(cells, rule, probes=_probes(["fails", "holds in a window"]))
    assert differs.startswith("does not agree, measured past"), differs
    assert "holds on 1 of the 2 runs" in differs
    assert table.judge_boundary(cells, rule, probes=_probes([])).startswith("by declaration")


def test_the_near_side_of_another_block_locates_a_boundary():
    """A block that holds no in-regime cell (the optimiser blocks have no gradient-descent
    cell) is located by its declared near side (NEAR), and only if the theory holds there."""
    rule = ("never", {"optimizer": ("momentum",)})
    cells = _cells([({"optimizer": "momentum"}, "out of regime")])
    probes = _probes(["fails"])
    assert table.judge_boundary(cells, rule, probes=probes).startswith("not located")
    near = _cells([({"optimizer": "gd"}, "holds")])
    assert table.judge_boundary(cells, rule, near=near, probes=probes).startswith("agrees")
    nowhere = _cells([({"optimizer": "gd"}, "fails")])
    located = table.judge_boundary(cells, rule, near=nowhere, probes=probes)
    assert located.startswith("not located"), located


def test_a_theory_that_cannot_be_fitted_beyond_a_boundary_is_by_construction():
    """A probe whose fit itself refuses the runs (NotApplicable: the Hadamard basis needs K a
    power of two) measures no verdict there: the boundary holds by construction, not by a
    fit that failed."""
    import pandas as pd

    rule = ("never", {"n_classes": (6,)})
    cells = _cells([({"n_classes": 4}, "holds"), ({"n_classes": 6}, "out of regime")])
    refused = pd.DataFrame(
        [
            {
                "n_classes": 6,
                "verdict": "out of regime",
                "forced_verdict": None,
                "reason": "the Hadamard theory needs K a power of two; the run has K = 6",
            }
        ]
        * 2
    )
    text = table.judge_boundary(cells, rule, probes=refused)
    assert text.startswith("by construction") and "all 2 runs" in text and "power of two" in text
