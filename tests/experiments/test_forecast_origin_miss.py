"""The public win rule of a forecast origin (``origin_miss``): each reason code, and that the
forecast verdict counts wins by it."""

from __future__ import annotations

import pytest

from ncdynamics.experiments.forecast import (
    MISS_REASONS,
    NO_WIN_VERDICTS,
    Origin,
    _origins_verdict,
    origin_miss,
)
from ncdynamics.theories.verdict import Verdict


def _rows(*skills):
    """One theory row per observable, with its skill against each baseline, plus a baseline
    row (which never decides)."""
    rows = [
        {"method": "theory (t)", "skill_vs_last_value": last, "skill_vs_power_law": law}
        for last, law in skills
    ]
    return [*rows, {"method": "last value", "rmse": 1.0}]


def _origin(verdict="holds", rows=None):
    return Origin(10.0, "at 0.5", Verdict(verdict, "why"), scores=rows or [])


@pytest.mark.parametrize(
    ("verdict", "rows", "code"),
    [
        ("holds", _rows((0.2, 0.1), (0.01, 0.3)), None),
        ("fails", _rows((0.2, 0.1)), None),  # the fit's own verdict does not decide a win
        ("holds", _rows((0.2, 0.1), (0.0, 0.3)), "behind last value"),
        ("holds", _rows((0.2, -0.1)), "behind power law"),
        ("holds", _rows((-0.2, 0.1), (0.2, float("nan"))), "behind both"),
        ("holds", [{"method": "theory (t)", "skill_vs_last_value": 0.5}], "behind power law"),
        ("holds", [], "not scored"),
        ("holds", [{"method": "last value", "rmse": 1.0}], "not scored"),
        ("degenerate", _rows((0.2, 0.1)), "degenerate"),
        ("error", [], "error"),
        ("out of regime", _rows((0.2, 0.1)), "out of regime"),
    ],
)
def test_origin_miss_gives_each_reason_code(verdict, rows, code):
    got = origin_miss(_origin(verdict, rows))
    assert got == code
    assert got is None or got in MISS_REASONS
    assert set(NO_WIN_VERDICTS) <= set(MISS_REASONS)


def test_forecast_verdict_counts_the_origins_origin_miss_wins():
    won, lost, degenerate = (
        _origin(rows=_rows((0.2, 0.1))),
        _origin(rows=_rows((0.2, -0.1))),
        _origin("degenerate", _rows((0.2, 0.1))),
    )
    v = _origins_verdict([won, lost, degenerate], 12)
    assert (v.verdict, "at 1 of 3 origins" in v.reason) == ("fails", True)
    assert _origins_verdict([won, lost], 12).verdict == "holds"
