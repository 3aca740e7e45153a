"""The claims tables in docs/theories/*.md are what the smoke presets give (`make claims`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ncdynamics import experiments
from ncdynamics.experiments import claims

DOCS = Path(__file__).resolve().parents[1] / "docs"
CPU_ROWS = DOCS / "theories" / "claims-cpu.json"
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
    line = claims.markdown_table([rows]).splitlines()[2]
    assert line == "| c \\| d | (the whole claim) | — | 2/3 runs | 2 ± 1 |"
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


def _write_run(root, name, experiment, seed, claim_records, device="cpu"):
    import json

    d = root / name
    d.mkdir(parents=True)
    (d / "config.json").write_text(
        json.dumps({"experiment": experiment, "preset": "cpu", "seed": seed})
    )
    (d / "summary.json").write_text(json.dumps({"claims": claim_records}))
    status = {"device": device, "versions": {"ncdynamics": "9.9", "ncdynamics_commit": "abc"}}
    (d / "status.json").write_text(json.dumps(status))
    return d


def test_each_part_is_counted_over_seeds(tmp_path):
    from ncdynamics.theories.claims import Part, claim

    for seed, (at_init, trained) in enumerate([(-0.9, -0.8), (0.1, -0.7), (0.2, -0.9)]):
        rec = claim(
            "trend after training, absent at init",
            "Fig. 14",
            [
                Part("after training", "rho < -0.5", trained, trained < -0.5),
                Part("absent at init", "|rho| < 0.3", {"rho": at_init}, abs(at_init) < 0.3),
            ],
        )
        _write_run(tmp_path, f"s{seed}", "x.y", seed, [rec])
    after, init = claims.collect([tmp_path])
    assert (after.part, after.held_text()) == ("after training", "3/3 runs")
    assert (init.part, init.held_text(), init.criterion) == (
        "absent at init",
        "2/3 runs",
        "|rho| < 0.3",
    )
    assert init.ours_text() == "rho: -0.2 ± 0.61"
    table = claims.markdown_table([after, init], provenance=True).splitlines()
    assert table[2].startswith("| Fig. 14: trend after training, absent at init | after training |")
    assert table[3].startswith("|  | absent at init | \\|rho\\| < 0.3 | 2/3 runs |")
    assert table[-1] == "Seeds 0, 1, 2; ncdynamics 9.9 @ abc on cpu."


def test_saved_rows_merge_by_experiment_and_round_trip(tmp_path):
    rec = {"claim": "c", "held": True, "ours": 1.0}
    _write_run(tmp_path / "a", "s0", "x.one", 0, [rec])
    _write_run(tmp_path / "b", "s0", "x.two", 0, [rec])
    store = tmp_path / "rows.json"
    claims.save_rows(claims.collect([tmp_path / "a", tmp_path / "b"]), store)
    _write_run(tmp_path / "c", "s1", "x.two", 1, [{"claim": "c", "held": False, "ours": 3.0}])
    claims.save_rows(claims.collect([tmp_path / "c"]), store)
    rows = claims.load_rows(store)
    assert [(r.experiment, r.held, r.seeds) for r in rows] == [
        ("x.one", [True], [0]),
        ("x.two", [True, False], [0, 1]),  # seed 1 added to the kept seed 0
    ]
    assert claims.markdown_table(rows[:1]) == claims.markdown_table(
        claims.collect([tmp_path / "a"])
    )
    store.write_text("{}")
    with pytest.raises(ValueError, match="JSON list"):
        claims.load_rows(store)


def test_docs_cpu_tables_are_generated_from_the_stored_cpu_runs():
    """Every `cpu` region in the docs is the table of the rows kept in claims-cpu.json (written
    by `ncdyn claims RUN... --save docs/theories/claims-cpu.json --update-docs docs`)."""
    rows = claims.load_rows(CPU_ROWS)
    cpu_regions = {k: v for k, v in claims.regions(DOCS).items() if k[1] == "cpu"}
    stale = []
    for (name, preset), (page, body) in cpu_regions.items():
        group = [r for r in rows if (r.experiment, r.preset) == (name, preset)]
        if not group or body != claims.markdown_table(group, provenance=True):
            stale.append(f"{name} in {page.name}")
    assert not stale, f"cpu claims tables not generated from {CPU_ROWS.name}: {stale}"


def test_cli_claims_runs_seeds_and_keeps_completed_runs(tmp_path, capsys):
    from ncdynamics.cli import main

    args = ["claims", "--run", "smoke", "--seeds", "0,1", "--only", "truncation.e6"]
    args += ["--out", str(tmp_path / "runs"), "--save", str(tmp_path / "rows.json")]
    assert main(args) == 0
    first = (tmp_path / "runs" / "truncation.e6" / "seed1" / "summary.json").stat().st_mtime_ns
    assert main(args) == 0  # completed runs are kept, not run again
    after = (tmp_path / "runs" / "truncation.e6" / "seed1" / "summary.json").stat().st_mtime_ns
    assert first == after
    rows = claims.load_rows(tmp_path / "rows.json")
    assert rows and all(sorted(r.seeds) == [0, 1] for r in rows)
    assert "2/2 runs" in capsys.readouterr().out
    assert main(["claims", "--run", "smoke", "--seeds", "1,x"]) == 2


def test_lists_of_numbers_are_summarised_over_runs():
    short = claims.ClaimRow("x.y", "cpu", "c", ours=[[1.0, 10.0], [3.0, 30.0]])
    assert short.ours_text() == "[2 ± 1.4, 20 ± 14]"
    long = claims.ClaimRow("x.y", "cpu", "c", ours=[[1.0, 2.0, 3.0, 4.0, 5.0], [0.5, 9.0]])
    assert long.ours_text() == "0.5 to 9 (7 values in 2 runs)"
    nested = claims.ClaimRow("x.y", "cpu", "c", ours=[[[1.0, 2.0]]])
    assert nested.ours_text() == "[[1, 2]]"


def test_saving_rows_leaves_other_files_alone(tmp_path):
    rec = {"claim": "c", "held": True, "ours": 1.0}
    _write_run(tmp_path / "a", "s0", "x.one", 0, [rec])
    decoy = tmp_path / ".rows.json.tmp"  # the name an earlier version wrote through
    decoy.write_text("user data")
    claims.save_rows(claims.collect([tmp_path / "a"]), tmp_path / "rows.json")
    assert decoy.read_text() == "user data"
    not_rows = tmp_path / "notes.json"
    not_rows.write_text('{"mine": 1}')
    with pytest.raises(ValueError, match="JSON list"):
        claims.save_rows(claims.collect([tmp_path / "a"]), not_rows)
    assert not_rows.read_text() == '{"mine": 1}'


def test_a_part_s_noise_is_printed_as_a_bound_the_table_can_hold(tmp_path):
    """A finite-difference error is rounding noise (4.8e-10 on one machine, 5.8e-10 on
    another): a part declaring ``noise`` shows it as ``< noise``, so the generated table is
    the same on both and the freshness test above holds from a clean clone."""
    from ncdynamics.theories.claims import Part, claim

    tables = []
    for fd in (4.8e-10, 5.8e-10):
        run = tmp_path / f"fd{fd}"
        rec = claim("FD agrees", "Eq. 1", [Part("FD", "rel. error < 1e-6", fd, True, noise=1e-8)])
        _write_run(run, "s0", "x.y", 0, [rec])
        (row,) = claims.collect([run])
        assert row.ours_text() == "< 1e-8"
        tables.append(claims.markdown_table([row]))
    assert tables[0] == tables[1]
    # above the noise a measurement is a result and keeps its digits; without noise, as before
    rec = claim("c", "s", [Part("FD", "t", 3e-8, True, noise=1e-8), Part("x", "t", 4.8e-10, True)])
    _write_run(tmp_path / "r", "s0", "x.y", 0, [rec])
    big, plain = claims.collect([tmp_path / "r"])
    assert (big.ours_text(), plain.ours_text()) == ("3e-08", "4.8e-10")
    # the noise travels with saved rows (the cpu tables are rebuilt from them)
    claims.save_rows([row], tmp_path / "rows.json")
    assert claims.load_rows(tmp_path / "rows.json")[0].ours_text() == "< 1e-8"
    with pytest.raises(ValueError, match="`noise` must be a positive"):
        Part("FD", "t", 1.0, True, noise=-1.0)


def test_claims_tables_do_not_carry_terminal_escapes_from_a_run(tmp_path):
    rec = {"claim": "c\x1b[2J", "held": True, "ours": "\x1b]0;owned\x07"}
    _write_run(tmp_path, "s0", "x.y\x1b[31m", 0, [rec])
    (row,) = claims.collect([tmp_path])
    table = claims.markdown_table([row], provenance=True)
    assert "\x1b" not in table and "\x07" not in table and "\\x1b" in table
    assert "\x1b" not in row.experiment
