"""The compare page shows what the terminal shows (issue 30, item 4): every declared
assumption, the per-window verdicts as a table (and a figure when nothing was fitted),
intervals the records do not bound as "not determined", and legible figures."""

from __future__ import annotations

import html
import math
import struct
from pathlib import Path

import pytest

from _browser import check_page, requires_chromium
from ncdynamics import experiments, report, theories
from ncdynamics.experiments.compare import compare
from ncdynamics.report.confront import interval_determined


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("compare-page")
    run = experiments.run(
        "demo", "smoke", root / "demo", progress=False, epochs=12, depth=1, width=16
    )
    entries = compare(run)
    return Path(report.write_compare_report(entries, run.path, root / "demo" / "compare"))


def test_every_declared_assumption_is_listed(page: Path) -> None:
    text = page.read_text()
    declared = 0
    for name in theories.available():
        conf = theories.get(name).load_confrontation()
        for a in conf.assumptions if conf is not None else ():
            assert html.escape(a.statement, quote=True) in text, (name, a.name)
            declared += 1
    assert declared and "declares no assumptions" not in text


def test_each_theory_section_heads_with_its_citation(page: Path) -> None:
    """A verdict reason that cites "[1]" resolves on the page: each theory's section opens
    with its declaration's citation, marked [1]."""
    text = page.read_text()
    sections = text.split('<h2 class="theory">')[1:]
    assert sections
    for section in sections:
        name = section.split("</h2>", 1)[0]
        cited = html.escape(theories.get(name).citation, quote=True)
        head = section.split('<p class="stream">', 1)[0]
        assert f"[1] {cited}" in head, name


def test_window_verdicts_are_a_table(page: Path) -> None:
    text = page.read_text()
    assert "<th>window (epochs)</th>" in text  # the demo's steps are its epochs


@pytest.mark.parametrize(
    ("lo", "hi", "value", "determined"),
    [
        (0.5, 2.0, 1.0, True),
        (-3.0, 3.0, 0.0, True),
        (5.5e-96, 7.3e100, 1.0, False),
        (0.0, math.inf, 1.0, False),
        (math.nan, 1.0, 1.0, False),
        (1e-8, 2.0, 1.0, False),
    ],
)
def test_unbounded_intervals_are_not_determined(lo, hi, value, determined) -> None:
    assert interval_determined(lo, hi, value) is determined


def test_figures_fit_the_text_column(page: Path) -> None:
    for png in (page.parent / "figures").glob("*.png"):
        with open(png, "rb") as fh:
            width = struct.unpack(">I", fh.read(24)[16:20])[0]
        assert width <= 1060, png.name


@requires_chromium
def test_the_compare_page_in_a_browser(page: Path, tmp_path: Path) -> None:
    check = check_page(page, width=1400, screenshot=tmp_path / "compare.png")
    assert check.ok, check.problems()


def test_the_run_report_links_to_its_compare_page(page: Path) -> None:
    run_dir = page.parent.parent
    report.write_report(run_dir)  # written after compare: the link is there
    assert 'href="compare/report.html"' in (run_dir / "report.html").read_text()
    # a report written before compare gets the link when compare writes its page
    text = (run_dir / "report.html").read_text()
    (run_dir / "report.html").write_text(
        text.replace('<a href="compare/report.html">compare</a> (theory against run)', "")
    )
    entries = compare(run_dir)
    report.write_compare_report(entries, run_dir, run_dir / "compare")
    assert 'href="compare/report.html"' in (run_dir / "report.html").read_text()
