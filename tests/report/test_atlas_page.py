"""The atlas page: escaped, one map per theory, parameters along the axes, 1400 px wide."""

from __future__ import annotations

import struct
from pathlib import Path

import pandas as pd
import pytest

from _browser import check_page, requires_chromium
from ncdynamics.experiments.atlas import (
    ATLAS_FORMAT_VERSION,
    _write_tables,
    aggregate_cells,
    dependence_table,
    read_atlas,
)
from ncdynamics.report import write_atlas_report
from ncdynamics.runs._io import write_json

_HOSTILE = "<script>alert('atlas')</script>"


def _atlas_dir(path: Path) -> Path:
    """An atlas directory written from a made-up run table (no training): two theories,
    a hostile reason and a hostile setting."""
    rows = []
    for lr in (0.05, 0.1, 0.2, 0.4):
        for seed in range(2):
            scale = 1.02 if seed else 0.98
            p = 0.1 * lr * scale
            rows.append(
                {
                    "loss": "mse",
                    "lr": lr,
                    "dataset": "digits",
                    "seed": seed,
                    "theory": "alignment",
                    "stream": "net/",
                    "verdict": "holds" if lr < 0.4 else "fails",
                    "reason": f"R2 fine at lr {lr}" if lr < 0.4 else _HOSTILE,
                    "inv_tau_h": p,
                    "inv_tau_h.low": 0.8 * p,
                    "inv_tau_h.high": 1.2 * p,
                    "inv_tau_y": 2 * p,
                    "inv_tau_y.low": 1.6 * p,
                    "inv_tau_y.high": 2.4 * p,
                }
            )
            rows.append(
                {
                    "loss": "cross-entropy",
                    "lr": lr,
                    "dataset": "<b>bold</b>" if lr == 0.4 else "digits",
                    "seed": seed,
                    "theory": "hadamard",
                    "stream": "net/",
                    "verdict": "out of regime",
                    "reason": "K = 10 is not a power of two",
                }
            )
    table = pd.DataFrame(rows)
    table.attrs["axes"] = ["loss", "lr", "dataset"]
    path.mkdir(parents=True)
    _write_tables(path, table, aggregate_cells(table), dependence_table(table))
    plan = {
        "experiment": "atlas",
        "preset": "smoke",
        "fixed": {},
        "seeds": 2,
        "blocks": [{"name": "core", "axes": {"loss": [], "lr": [], "dataset": []}, "fixed": {}}],
    }
    write_json(path / "atlas.json", {"format_version": ATLAS_FORMAT_VERSION, "plan": plan})
    return path


def _png_width(path: Path) -> int:
    with open(path, "rb") as fh:
        head = fh.read(24)
    return int(struct.unpack(">I", head[16:20])[0])


def test_the_page_escapes_what_it_reads_and_has_a_map_per_theory(tmp_path: Path) -> None:
    path = _atlas_dir(tmp_path / "atlas")
    html = write_atlas_report(path).read_text()
    assert _HOSTILE not in html and "<b>bold</b>" not in html
    assert "&lt;script&gt;alert(&#x27;atlas&#x27;)&lt;/script&gt;" in html
    assert "&lt;b&gt;bold&lt;/b&gt;" in html
    figures = sorted(p.name for p in (path / "figures").glob("*.png"))
    assert figures == [
        "atlas-alignment-map.png",
        "atlas-alignment-params.png",
        "atlas-hadamard-map.png",
    ]
    assert all(_png_width(path / "figures" / f) <= 1400 for f in figures)
    # the summary, the dependence checks and the tables are there
    assert "Where each theory holds" in html
    assert "agrees" in html  # the rates are proportional to lr in the made-up runs
    for name in ("cells.csv", "cells.parquet", "runs.csv", "dependence.csv"):
        assert f'href="{name}"' in html and (path / name).is_file()


def test_reading_a_folder_that_is_no_atlas_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="must be an atlas directory") as info:
        read_atlas(tmp_path)
    assert "\n" not in str(info.value)


@requires_chromium
def test_the_atlas_page_is_readable_at_1400_px(tmp_path: Path) -> None:
    path = _atlas_dir(tmp_path / "atlas")
    page = write_atlas_report(path)
    check = check_page(page, width=1400, screenshot=tmp_path / "atlas.png")
    assert check.ok, check.problems()
    assert check.images and all(ok and w > 0 for _, ok, w in check.images)
