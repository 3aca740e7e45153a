"""``ncdyn report --compare`` on the README's own sweep reads at a glance (issue 30, item 3):
legends name the settings that differ (``lr=0.05 (2 seeds) · mse``), derived and nested
copies left out; figures stay within 1400 px with one legend outside the panels."""

from __future__ import annotations

import struct
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

from _browser import check_page, requires_chromium
from ncdynamics import report, runs
from ncdynamics.report.figures import differing_settings


def _config(lr: float) -> dict[str, object]:
    stream = {"loss": "", "lr": lr, "momentum": 0.9, "optimizer": "sgd", "milestones": []}
    return {
        "epochs": 4,
        "lr": lr,
        "width": 32,
        "losses": ["mse", "cross-entropy"],
        "streams": {
            "mse": {**stream, "loss": "mse"},
            "cross-entropy": {**stream, "loss": "cross-entropy"},
        },
    }


def _sweep(root: Path) -> list[runs.Run]:
    made = []
    for lr in (0.01, 0.05):
        for seed in (0, 1):
            run = runs.create(
                root / f"lr={lr}" / f"seed={seed}", config=_config(lr), seed=seed, experiment="demo"
            )
            for t in range(5):
                for prefix in ("mse/", "cross-entropy/"):
                    run.log(
                        t,
                        {
                            f"{prefix}nc/nc1": (1 + seed) * np.exp(-lr * t),
                            f"{prefix}nc/nc2_etf": 1 / (1 + t),
                            f"{prefix}nc/nc3": 0.5 / (1 + t),
                            f"{prefix}nc/nc4": 0.1 / (1 + t),
                        },
                    )
            run.finish()
            made.append(run)
    return made


def _png_width(path: Path) -> int:
    with open(path, "rb") as fh:
        head = fh.read(24)
    return int(struct.unpack(">I", head[16:20])[0])


def test_differing_settings_leave_out_derived_and_nested_copies() -> None:
    configs = [_config(0.01), _config(0.05)]
    assert differing_settings(configs) == ["lr"]
    configs[1]["width"] = 64
    assert differing_settings(configs) == ["lr", "width"]


def test_legends_name_the_settings_that_differ(tmp_path: Path) -> None:
    figs = report.comparison_figures(_sweep(tmp_path))
    labels = set()
    for _, fig in figs:
        assert not any(ax.get_legend() for ax in fig.axes)  # one legend, below the panels
        (legend,) = fig.legends
        labels |= {t.get_text() for t in legend.get_texts()}
        plt.close(fig)
    assert labels == {
        "lr=0.01 (2 seeds) · mse",
        "lr=0.05 (2 seeds) · mse",
        "lr=0.01 (2 seeds) · cross-entropy",
        "lr=0.05 (2 seeds) · cross-entropy",
    }


def test_the_comparison_page_fits_1400_px(tmp_path: Path) -> None:
    made = _sweep(tmp_path / "sweep")
    page = report.write_comparison_report(made, tmp_path / "cmp")
    html = Path(page).read_text()
    assert "streams" not in html.split("<h2>")[0]  # the head names groups, not config dicts
    for png in (tmp_path / "cmp" / "figures").glob("*.png"):
        assert _png_width(png) <= 1400, png.name


@requires_chromium
def test_the_comparison_page_in_a_browser(tmp_path: Path) -> None:
    made = _sweep(tmp_path / "sweep")
    page = report.write_comparison_report(made, tmp_path / "cmp")
    check = check_page(Path(page), width=1400, screenshot=tmp_path / "cmp.png")
    assert check.ok, check.problems()
    assert all(w <= 1400 for _, _, w in check.images)
