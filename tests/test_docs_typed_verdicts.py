"""Typed result tables in docs/theories/*.md agree with the generated claims record.

A results table whose first column names an experiment (`theory.name`) and whose last column
is headed "held" must open that cell with the verdict the claims record
(docs/theories/claims-cpu.json, over its seeds) gives the experiment: "held" when every part
held in every seed, else "k/n parts held in every seed". Free text may follow. A typed "yes"
can thus no longer stand beside a part that fails in some seed (issue 29, deliver 5).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "theories"
ROW = re.compile(r"^\|\s*`([a-z_]+\.[a-z0-9_-]+)`[^|]*\|")


def verdicts() -> dict[str, str]:
    """The generated verdict of each experiment in claims-cpu.json."""
    parts: dict[str, list[bool]] = defaultdict(list)
    for row in json.loads((DOCS / "claims-cpu.json").read_text()):
        parts[row["experiment"]].append(all(row["held"]))
    return {
        e: "held" if all(v) else f"{sum(v)}/{len(v)} parts held in every seed"
        for e, v in parts.items()
    }


def typed_rows() -> list[tuple[str, int, str, str]]:
    """(page, line, experiment, last cell) of every row of a table whose last header is held."""
    out = []
    for page in sorted(DOCS.glob("*.md")):
        last_header = None
        for n, line in enumerate(page.read_text().splitlines(), start=1):
            if not line.startswith("|"):
                last_header = None
                continue
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if last_header is None:
                last_header = cells[-1].lower()
                continue
            m = ROW.match(line)
            if last_header == "held" and m:
                out.append((page.name, n, m.group(1), cells[-1]))
    return out


def test_typed_held_cells_open_with_the_generated_verdict():
    want = verdicts()
    rows = typed_rows()
    assert rows, "no typed results table found"
    bad = [
        f"{page}:{n} {exp}: typed {cell!r}, generated {want[exp]!r}"
        for page, n, exp, cell in rows
        if exp in want and not cell.startswith(want[exp])
    ]
    assert not bad, "typed verdicts disagree with claims-cpu.json:\n" + "\n".join(bad)


def test_the_check_catches_a_typed_yes(tmp_path, monkeypatch):
    page = tmp_path / "x.md"
    page.write_text("| experiment | ours | held |\n|---|---|---|\n| `lesde.thm31` | 0.84 | yes |\n")
    (tmp_path / "claims-cpu.json").write_text(
        json.dumps(
            [
                {"experiment": "lesde.thm31", "held": [True, True, True]},
                {"experiment": "lesde.thm31", "held": [False, False, False]},
            ]
        )
    )
    monkeypatch.setattr(__import__(__name__), "DOCS", tmp_path)
    assert verdicts() == {"lesde.thm31": "1/2 parts held in every seed"}
    ((_, _, exp, cell),) = typed_rows()
    assert exp == "lesde.thm31" and not cell.startswith(verdicts()[exp])
