"""The calibration tables of docs/confront.md are generated from the committed results.

No check_theory run here: the test regenerates the marked region from the newest file in
benchmarks/results/calibration/ with benchmarks/calibration_table.py and compares.
"""

from __future__ import annotations

import json
import time
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


def _measured(date, n_true, forecast=False):
    return {
        "date": date,
        "host": "h",
        "seed": 0,
        "n_true": n_true,
        "n_generic": 2,
        "forecast": forecast,
    }


def test_merge_replaces_the_named_theories_and_keeps_each_ones_settings():
    base = _results([("independent", "holds", 1.0)])  # a file made before --theories
    base["theories"]["y"] = base["theories"]["x"]
    new = _results([("ar1", "fails", 2.0)])
    new.update(date="2026-11-30T00:00:00Z", host="h", n_true=5, forecast=True)
    new["theories"]["x"]["measured"] = _measured("2026-11-30T00:00:00Z", 5, True)
    merged = table.merge(base, new)
    assert list(merged["theories"]) == ["x", "y"]
    assert merged["theories"]["x"]["results"][0]["family"] == "ar1"  # replaced
    assert merged["theories"]["y"]["results"][0]["family"] == "independent"  # kept
    assert table.measured(merged, "x") == _measured("2026-11-30T00:00:00Z", 5, True)
    # the kept theory carries the settings of the file it came from
    assert table.measured(merged, "y") == {
        "date": "2026-11-29T00:00:00Z",
        "host": None,
        "seed": 0,
        "n_true": 2,
        "n_generic": 2,
        "forecast": False,
    }


def test_render_says_which_settings_each_theory_was_measured_with():
    results = _results([("independent", "holds", 1.0)])
    results["theories"]["y"] = dict(results["theories"]["x"])
    text = table.render(results)
    assert text.startswith("Seed 0, 2 true streams per noise and 2 per generic family and ")
    assert " for x" not in text  # one setting: no theory named
    results["theories"]["y"]["measured"] = _measured("2026-11-30T01:00:00Z", 5)
    text = table.render(results)
    assert text.startswith(
        "Seed 0, 2 true streams per noise and 2 per generic family and theory; made "
        "2026-11-29 for x; seed 0, 5 true streams per noise and 2 per generic family and "
        "theory; made 2026-11-30 for y by "
    )


def test_band_note_names_the_theories_whose_bands_were_not_measured():
    results = _results([("independent", "holds", 1.0)])
    results["theories"]["y"] = json.loads(json.dumps(results["theories"]["x"]))
    results["theories"]["y"]["results"][0].update(band_coverage=[1.0], band_z=[0.5])
    text = table.render(results)
    assert "| y | 1.00 | – | 0.50 | – |" in text
    assert "Not measured for x." in text


def test_run_refuses_a_theory_without_a_calibration():
    with pytest.raises(ValueError, match=r"--theories must name calibrated theories .*'nope'"):
        table.run(1, 1, 0, names=["nope"])


def _two_theory_results(tmp_path):
    """``(folder, docs)``: a results folder whose ``old.json`` holds theories x and y, and a
    docs page with empty calibration markers."""
    folder = tmp_path / "results"
    folder.mkdir()
    base = _results([("independent", "holds", 1.0)])
    base["theories"]["y"] = base["theories"]["x"]
    (folder / "old.json").write_text(json.dumps(base), encoding="utf-8")
    docs = tmp_path / "confront.md"
    docs.write_text("<!-- calibration:table -->\n<!-- /calibration -->\n", encoding="utf-8")
    return folder, docs


def test_theories_option_merges_into_the_newest_file(tmp_path, monkeypatch):
    folder, docs = _two_theory_results(tmp_path)
    asked = {}

    def fake_run(n_true, n_generic, seed, forecast=True, names=None):
        asked.update(n_true=n_true, names=names, forecast=forecast)
        new = _results([("ar1", "fails", 2.0)])
        new.update(date="2026-11-30T00:00:00Z", host="h", n_true=n_true)
        new["theories"]["x"]["measured"] = _measured("2026-11-30T00:00:00Z", n_true, forecast)
        return new

    monkeypatch.setattr(table, "run", fake_run)
    argv = ["calibration_table.py", "--theories", "x", "--n-true", "3"]
    argv += ["--results", str(folder / "old.json"), "--docs", str(docs)]
    monkeypatch.setattr("sys.argv", argv)
    assert table.main() == 0
    assert asked == {"n_true": 3, "names": ["x"], "forecast": True}
    written = table.newest_results(folder)
    assert written.name != "old.json"
    merged = json.loads(written.read_text(encoding="utf-8"))
    assert set(merged["theories"]) == {"x", "y"}
    assert table.measured(merged, "x")["n_true"] == 3
    assert table.measured(merged, "y")["n_true"] == 2
    assert "made 2026-11-30 for x" in docs.read_text(encoding="utf-8")


def test_runs_of_two_theories_into_one_folder_both_end_up_in_the_newest_file(tmp_path, monkeypatch):
    folder, docs = _two_theory_results(tmp_path)

    def fake_run(n_true, n_generic, seed, forecast=True, names=None):
        (name,) = names
        new = _results([("ar1", "fails", 2.0)])
        new.update(host="h", theories={name: new["theories"]["x"]})
        new["theories"][name]["measured"] = _measured("2026-11-30T00:00:00Z", 7)
        return new

    monkeypatch.setattr(table, "run", fake_run)
    for name in ("x", "y"):
        argv = ["calibration_table.py", "--theories", name, "--results", str(folder)]
        monkeypatch.setattr("sys.argv", [*argv, "--docs", str(docs)])
        assert table.main() == 0
        time.sleep(1.1)  # the files' dates are to the second: the second run's sorts later
    merged = json.loads(table.newest_results(folder).read_text(encoding="utf-8"))
    assert {n: table.measured(merged, n)["n_true"] for n in merged["theories"]} == {
        "x": 7,
        "y": 7,
    }


def test_bands_only_replaces_the_bands_of_the_true_streams_and_nothing_else(tmp_path, monkeypatch):
    """``--bands-only``: after a change to a theory's band alone (verdicts and intervals do
    not use it), the bands of the named theories' true streams are measured again, stream by
    stream with the seeds of the file, and everything else is kept."""
    folder, docs = _two_theory_results(tmp_path)
    old = json.loads((folder / "old.json").read_text(encoding="utf-8"))
    asked = []

    def fake_bands(name, noise, seed):
        asked.append((name, noise, seed))
        return (1.0 - seed, 0.5), (seed + 1.0, float("nan"))

    monkeypatch.setattr("ncdynamics.theories.testing.true_stream_band", fake_bands)
    argv = ["calibration_table.py", "--bands-only", "--theories", "x", "--results", str(folder)]
    monkeypatch.setattr("sys.argv", [*argv, "--docs", str(docs)])
    assert table.main() == 0
    assert asked == [("x", "independent", 0)]
    new = json.loads(table.newest_results(folder).read_text(encoding="utf-8"))
    (row,) = new["theories"]["x"]["results"][:1]
    assert row["band_coverage"] == [1.0, 0.5] and row["band_z"][0] == 1.0
    assert row["band_z"][1] is None  # NaN is written as null, as JSON has no NaN
    for kept in ("kind", "family", "seed", "verdict", "params", "intervals"):
        assert row[kept] == old["theories"]["x"]["results"][0][kept]
    assert "band_coverage" not in new["theories"]["x"]["results"][1]  # a generic stream
    assert new["theories"]["y"]["results"] == old["theories"]["y"]["results"]
    assert "bands" in new["theories"]["x"]["measured"]
    assert "bands" not in new["theories"]["y"].get("measured", {})
    text = docs.read_text(encoding="utf-8")
    assert "| x | 0.75 | – | 1.00 | – |" in text
    assert "Bands re-measured with `--bands-only` on " in text and " for x" in text


def test_bands_only_needs_the_theories_named(monkeypatch):
    monkeypatch.setattr("sys.argv", ["calibration_table.py", "--bands-only"])
    with pytest.raises(SystemExit):
        table.main()
