"""The claims tables in docs/theories/*.md are what the smoke presets give (`make claims`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncdynamics import experiments
from ncdynamics.experiments import claims

DOCS = Path(__file__).resolve().parents[1] / "docs"
THEORIES = ("alignment", "hadamard", "lesde", "ntk_collapse", "truncation")


@pytest.mark.parametrize("theory", THEORIES)
def test_docs_claims_tables_match_the_smoke_presets(theory, tmp_path):
    names = sorted(
        s.name for s in experiments.list_experiments() if s.name.startswith(f"{theory}.")
    )
    regions = claims.regions(DOCS)
    missing = [n for n in names if (n, "smoke") not in regions]
    assert not missing, f"docs have no generated claims region for {missing}"
    rows = claims.collect(claims.run_smoke(names, tmp_path))
    stale = []
    for name in names:
        group = [r for r in rows if r.experiment == name]
        page, body = regions[(name, "smoke")]
        want = claims.markdown_table(group) if group else ""
        if body != want:
            stale.append(f"{name} in {page.name}")
    assert not stale, f"stale claims tables (run `make claims`): {stale}"


def test_collect_counts_runs_and_averages_numbers(tmp_path):
    import json

    for seed, (held, ours) in enumerate([(True, 1.0), (False, 3.0), (True, 2.0)]):
        d = tmp_path / f"s{seed}"
        d.mkdir()
        (d / "config.json").write_text(
            json.dumps({"experiment": "x.y", "preset": "cpu", "seed": seed})
        )
        (d / "summary.json").write_text(
            json.dumps({"claims": [{"claim": "c | d", "held": held, "ours": ours}]})
        )
    (rows,) = claims.collect([tmp_path])
    assert rows.held_text() == "2/3 runs" and rows.ours_text() == "2 ± 1"
    assert claims.markdown_table([rows]).splitlines()[2] == "| c \\| d | 2/3 runs | 2 ± 1 |"
    page = tmp_path / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text("a\n<!-- claims:begin x.y cpu -->\nold\n<!-- claims:end -->\nb\n")
    assert claims.update_docs([rows], page.parent) == [page]
    assert "2/3 runs" in page.read_text() and "old" not in page.read_text()


def test_collect_names_a_path_that_is_not_a_run(tmp_path):
    with pytest.raises(ValueError, match="`runs` must be"):
        claims.collect([tmp_path / "nope"])
    with pytest.raises(ValueError, match="holds no run"):
        claims.collect([tmp_path])
