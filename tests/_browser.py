"""Render an HTML report in headless Chromium and check its layout (a test helper).

Any test file can use it (``tests/`` is on ``sys.path`` through its ``conftest.py``)::

    from _browser import check_page, requires_chromium

    @requires_chromium
    def test_my_report_fits(tmp_path):
        page = check_page(path_to_html, screenshot=tmp_path / "page.png")
        assert page.ok, page.problems()

API
---
``chromium() -> str | None``
    The Chromium executable (``chromium``, ``chromium-browser``, ``google-chrome``), or None.
``requires_chromium``
    A ``pytest.mark.skipif`` that skips with a clear message when there is none.
``check_page(html, *, width=1400, height=1000, screenshot=None, timeout=60) -> PageCheck``
    Loads ``html`` (a file) at ``width`` px and measures, after the page's ``load`` event:
    ``document.documentElement.scrollWidth``, every element whose box reaches past the
    viewport (unless a scrolling or clipping ancestor holds it), and every ``<img>``'s
    ``complete`` and ``naturalWidth``. With ``screenshot`` it also saves a PNG of the first
    ``height`` px. Each Chromium call gets a fresh ``--user-data-dir`` in a temporary folder,
    a virtual-time budget and a timeout.

How: a copy of the page with a small script appended is written beside the original (so
relative links and images resolve the same way), dumped with ``--dump-dom`` and removed; the
script writes its measurements as JSON into a ``<pre>`` that the dump carries.
"""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
import tempfile
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

__all__ = ["PageCheck", "check_page", "chromium", "requires_chromium"]

_RESULT_ID = "ncdyn-layout-check"

_SCRIPT = """<script>
window.addEventListener('load', () => {
  const vw = window.innerWidth;
  const clipped = (el) => {
    for (let p = el.parentElement; p && p !== document.body; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o !== 'visible') return true;
    }
    return false;
  };
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '') +
    (typeof el.className === 'string' && el.className
      ? '.' + el.className.split(' ').join('.') : '');
  const wide = [], held = [];
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if ((r.right > vw + 1 || r.left < -1) && r.width > 0) {
      (clipped(el) ? held : wide).push([describe(el), Math.round(r.left), Math.round(r.right)]);
    }
  }
  const imgs = [...document.images].map(i => [i.getAttribute('src').slice(0, 80),
                                             i.complete, i.naturalWidth]);
  const pre = document.createElement('pre');
  pre.id = '__RESULT_ID__';
  pre.textContent = JSON.stringify({viewport: vw,
    scrollWidth: document.documentElement.scrollWidth, wide: wide, held: held,
    images: imgs});
  document.body.appendChild(pre);
});
</script>""".replace("__RESULT_ID__", _RESULT_ID)


def chromium() -> str | None:
    """The path of a Chromium (or Chrome) executable, or ``None``."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


requires_chromium = pytest.mark.skipif(
    chromium() is None,
    reason="no Chromium executable on PATH (install `chromium` to run the layout checks)",
)


@dataclass(frozen=True)
class PageCheck:
    """What Chromium measured on one page.

    Attributes
    ----------
    path : Path
    viewport : int
        ``window.innerWidth`` (the ``width`` asked for).
    scroll_width : int
        ``document.documentElement.scrollWidth``; above ``viewport``, the page scrolls sideways.
    wide : list of (element, left, right)
        Elements reaching past the viewport that no scrolling ancestor holds.
    held : list of (element, left, right)
        Elements reaching past the viewport inside a scrolling (or clipping) ancestor: the
        page does not overflow, but part of that box needs a sideways scroll to be seen.
    images : list of (src head, complete, naturalWidth)
    screenshot : Path or None
    """

    path: Path
    viewport: int
    scroll_width: int
    wide: list[tuple[str, int, int]] = field(default_factory=list)
    held: list[tuple[str, int, int]] = field(default_factory=list)
    images: list[tuple[str, bool, int]] = field(default_factory=list)
    screenshot: Path | None = None

    @property
    def broken_images(self) -> list[str]:
        return [src for src, complete, width in self.images if not (complete and width > 0)]

    @property
    def ok(self) -> bool:
        """Nothing overflows the viewport and every image loaded."""
        return self.scroll_width <= self.viewport and not self.wide and not self.broken_images

    @property
    def fits(self) -> bool:
        """:attr:`ok`, and nothing is held in a sideways-scrolling box either."""
        return self.ok and not self.held

    def problems(self) -> str:
        """A readable list of what failed (for assertion messages)."""
        out = []
        if self.scroll_width > self.viewport:
            out.append(f"page is {self.scroll_width} px wide at a {self.viewport} px viewport")
        out += [f"{el} spans {left}..{right} px" for el, left, right in self.wide[:10]]
        out += [
            f"{el} spans {left}..{right} px in a scrolling box" for el, left, right in self.held[:5]
        ]
        out += [f"image did not load: {src}" for src in self.broken_images[:10]]
        return f"{self.path}: " + ("; ".join(out) or "no problem")


def _run(args: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    with tempfile.TemporaryDirectory(prefix="ncdyn-chromium-") as profile:
        exe = chromium()
        if exe is None:
            raise RuntimeError("no Chromium executable on PATH")
        base = [
            exe,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
            f"--user-data-dir={profile}",
        ]
        return subprocess.run(
            base + args, capture_output=True, text=True, timeout=timeout, check=False
        )


def check_page(
    page: str | Path,
    *,
    width: int = 1400,
    height: int = 1000,
    screenshot: str | Path | None = None,
    timeout: float = 60.0,
) -> PageCheck:
    """Load ``page`` in headless Chromium at ``width`` px and measure its layout.

    Raises
    ------
    FileNotFoundError
        If ``page`` is not a file.
    RuntimeError
        If Chromium gives no measurement (its stderr is in the message).
    """
    page = Path(page)
    if not page.is_file():
        raise FileNotFoundError(f"`page` must be an HTML file; got {str(page)!r}.")
    text = page.read_text()
    marked = re.sub(r"</body>", _SCRIPT + "</body>", text, count=1, flags=re.I)
    if marked == text:
        marked = text + _SCRIPT
    probe = page.with_name(f".layout-check-{uuid.uuid4().hex}.html")
    probe.write_text(marked)
    try:
        done = _run(
            [
                f"--window-size={width},{height}",
                "--virtual-time-budget=5000",
                "--dump-dom",
                probe.as_uri(),
            ],
            timeout,
        )
    finally:
        probe.unlink(missing_ok=True)
    found = re.search(rf'<pre id="{_RESULT_ID}">(.*?)</pre>', done.stdout, re.S)
    if not found:
        raise RuntimeError(
            f"Chromium gave no layout measurement for {page} (exit {done.returncode}): "
            f"{done.stderr.strip()[-800:]}"
        )
    result = json.loads(html.unescape(found.group(1)))
    shot = None
    if screenshot is not None:
        shot = Path(screenshot)
        _run([f"--window-size={width},{height}", f"--screenshot={shot}", page.as_uri()], timeout)
        if not shot.is_file():
            raise RuntimeError(f"Chromium wrote no screenshot of {page} to {shot}.")
    return PageCheck(
        path=page,
        viewport=int(result["viewport"]),
        scroll_width=int(result["scrollWidth"]),
        wide=[(str(e), int(a), int(b)) for e, a, b in result["wide"]],
        held=[(str(e), int(a), int(b)) for e, a, b in result["held"]],
        images=[(str(s), bool(c), int(w)) for s, c, w in result["images"]],
        screenshot=shot,
    )
