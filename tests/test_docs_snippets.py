"""Every ```python block of README.md and docs/ runs, unless marked ``<!-- not-run: why -->``.

The blocks of one page run in order in one namespace (a page reads like a notebook), in a
temporary working directory, so ``runs/...`` paths land there. A block that cannot run here
(it needs CUDA, the network, an optional extra or files of the reader's) is marked with an
HTML comment ``<!-- not-run: reason -->`` on the line just before its fence; the reason must
be given. docs/extending.md has its own test (tests/test_docs_extending.py): its blocks are
the files of a toy theory package, run as that package.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
OWN_TEST = {"docs/extending.md"}  # covered by tests/test_docs_extending.py
PAGES = sorted(
    str(p.relative_to(ROOT))
    for p in [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]
    if "```python" in p.read_text() and str(p.relative_to(ROOT)) not in OWN_TEST
)
_BLOCK = re.compile(
    r"(?:<!--\s*not-run:(?P<reason>[^>]*)-->\s*\n)?```python\n(?P<code>.*?)```", re.S
)


def blocks(text: str) -> list[tuple[str | None, str]]:
    """``(not-run reason or None, code)`` for each python block of ``text``."""
    return [
        (m["reason"].strip() if m["reason"] is not None else None, m["code"])
        for m in _BLOCK.finditer(text)
    ]


def test_the_marker_is_read_and_needs_a_reason():
    text = "a\n<!-- not-run: needs CUDA -->\n```python\nx = 1\n```\n```python\ny = 2\n```\n"
    assert blocks(text) == [("needs CUDA", "x = 1\n"), (None, "y = 2\n")]
    assert blocks("<!-- not-run: -->\n```python\nz\n```")[0][0] == ""


def test_every_page_with_python_is_covered():
    assert "README.md" in PAGES and "docs/runs.md" in PAGES
    for page in OWN_TEST:
        assert (ROOT / page).is_file()


@pytest.mark.parametrize("page", PAGES)
def test_page_snippets_run(page, tmp_path, monkeypatch):
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    slug = re.sub(r"\W", "_", page)
    module = types.ModuleType(f"docs_snippets_{slug}")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look it up
    ran = 0
    for index, (reason, code) in enumerate(blocks((ROOT / page).read_text())):
        if reason is not None:
            assert reason, f"{page} block {index}: `<!-- not-run: -->` must give a reason"
            continue
        exec(compile(code, f"{page}[{index}]", "exec"), module.__dict__)
        ran += 1
    assert ran or all(r for r, _ in blocks((ROOT / page).read_text()))
