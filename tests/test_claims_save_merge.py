"""`ncdyn claims --save` merges the rows of new runs into the kept file by (experiment, seed).

The kept file (docs/theories/claims-cpu.json) holds runs too long to repeat; a later session
that adds seeds must not drop the seeds already kept, must not mix rows checked by a different
set of claims, and the table's provenance line must still name every commit behind its rows.
"""

from __future__ import annotations

import json

import pytest

from ncdynamics.experiments import claims
from ncdynamics.theories.claims import Part, claim


def _run(root, seed, parts, *, commit, experiment="x.y", text="the claim", source="Fig. 1"):
    """A run folder of ``experiment`` at ``seed`` whose summary holds one claim with
    ``parts`` (name, criterion, ours, held), run at ``commit``."""
    d = root / f"{experiment}-s{seed}-{commit}"
    d.mkdir(parents=True)
    (d / "config.json").write_text(
        json.dumps({"experiment": experiment, "preset": "cpu", "seed": seed})
    )
    rec = claim(text, source, [Part(*p) for p in parts])
    (d / "summary.json").write_text(json.dumps({"claims": [rec]}))
    status = {"device": "cpu", "versions": {"ncdynamics": "9.9", "ncdynamics_commit": commit}}
    (d / "status.json").write_text(json.dumps(status))
    return d


def _save(store, *dirs):
    notes: list[str] = []
    claims.save_rows(claims.collect(list(dirs)), store, notes=notes)
    return notes


def _table(store, experiment="x.y"):
    rows = [r for r in claims.load_rows(store) if r.experiment == experiment]
    return rows, claims.markdown_table(rows, provenance=True)


def _parts(a_held=True, b_held=True, a=1.0, b=2.0):
    return [("a", "a > 0", a, a_held), ("b", "b > 0", b, b_held)]


def test_new_seeds_are_added_to_the_kept_seeds_of_an_experiment(tmp_path):
    store = tmp_path / "rows.json"
    assert _save(store, _run(tmp_path, 0, _parts(a=1.0), commit="aaa")) == []
    notes = _save(
        store,
        _run(tmp_path, 1, _parts(a=3.0, b_held=False), commit="bbb"),
        _run(tmp_path, 2, _parts(a=5.0), commit="bbb"),
    )
    assert notes == []
    (a, b), table = _table(store)
    assert (a.seeds, a.ours, a.held) == ([0, 1, 2], [1.0, 3.0, 5.0], [True, True, True])
    assert (b.seeds, b.held) == ([0, 1, 2], [True, False, True])
    # "held" is every seed: b held in 2 of the 3 merged seeds, not "held"
    assert (a.held_text(), b.held_text()) == ("3/3 runs", "2/3 runs")
    assert a.ours_text() == "3 ± 2"
    # the provenance line names both commits and which seeds each ran
    assert table.splitlines()[-1] == (
        "Seeds 0, 1, 2; ncdynamics 9.9 @ aaa on cpu (seed 0); "
        "ncdynamics 9.9 @ bbb on cpu (seeds 1, 2)."
    )


def test_a_re_run_seed_replaces_only_its_own_entries_and_commit(tmp_path):
    store = tmp_path / "rows.json"
    _save(
        store, _run(tmp_path, 0, _parts(), commit="aaa"), _run(tmp_path, 1, _parts(), commit="bbb")
    )
    _save(store, _run(tmp_path, 1, _parts(a=7.0, a_held=False), commit="ccc"))
    (a, _), table = _table(store)
    assert (a.seeds, a.ours, a.held) == ([0, 1], [1.0, 7.0], [True, False])
    assert a.sources == {"ncdynamics 9.9 @ aaa on cpu", "ncdynamics 9.9 @ ccc on cpu"}
    assert "bbb" not in table  # no kept row came from it any more
    # other experiments in the file are left as they were
    _save(store, _run(tmp_path, 0, _parts(), commit="ddd", experiment="x.other"))
    assert [r.seeds for r in claims.load_rows(store) if r.experiment == "x.y"] == [[0, 1], [0, 1]]


def test_the_provenance_line_lists_commits_in_seed_order(tmp_path):
    store = tmp_path / "rows.json"
    _save(store, _run(tmp_path, 0, _parts(), commit="zzz"))
    _save(store, _run(tmp_path, 1, _parts(), commit="aaa"))
    _, table = _table(store)
    assert table.splitlines()[-1] == (
        "Seeds 0, 1; ncdynamics 9.9 @ zzz on cpu (seed 0); ncdynamics 9.9 @ aaa on cpu (seed 1)."
    )


def test_a_single_commit_table_keeps_its_one_line_provenance(tmp_path):
    store = tmp_path / "rows.json"
    _save(store, _run(tmp_path, 0, _parts(), commit="aaa"))
    _save(store, _run(tmp_path, 1, _parts(), commit="aaa"))
    _, table = _table(store)
    assert table.splitlines()[-1] == "Seeds 0, 1; ncdynamics 9.9 @ aaa on cpu."


@pytest.mark.parametrize(
    ("new_parts", "text", "difference"),
    [
        # a part no longer checked
        ([("a", "a > 0", 1.0, True)], "the claim", "part 'b' of 'the claim' no longer checked"),
        # a new part
        (_parts() + [("c", "c > 0", 1.0, True)], "the claim", "part 'c' of 'the claim' new"),
        # a changed criterion
        (
            [("a", "a > 1", 1.0, True), ("b", "b > 0", 2.0, True)],
            "the claim",
            "part 'a' of 'the claim': criterion 'a > 0' is now 'a > 1'",
        ),
        # a claim that no longer exists (reworded)
        (_parts(), "the claim, reworded", "claim 'the claim' no longer checked"),
    ],
)
def test_rows_of_a_changed_claim_set_replace_the_kept_seeds_with_a_note(
    tmp_path, new_parts, text, difference
):
    store = tmp_path / "rows.json"
    _save(
        store, _run(tmp_path, 0, _parts(), commit="aaa"), _run(tmp_path, 1, _parts(), commit="aaa")
    )
    notes = _save(store, _run(tmp_path, 2, new_parts, commit="bbb", text=text))
    assert len(notes) == 1 and "\n" not in notes[0]
    assert notes[0].startswith("x.y (cpu): seeds 0, 1 dropped, not merged with seeds 2:")
    assert difference in notes[0]
    rows, table = _table(store)
    # never mixed: every row is the new run's alone
    assert all(r.seeds == [2] for r in rows) and "aaa" not in table


def test_a_changed_paper_source_is_not_merged_either(tmp_path):
    store = tmp_path / "rows.json"
    _save(store, _run(tmp_path, 0, _parts(), commit="aaa"))
    notes = _save(store, _run(tmp_path, 1, _parts(), commit="bbb", source="Fig. 2"))
    assert len(notes) == 1 and "source 'Fig. 1' is now 'Fig. 2'" in notes[0]
    assert all(r.seeds == [1] for r in claims.load_rows(store))


def test_presets_are_never_merged(tmp_path):
    store = tmp_path / "rows.json"
    _save(store, _run(tmp_path, 0, _parts(), commit="aaa"))
    smoke = _run(tmp_path, 1, _parts(), commit="bbb")
    cfg = json.loads((smoke / "config.json").read_text())
    (smoke / "config.json").write_text(json.dumps({**cfg, "preset": "smoke"}))
    assert _save(store, smoke) == []
    by_preset = {(r.preset, r.part): r.seeds for r in claims.load_rows(store)}
    assert by_preset == {
        ("cpu", "a"): [0],
        ("cpu", "b"): [0],
        ("smoke", "a"): [1],
        ("smoke", "b"): [1],
    }


def test_kept_rows_written_before_seed_sources_were_stored(tmp_path):
    """Rows saved by an earlier version carry ``sources`` but no per-seed sources: with one
    source every kept seed came from it; with several, all are kept named (the footer may
    then name a commit too many, never one too few)."""
    store = tmp_path / "rows.json"
    one = claims.ClaimRow(
        "x.y",
        "cpu",
        "the claim",
        "a",
        "Fig. 1",
        "a > 0",
        [True],
        [1.0],
        [0],
        {"ncdynamics 9.9 @ aaa on cpu"},
    )
    two = claims.ClaimRow(
        "x.y",
        "cpu",
        "the claim",
        "b",
        "Fig. 1",
        "b > 0",
        [True, True],
        [2.0, 2.0],
        [0, 1],
        {"ncdynamics 9.9 @ aaa on cpu", "ncdynamics 9.9 @ old on cpu"},
    )
    store.write_text("[\n" + ",\n".join(json.dumps(r.to_json()) for r in (one, two)) + "\n]\n")
    assert "seed_sources" not in store.read_text()
    _save(store, _run(tmp_path, 1, _parts(), commit="bbb"))
    a, b = claims.load_rows(store)
    assert (a.seeds, a.seed_sources) == (
        [0, 1],
        ["ncdynamics 9.9 @ aaa on cpu", "ncdynamics 9.9 @ bbb on cpu"],
    )
    assert b.seeds == [0, 1] and b.sources == {
        "ncdynamics 9.9 @ aaa on cpu",
        "ncdynamics 9.9 @ old on cpu",
        "ncdynamics 9.9 @ bbb on cpu",
    }
    # unknown per-seed sources: the provenance line falls back to naming every source
    assert claims.markdown_table([a, b], provenance=True).splitlines()[-1] == (
        "Seeds 0, 1; ncdynamics 9.9 @ aaa on cpu; ncdynamics 9.9 @ bbb on cpu; "
        "ncdynamics 9.9 @ old on cpu."
    )


def test_cli_save_merges_and_prints_the_note(tmp_path, capsys):
    from ncdynamics.cli import main

    store = tmp_path / "rows.json"
    first = _run(tmp_path, 0, _parts(), commit="aaa")
    assert main(["claims", str(first), "--save", str(store)]) == 0
    second = _run(tmp_path, 1, _parts(b_held=False), commit="bbb")
    assert main(["claims", str(second), "--save", str(store)]) == 0
    assert [r.seeds for r in claims.load_rows(store)] == [[0, 1], [0, 1]]
    changed = _run(tmp_path, 2, [("a", "a > 0", 1.0, True)], commit="ccc")
    capsys.readouterr()
    assert main(["claims", str(changed), "--save", str(store)]) == 0
    out = capsys.readouterr().out
    assert "note: x.y (cpu): seeds 0, 1 dropped, not merged with seeds 2: " in out
    assert [r.seeds for r in claims.load_rows(store)] == [[2]]


def test_cli_help_states_the_merge_rule(capsys):
    from ncdynamics.cli import main

    with pytest.raises(SystemExit):
        main(["claims", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "merged by seed" in text and "different claims" in text


def test_cli_update_docs_after_save_shows_the_merged_seeds(tmp_path):
    """With --save, the docs table is the one the file now holds (kept and new seeds), so the
    freshness test, which rebuilds it from the file, agrees with the page."""
    from ncdynamics.cli import main

    store = tmp_path / "rows.json"
    page = tmp_path / "docs" / "p.md"
    page.parent.mkdir()
    page.write_text("<!-- claims:begin x.y cpu -->\nold\n<!-- claims:end -->\n")
    _save(store, _run(tmp_path, 0, _parts(), commit="aaa"))
    new = _run(tmp_path, 1, _parts(b_held=False), commit="bbb")
    args = ["claims", str(new), "--save", str(store), "--update-docs", str(page.parent)]
    assert main(args) == 0
    rows = claims.load_rows(store)
    assert claims.regions(page.parent)[("x.y", "cpu")][1] == claims.markdown_table(
        rows, provenance=True
    )
    assert "Seeds 0, 1;" in page.read_text() and "1/2 runs" in page.read_text()
