import html
import json
import re
import shutil
import subprocess
from pathlib import Path
from urllib.parse import unquote, urlparse

import pytest

from ncdynamics import experiments, report, runs

SMALL = {"epochs": 2, "depth": 1, "width": 16}


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A folder with a sweep of two runs, a lone run, and a run of an old format."""
    root = tmp_path_factory.mktemp("index")
    with experiments.LocalExecutor(workers=1) as ex:
        res = experiments.sweep(
            "demo",
            "smoke",
            root / "sweeps" / "lr",
            grid={"lr": [0.05, 0.1]},
            overrides=SMALL,
            executor=ex,
        )
    for run_id in res.completed:  # reports without figures: enough for links, and quick
        report.write_report(root / "sweeps" / "lr" / run_id, draw=False)
    report.write_sweep_report(root / "sweeps" / "lr")
    lone = experiments.run("demo", "smoke", root / "lone", progress=False, **SMALL)
    report.write_report(lone)
    from ncdynamics.experiments.compare import compare
    from ncdynamics.experiments.forecast import forecast

    report.write_compare_report(compare(lone), lone.path, lone.path / "compare")
    entries = forecast(lone, 0.5)
    report.write_forecast_report(entries, lone.path, lone.path / "forecast-0.5", 0.5)
    old = runs.create(root / "old", config={"a": 1}, experiment="demo", preset="smoke")
    status = old.status
    status.pop("format_version")
    (root / "old" / "status.json").write_text(json.dumps(status))
    return root, report.write_index(root)


def _local_targets(index: Path, attr: str) -> list[str]:
    return re.findall(rf'{attr}="([^"]+)"', index.read_text())


def test_index_lists_everything_and_every_target_exists(tree):
    root, index = tree
    entries = {e.path.as_posix(): e for e in report.find_entries(root)}
    assert set(entries) == {
        "sweeps/lr",
        "sweeps/lr/lr=0.05_seed=0",
        "sweeps/lr/lr=0.1_seed=0",
        "lone",
        "old",
    }
    assert entries["sweeps/lr"].kind == "sweep" and entries["sweeps/lr"].state == "2 completed"
    assert entries["sweeps/lr/lr=0.1_seed=0"].sweep.as_posix() == "sweeps/lr"
    assert entries["old"].state.startswith("unreadable: run") and "format version 0" in (
        entries["old"].state
    )
    hrefs = _local_targets(index, "href")
    assert "sweeps/lr/report.html" in hrefs and "lone/report.html" in hrefs
    assert {"lone/compare/report.html", "lone/forecast-0.5/report.html"} <= set(hrefs)
    assert "sweeps/lr/lr=0.05_seed=0/report.html" in _local_targets(
        root / "sweeps" / "lr" / "report.html", "href"
    ) or "lr=0.05_seed=0/report.html" in _local_targets(root / "sweeps/lr/report.html", "href")
    for target in hrefs + _local_targets(index, "src"):
        assert (root / html.unescape(target)).is_file(), target
    assert len(_local_targets(index, "src")) >= 2  # the sweep's figure and the lone run's


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


_CHECK = """<!DOCTYPE html><html><body><script>
const f = document.createElement('iframe'); f.src = 'index.html';
f.onload = () => {
  const d = f.contentDocument;
  const imgs = [...d.images].map(i => [i.src, i.complete && i.naturalWidth > 0]);
  const links = [...d.links].map(a => a.href);
  const pre = document.createElement('pre'); pre.id = 'result';
  pre.textContent = JSON.stringify({imgs, links}); document.body.appendChild(pre);
};
document.body.appendChild(f);
</script></body></html>"""


@pytest.mark.skipif(
    _chromium() is None, reason="chromium is not installed (apt-get install chromium)"
)
def test_index_in_headless_chromium(tree, tmp_path):
    root, index = tree
    exe = _chromium()
    flags = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"]
    check = root / "check.html"
    check.write_text(_CHECK)
    dom = subprocess.run(
        [*flags, "--virtual-time-budget=10000", "--dump-dom", check.as_uri()],
        capture_output=True,
        text=True,
        timeout=90,
        check=True,
    ).stdout
    found = re.search(r'<pre id="result">(.*?)</pre>', dom, re.S)
    assert found, dom[-2000:]
    result = json.loads(html.unescape(found.group(1)))
    assert result["imgs"] and all(ok for _, ok in result["imgs"]), result["imgs"]
    assert len(result["links"]) >= 4
    for url in result["links"]:
        parsed = urlparse(url)
        assert parsed.scheme == "file" and Path(unquote(parsed.path)).is_file(), url
    shot = tmp_path / "index.png"
    subprocess.run(
        [*flags, f"--screenshot={shot}", "--window-size=1280,1400", index.as_uri()],
        capture_output=True,
        timeout=90,
        check=True,
    )
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_cli_report_redraws_a_sweep_and_writes_the_index(tree, capsys):
    from ncdynamics.cli import main

    root, _ = tree
    sweep_dir = root / "sweeps" / "lr"
    (sweep_dir / "report.html").unlink()
    assert main(["report", str(sweep_dir)]) == 0
    page = (sweep_dir / "report.html").read_text()
    assert "figures/" not in page and "data:image/png;base64," in page  # figures embedded
    assert 'href="lr=0.05_seed=0/report.html"' in page
    assert main(["report", "--index", str(root)]) == 0
    assert f"index:  {root / 'index.html'}" in capsys.readouterr().out
