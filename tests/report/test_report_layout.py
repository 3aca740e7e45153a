"""Every report fits a 1400 px browser window and every image loads (headless Chromium).

Renders the demo report, a sweep report, a multi-run comparison, the index, and the
compare, forecast and many-run summary reports of ``ncdyn compare``/``forecast`` with
:mod:`_browser` (skipped when no Chromium is installed) and keeps a screenshot of each in
the test's temporary folder.
"""

import numpy as np
import pytest

from _browser import check_page, requires_chromium
from ncdynamics import experiments, report, runs

SMALL = {"epochs": 3, "depth": 1, "width": 16}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    root = tmp_path_factory.mktemp("layout")
    demo = experiments.run("demo", "smoke", root / "demo", progress=False, **SMALL)
    with experiments.LocalExecutor(workers=1) as ex:
        res = experiments.sweep(
            "demo",
            "smoke",
            root / "sweep",
            grid={"width": [16, 24]},
            overrides={"epochs": 2, "depth": 1},
            executor=ex,
        )
    own = []
    for seed in range(3):  # the user's own runs, long names and several prefixes
        run = runs.create(root / f"own-run-with-a-long-name-{seed}", config={"lr": 0.1}, seed=seed)
        for t in range(40):
            run.log(
                t,
                {
                    f"{p}/{k}": float(np.exp(-0.1 * t) * (1 + seed))
                    for p in ("adam-with-warmup", "sgd-momentum-0.9")
                    for k in ("nc/nc1", "nc/nc2_etf", "test/accuracy", "train/loss")
                },
            )
        run.flush()
        run.mark_completed()
        report.write_report(run)
        own.append(run)
    fitted = experiments.run(  # long enough for fits, windows and forecast origins
        "demo",
        "smoke",
        root / "fitted",
        progress=False,
        epochs=12,
        depth=1,
        width=16,
        milestones=(100,),
    )
    from ncdynamics.experiments.compare import compare
    from ncdynamics.experiments.compare_many import compare_runs
    from ncdynamics.experiments.forecast import forecast

    entries = compare(fitted, force=True)
    return {
        "compare": report.write_compare_report(entries, fitted.path, root / "fitted" / "compare"),
        "forecast": report.write_forecast_report(
            forecast(fitted, 0.5, force=True), fitted.path, root / "forecast", 0.5
        ),
        "summary": report.write_summary_report(compare_runs([res.path]), root / "summary"),
        "demo": report.write_report(demo),
        "sweep": report.write_sweep_report(res.path),
        "comparison": report.write_comparison_report([*own, demo], root / "comparison"),
        "index": report.write_index(root),
    }


@requires_chromium
@pytest.mark.parametrize(
    "name", ["demo", "sweep", "comparison", "index", "compare", "forecast", "summary"]
)
def test_report_fits_1400_px_and_every_image_loads(pages, name, tmp_path):
    shot = tmp_path / f"{name}.png"
    page = check_page(pages[name], width=1400, screenshot=shot)
    assert page.viewport == 1400
    assert page.fits, page.problems()
    if name != "summary":  # the many-run summary is a table only
        assert page.images, f"{name} shows no image"
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@requires_chromium
def test_the_check_sees_an_overflowing_page_and_a_broken_image(tmp_path):
    bad = tmp_path / "bad.html"
    bad.write_text(
        '<!DOCTYPE html><html><body><table><tr><td style="white-space:nowrap">'
        + "x" * 600
        + '</td></tr></table><img src="missing.png" alt="gone"></body></html>'
    )
    page = check_page(bad)
    assert not page.ok and page.scroll_width > 1400 and page.wide
    assert page.broken_images == ["missing.png"]


def test_index_names_own_runs_and_shows_their_last_metrics(pages):
    root = pages["index"].parent
    entries = {e.path.as_posix(): e for e in report.find_entries(root)}
    own = entries["own-run-with-a-long-name-0"]
    assert (own.experiment, own.preset) == ("own run", "-")
    values = {(p, k): v for p, k, v in own.metrics}
    assert values[("adam-with-warmup", "nc/nc1")] == pytest.approx(np.exp(-3.9))
    assert [f.name for f in own.figures] == ["overview.png"]
    assert [f.name for f in entries["sweep"].figures] == ["overview.png"]
    text = pages["index"].read_text()
    assert "NC1<span" in text and "own run" in text
