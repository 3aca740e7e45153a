"""docs/real-runs.md is generated from the committed results of benchmarks/real_runs.py.

No training here: the page is rendered from benchmarks/results/real_runs/ and compared; the
counting behind item 9's target is checked on small made-up results.
"""

from __future__ import annotations

from pathlib import Path

from _benchmarks import load_benchmark

ROOT = Path(__file__).resolve().parents[1]

real_runs = load_benchmark("real_runs")


def test_page_matches_the_committed_results():
    page = (ROOT / "docs" / "real-runs.md").read_text(encoding="utf-8")
    results = real_runs.load_results()
    assert results, "no results under benchmarks/results/real_runs/"
    assert real_runs.render(results) == page, (
        "docs/real-runs.md is stale: run `python benchmarks/real_runs.py --render`"
    )
    assert real_runs.main(["--check"]) == 0


def test_every_declared_setting_was_run_at_every_seed():
    for result in real_runs.load_results():
        declared = {s.name for s in real_runs.SETTINGS[result["theory"]]}
        ran = {(r["setting"], r["seed"]) for r in result["runs"]}
        assert ran == {(s, seed) for s in declared for seed in real_runs.SEEDS}


def test_lesde_family_is_the_nine_settings_of_the_docs_paragraph():
    knobs = [s.knobs for s in real_runs.LESDE]
    assert len(knobs) == 9
    assert {k["width"] for k in knobs} == {0, 32, 128}
    assert {k["dim"] for k in knobs} == {8, 32}
    assert {k["per_class"] for k in knobs} == {40, 200}
    assert {k["separation"] for k in knobs} == {3.0, 1.5}
    assert {k["batch_size"] for k in knobs} == {None, 8}
    assert {k["first_record"] for k in knobs} == {1, 20}
    assert all(0.01 <= k["lr"] <= 0.05 and 100 <= k["epochs"] <= 400 for k in knobs)
    assert all(k["n_records"] == 25 for k in knobs)


def _result(verdicts, wins):
    runs = [
        {
            "setting": "a",
            "seed": i,
            "n_records": 5,
            "first_step": 0.0,
            "last_step": 40.0,
            "verdict": v,
            "reason": "why",
            "regime_start": 0.0,
            "window": None,
            "params": {},
            "windows": [],
            "forecast": {
                "verdict": "holds" if 2 * sum(w) >= len(w) else "fails",
                "reason": "",
                "origins": [
                    {
                        "cut": 1.0,
                        "placed_by": "x",
                        "fit_verdict": "holds",
                        "win": x,
                        "miss": None if x else "behind both",
                        "fit_reason": "why",
                        # RMSE ratios to the baselines: 0.5 and 0.8 when won, else 2 and 1
                        "worst_skill": {
                            "last_value": 0.75 if x else -3.0,
                            "power_law": 0.36 if x else 0.0,
                        },
                    }
                    for x in w
                ],
            },
        }
        for i, (v, w) in enumerate(zip(verdicts, wins, strict=True))
    ]
    return {
        "theory": "lesde",
        "date": "d",
        "host": "h",
        "commit": "c",
        "seconds": 1.0,
        "seeds": [0, 1, 2],
        "settings": [{"name": "a", "text": "t", "knobs": {}}],
        "runs": runs,
    }


def test_target_needs_two_thirds_holding_and_more_than_half_the_origins_won():
    result = _result(["holds", "holds in a window", "fails"], [[True, True], [True], [False]])
    result["runs"][1]["regime_start"] = 10.0  # out of regime as a whole, held from its start
    met = real_runs.summarise(result)
    assert (met["n_hold"], met["n_runs"], met["won"], met["origins"]) == (2, 3, 3, 4)
    assert met["holds_met"] and met["forecast_met"]
    short = real_runs.summarise(
        _result(["holds", "not distinguished", "fails"], [[True, False], [True], [False]])
    )
    assert not short["holds_met"]  # 1 of 3
    assert not short["forecast_met"]  # 2 of 4 is not more than half


def test_page_counts_come_from_the_results():
    page = real_runs.render(
        [_result(["holds", "degenerate", "degenerate"], [[True], [False], [False, False]])]
    )
    assert (
        "| **all** | **1** | **0** | **0** | **0** | **2** | **0** | **1/4** | **1/4** | **1** |"
        in page
    )
    assert "in 1 of 3 runs, two thirds needed: **not met**" in page
    assert "`ntk_collapse`" in page.split("## Not run")[1]


def test_a_forecast_held_in_a_window_counts_as_held():
    result = _result(["holds", "fails", "fails"], [[True], [False], [False]])
    result["runs"][1]["forecast"]["verdict"] = "holds in a window"
    page = real_runs.render([result])
    assert (
        "| **all** | **1** | **0** | **0** | **2** | **0** | **0** | **1/3** | **1/3** | **2** |"
        in page
    )


def test_origins_before_the_regime_start_are_not_counted_in_regime():
    result = _result(
        ["holds in a window", "holds", "out of regime"], [[True, True, False], [True], [True]]
    )
    # run 0: the regime starts at step 20, its origins are at steps 10, 20 and 30
    origins = result["runs"][0]["forecast"]["origins"]
    for origin, cut in zip(origins, (10.0, 20.0, 30.0), strict=True):
        origin["cut"] = cut
    result["runs"][0]["regime_start"] = 20.0
    result["runs"][1]["regime_start"] = 0.0  # the whole stream is in regime
    result["runs"][2]["regime_start"] = None  # no record is
    s = real_runs.summarise(result)
    assert (s["won"], s["origins"]) == (4, 5)
    assert (s["won_in_regime"], s["origins_in_regime"]) == (2, 3)
    page = real_runs.render([result])
    assert "| **4/5** | **2/3** |" in page
    assert "at 2 of the 3 origins inside the regime" in page


def test_results_without_a_regime_start_show_no_in_regime_count():
    result = _result(["holds"], [[True, False]])
    del result["runs"][0]["regime_start"]
    s = real_runs.summarise(result)
    assert s["origins_in_regime"] is None
    assert "| **1/2** | n/a |" in real_runs.render([result])


# reasons as the engine (theories/verdict.py) wrote them in benchmarks/results/real_runs/
BEATEN = (
    "a sum of two exponentials (5 parameters per observable) explains these records better "
    "in-sample (AICc -606.4 against -394.5) and on the held-out records (error ratio 19.7)"
)
TIED = (
    "fits (R² ≥ 0.989), but so does a power law in training time with 2 parameters (held-out "
    "error ratio 1.15 on the records after each of 3 origins from step 57); these records "
    "cannot tell them apart"
)


def test_reason_families_name_the_alternative_and_the_number():
    family = real_runs.reason_family
    assert family("fails", BEATEN) == (
        "fails: beaten by a sum of two exponentials (in-sample and held out)",
        ("held-out error ratio", 19.7),
    )
    assert family("not distinguished", TIED) == (
        "not distinguished from a power law in training time",
        ("held-out error ratio", 1.15),
    )
    assert family("fails", "margin_spread: R² 0.4875 < 0.9 on its scale") == (
        "fails: R² below the threshold on margin_spread",
        ("R²", 0.4875),
    )
    assert family("degenerate", "r_beta = 4 is at the upper bound 4 of its search") == (
        "degenerate: r_beta at the upper bound of its search",
        ("value", 4.0),
    )
    assert family(
        "degenerate", "alpha0 = 0.0022 is indistinguishable from zero (95% interval -0.1 to 0.1)"
    ) == ("degenerate: alpha0 indistinguishable from zero", ("value", 0.0022))
    in_sample = TIED.replace("held-out error ratio 1.15 on", "in-sample AICc -5 against")
    assert family("not distinguished", in_sample)[1] is None
    assert family("fails", "something new") == ("fails: other", None)


def test_page_says_why_runs_do_not_hold_and_why_origins_were_not_won():
    result = _result(
        ["holds", "fails", "fails", "not distinguished", "out of regime"],
        [[True], [False], [False], [False], [False, True]],
    )
    runs = result["runs"]
    runs[1]["reason"] = "margin_spread: R² 0.4875 < 0.9 on its scale"
    runs[2]["reason"] = "margin_spread: R² 0.8 < 0.9 on its scale"
    runs[3]["reason"] = TIED
    # out of regime as a whole: judged by its window from the regime's start (step 10)
    runs[4]["regime_start"] = 10.0
    runs[4]["windows"] = [
        [0.0, 20.0, "out of regime"],
        [10.0, 40.0, "fails"],
        [20.0, 40.0, "holds"],
    ]
    runs[4]["window_reasons"] = ["off", BEATEN, "R² ≥ 0.99"]
    runs[4]["forecast"]["origins"][0]["cut"] = 5.0  # before the regime's start
    runs[4]["forecast"]["origins"][0]["miss"] = "degenerate"
    runs[4]["forecast"]["origins"][0]["fit_reason"] = (
        "alpha0 = 0.0022 is indistinguishable from zero (95% interval -0.1 to 0.1)"
    )
    runs[4]["forecast"]["origins"][1]["cut"] = 30.0
    page = real_runs.render([result])
    assert "Why 4 of 5 runs do not hold" in page
    assert (
        "| fails: R² below the threshold on margin_spread | 2 | `a` 1, `a` 2 | R² 0.487 to 0.8 |"
        in page
    )
    assert (
        "| not distinguished from a power law in training time | 1 | `a` 3 "
        "| held-out error ratio 1.15 |" in page
    )
    assert (
        "| out of regime as a whole; its window 10-40: fails: beaten by a sum of two "
        "exponentials (in-sample and held out) | 1 | `a` 4 | held-out error ratio 19.7 |"
    ) in page
    # outcomes: won 2 (both in regime), behind both 3, degenerate 1 (before the regime)
    assert "| `won` | RMSE 0.5 × the last value's, 0.8 × the power law's | 2 | 2 |" in page
    assert "| `behind both` | RMSE 2 × the last value's, 1 × the power law's | 3 | 3 |" in page
    assert "| `degenerate` | alpha0 indistinguishable from zero (1) | 1 | 0 |" in page
    # results stored before the origins kept their skills: the counts, without why
    for r in runs:
        for o in r["forecast"]["origins"]:
            del o["worst_skill"], o["fit_reason"]
    assert "| `won` |  | 2 | 2 |" in real_runs.render([result])


def test_a_window_of_a_stream_in_regime_from_its_start_is_not_counted():
    """Item 9 counts `holds in a window` only where the regime starts late; a stream in regime
    from its first record that holds only on a window is described in part, not whole."""
    result = _result(["holds", "holds in a window", "holds in a window"], [[True], [True], [True]])
    result["runs"][2]["regime_start"] = 10.0  # regime starts after the first record (0)
    s = real_runs.summarise(result)
    assert (s["n_hold"], s["n_windows_in_regime"]) == (2, 1)
    page = real_runs.render([result])
    assert "in 2 of 3 runs, two thirds needed: **met** (1 more hold only in a window" in page


def test_a_run_held_only_in_a_window_of_an_in_regime_stream_is_among_those_that_do_not_hold():
    """The why-not table counts the runs the target does not: a window that holds on a stream
    in regime from its first record is grouped by its whole stream's reason."""
    result = _result(["holds", "holds in a window"], [[True], [True]])
    result["runs"][1]["reason"] = (
        "holds on steps 20 to 40 (5 records; 1 of 4 windows tried hold); on the whole stream "
        "fails: margin_spread: R² 0.5 < 0.9 on its scale"
    )
    page = real_runs.render([result])
    assert "Why 1 of 2 runs do not hold" in page
    assert "| held only in a window; on the whole stream fails: R² below the threshold" in page


def test_a_stream_out_of_regime_judged_on_a_window_is_explained_by_that_window():
    """The engine gives a stream out of regime as a whole the verdict of the window it tested
    (``fails`` with the window named): the page explains it by that window, not by the whole
    reason's text (whose patterns are anchored at the window's own reason)."""
    run = {
        "verdict": "fails",
        "reason": f"fails on steps 10 to 40, inside its regime (6 records; 0 of 2 windows "
        f"tried hold, ...): {BEATEN}; the whole stream is out of regime: off",
        "window": [10.0, 40.0],
        "regime_start": None,  # e.g. a stretch between two learning-rate drops
        "windows": [[0.0, 20.0, "out of regime"], [0.0, 9.0, "fails"], [10.0, 40.0, "fails"]],
        "window_reasons": ["off", "margin_spread: R² 0.4875 < 0.9 on its scale", BEATEN],
    }
    family, value = real_runs.why_not(run)
    assert family == (
        "out of regime as a whole; its window 10-40: fails: beaten by a sum of two "
        "exponentials (in-sample and held out)"
    )
    assert value == ("held-out error ratio", 19.7)
    whole = dict(run, window=None, reason=BEATEN)  # a whole stream that fails: its own reason
    assert (
        real_runs.why_not(whole)[0]
        == "fails: beaten by a sum of two exponentials (in-sample and held out)"
    )
