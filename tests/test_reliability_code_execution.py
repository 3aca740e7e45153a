"""Nothing from a run directory or a dataset file runs code (issue 16, items 5 and 6).

- Item 5: the CIFAR-10 reader unpickles only what the real batches hold (dicts, lists, bytes,
  str, int and numpy arrays); any other global is refused in one line naming the file, and a
  malicious pickle executes nothing.
- Item 6: every report (run, index, compare, forecast, sweep) escapes each value that comes
  from a run directory, in text and in attributes, and links only to relative, quoted paths.
"""

import json
import os
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import numpy as np
import pandas as pd
import pytest

from cifar_format import py2_pickle
from ncdynamics import data, report, runs
from ncdynamics.experiments.compare import compare
from ncdynamics.experiments.forecast import forecast
from ncdynamics.theories.lesde.model import d_vectors

# ---------------------------------------------------------------------------- item 6: HTML
SCRIPT = "<script>alert(1)</script>"
BREAKOUT = '"><img src=x onerror=alert(1)>'
QUOTE = "' onmouseover='alert(1)"
SCHEME = "javascript:alert(1)"
HOSTILE = (SCRIPT, BREAKOUT, QUOTE, SCHEME)
# directory names cannot hold '/'
HOSTILE_NAMES = ("<script>alert(1)<", BREAKOUT, QUOTE, SCHEME)

_TAGS = {
    "html", "head", "meta", "title", "style", "body", "h1", "h2", "p", "code", "table", "tr",
    "th", "td", "figure", "img", "figcaption", "pre", "a", "span",
}  # fmt: skip
_ATTRS = {"lang", "charset", "class", "alt", "src", "href"}


class _Page(HTMLParser):
    """Every start tag with its attributes, and the text a browser would show."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, list[tuple[str, str | None]]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, attrs))

    def handle_data(self, data):
        self.text.append(data)


def assert_inert(page: Path, shown: tuple[str, ...] = ()) -> str:
    """No active content in ``page``; each string of ``shown`` appears as text. Returns text."""
    parser = _Page()
    parser.feed(page.read_text())
    for tag, attrs in parser.tags:
        assert tag in _TAGS, f"unexpected <{tag}> in {page}"
        for name, value in attrs:
            assert name in _ATTRS, f"unexpected attribute {name}={value!r} on <{tag}> in {page}"
            if name == "href":
                parts = urlsplit(value or "")
                assert parts.scheme == "" and not parts.netloc, f"href {value!r} in {page}"
                assert not (value or "").startswith("/"), f"absolute href {value!r} in {page}"
            if name == "src":
                ok = (value or "").startswith("data:image/png;base64,")
                assert ok or urlsplit(value or "").scheme == "", f"src {value!r} in {page}"
    text = "".join(parser.text)
    for s in shown:
        assert s in text, f"{s!r} is not shown as text in {page}"
    return text


def _hostile_run(path: Path, tag: int = 0) -> runs.Run:
    """A run whose every field the report shows holds a hostile string."""
    h = HOSTILE
    config = {h[0]: h[1], "opt": h[2], "lst": [h[3]]}
    run = runs.create(path, config=config, experiment=h[tag % 4], preset=h[1], seed=0)
    for step in range(3):
        run.log(step, {f"{h[1]}/{h[0]}": 1.0 + step, f"{SCHEME}": 2.0 - step})
    run.mark_completed()
    status = json.loads((path / "status.json").read_text())
    status.update(state=h[2], host=h[0], started=h[1], error=h[0], versions={h[0]: h[3]})
    (path / "status.json").write_text(json.dumps(status))
    summary = {
        "table": {h[0]: {h[1]: 1.0, h[2]: h[3]}},
        "claims": [{"claim": h[0], "ours": h[1], "held": h[2]}],
        h[3]: h[0],
    }
    (path / "summary.json").write_text(json.dumps(summary))
    (path / "figures").mkdir(exist_ok=True)
    (path / "figures" / f"{HOSTILE_NAMES[0]}.png").write_bytes(b"\x89PNG not really")
    return run


def test_run_report_escapes_every_field(tmp_path):
    run = _hostile_run(tmp_path / "run")
    page = report.write_report(run)
    text = assert_inert(page, HOSTILE)
    assert f"{HOSTILE_NAMES[0]}" in text  # the figure's name, as a caption


def test_run_report_of_a_hostile_directory_name(tmp_path):
    for i, name in enumerate(HOSTILE_NAMES):
        page = report.write_report(_hostile_run(tmp_path / name, i))
        assert_inert(page, (name,))


def _hostile_sweep(path: Path) -> Path:
    """A sweep directory (sweep.json, table.parquet) whose settings and rows are hostile."""
    from ncdynamics.experiments.sweep import SWEEP_FORMAT_VERSION

    path.mkdir(parents=True)
    h = HOSTILE
    meta = {
        "format_version": SWEEP_FORMAT_VERSION,
        "experiment": h[0],
        "preset": h[1],
        "grid": {h[2]: [h[0], h[1]]},
        "seeds": [0],
        "overrides": {h[3]: h[0]},
        "runs": {name: {"values": {h[2]: h[0]}, "seed": 0} for name in HOSTILE_NAMES},
    }
    (path / "sweep.json").write_text(json.dumps(meta))
    rows = [
        {"run_id": name, h[2]: h[i], "seed": 0, "status": h[1], "attempts": 1, "error": h[0]}
        for i, name in enumerate(HOSTILE_NAMES)
    ]
    pd.DataFrame(rows).to_parquet(path / "table.parquet", index=False)
    pd.DataFrame(rows).to_csv(path / "table.csv", index=False)
    for i, name in enumerate(HOSTILE_NAMES):  # each run with its own report to link to
        report.write_report(_hostile_run(path / name, i), draw=False)
    return path


def test_sweep_report_escapes_settings_rows_and_links(tmp_path):
    sweep = _hostile_sweep(tmp_path / "sweep")
    page = report.write_sweep_report(sweep)
    assert_inert(page, HOSTILE)
    links = [a for t, attrs in _tags(page) if t == "a" for k, a in attrs if k == "href"]
    run_links = [unquote(a) for a in links if a.endswith("/report.html")]
    assert sorted(run_links) == sorted(f"{n}/report.html" for n in HOSTILE_NAMES)
    for a in links:
        assert (sweep / unquote(a)).is_file(), a


def _tags(page: Path) -> list[tuple[str, list[tuple[str, str | None]]]]:
    parser = _Page()
    parser.feed(page.read_text())
    return parser.tags


def test_index_escapes_names_and_never_links_a_scheme(tmp_path):
    root = tmp_path / "root"
    for i, name in enumerate(HOSTILE_NAMES):
        run = _hostile_run(root / name, i)
        report.write_report(run, draw=False)
        fc = run.path / f"forecast-{name}"
        fc.mkdir()
        (fc / "report.html").write_text("<p>forecast</p>")
    _hostile_sweep(root / f"sweep-{HOSTILE_NAMES[1]}")
    page = report.write_index(root)
    assert_inert(page, HOSTILE_NAMES)
    links = [a for t, attrs in _tags(page) if t in ("a", "img") for k, a in attrs if k in _ATTRS]
    targets = [a for a in links if a and not a.startswith("data:") and "/" in a]
    assert len(targets) >= 2 * len(HOSTILE_NAMES)
    for a in targets:
        assert (root / unquote(a)).exists(), a


def _hostile_stream_run(path: Path) -> runs.Run:
    """A run the L-model fits, under a stream prefix that is a hostile string."""
    prefix = BREAKOUT
    run = runs.create(path)
    d = d_vectors(4)
    b0 = np.linspace(-1.0, 1.0, 4)
    for t in range(0, 41, 4):
        s = 2.0 * np.exp(0.05 * t) + b0 * np.exp(0.02 * t)
        folder = path / "arrays" / f"{prefix}.class_means_logits"  # as a crafted run holds it
        folder.mkdir(parents=True, exist_ok=True)
        np.save(folder / f"{t:09d}.npy", s[:, None] * d)
        run.log(t, {f"{prefix}/probe/loss": 1.0 / (t + 1)})
    run.mark_completed()
    return run


@pytest.mark.parametrize("command", ["compare", "forecast"])
def test_compare_and_forecast_reports_escape_streams_and_run_path(tmp_path, command):
    run = _hostile_stream_run(tmp_path / HOSTILE_NAMES[0])
    if command == "compare":
        entries = compare(run)
        assert any(e.stream == f"{BREAKOUT}/" and e.status == "fitted" for e in entries)
        page = report.write_compare_report(entries, run.path, tmp_path / "out")
    else:
        entries = forecast(run, 0.5)
        page = report.write_forecast_report(entries, run.path, tmp_path / "out", 0.5)
    assert_inert(page, (BREAKOUT, HOSTILE_NAMES[0]))


# ---------------------------------------------------------------------------- item 5: pickle
class _Exploit:
    """Unpickling this creates a file (what an attacker's batch would do)."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (Path.write_text, (self.target, "pwned"))


class _ExploitOs:
    def __init__(self, target: Path) -> None:
        self.target = target

    def __reduce__(self):
        return (os.system, (f"touch {self.target}",))


def _cifar_dir(root: Path, rng, batch_1=None) -> Path:
    """CIFAR-10 batches as the real files store them (protocol 2, bytes keys, uint8 data)."""
    base = root / "cifar-10-batches-py"
    base.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {
            b"batch_label": b"training batch 1 of 5",
            b"labels": [int(v) for v in rng.integers(0, 10, 4)],
            b"data": rng.integers(0, 256, (4, 3072)).astype(np.uint8),
            b"filenames": [b"a.png", b"b.png", b"c.png", b"d.png"],
        }
        blob = py2_pickle(entry)
        if name == "data_batch_1" and batch_1 is not None:
            blob = batch_1
        (base / name).write_bytes(blob)
    return base


def test_real_layout_cifar_batches_still_load(tmp_path, rng):
    _cifar_dir(tmp_path, rng)
    ds = data.load("cifar10", root=tmp_path)
    assert ds.x_train.shape == (20, 3, 32, 32) and ds.y_train.dtype == np.int64


@pytest.mark.parametrize("module", [b"numpy.core.multiarray", b"numpy._core.multiarray"])
def test_numpy_1_and_2_spellings_of_reconstruct_are_accepted(tmp_path, rng, module):
    entry = {b"labels": [1, 2], b"data": np.zeros((2, 3072), np.uint8)}
    blob = py2_pickle(entry).replace(b"cnumpy.core.multiarray\n", b"c" + module + b"\n")
    assert b"c" + module + b"\n_reconstruct" in blob
    _cifar_dir(tmp_path, rng, batch_1=blob)
    assert data.load("cifar10", root=tmp_path).x_train.shape == (18, 3, 32, 32)


@pytest.mark.parametrize(
    ("payload", "match"),
    [
        (lambda t: {b"data": _Exploit(t), b"labels": []}, r"__builtin__\.getattr"),
        (lambda t: {b"data": _ExploitOs(t), b"labels": []}, r"(posix|os)\.system"),
        (lambda t: [_Exploit(t)], r"__builtin__\.getattr"),
    ],
)
def test_malicious_cifar_batch_runs_nothing(tmp_path, rng, payload, match):
    target = tmp_path / "pwned"
    base = _cifar_dir(tmp_path / "c", rng, batch_1=py2_pickle(payload(target)))
    with pytest.raises(ValueError, match=rf"data_batch_1.*refuses.*{match}") as info:
        data.load("cifar10", root=tmp_path / "c")
    assert str(base / "data_batch_1") in str(info.value) and "\n" not in str(info.value)
    assert not target.exists()
