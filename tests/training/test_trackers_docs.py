"""The blocks of docs/trackers.md that need an optional extra run when that extra is here.

tests/test_docs_snippets.py runs every unmarked block of the page and skips the blocks marked
``<!-- not-run: needs the X extra (pip install 'ncdynamics[X]') ... -->``. Here each such
block runs after the page's unmarked blocks (its setup), in a temporary directory, and is
skipped only when its extra's package cannot be imported.
"""

import re
import sys
import types
from pathlib import Path

import pytest

PAGE = Path(__file__).parents[2] / "docs" / "trackers.md"
_BLOCK = re.compile(
    r"(?:<!--\s*not-run:(?P<reason>[^>]*)-->\s*\n)?```python\n(?P<code>.*?)```", re.S
)
#: the module each extra's block imports first
MODULES = {
    "tensorboard": "tensorboard",
    "mlflow": "mlflow",
    "wandb": "wandb",
    "lightning": "pytorch_lightning",
    "transformers": "transformers",
}


def _blocks():
    return [(m["reason"], m["code"]) for m in _BLOCK.finditer(PAGE.read_text())]


def _extra_blocks():
    out = []
    for reason, code in _blocks():
        if reason is None:
            continue
        found = re.search(r"ncdynamics\[(\w+)\]", reason)
        assert found, f"a not-run block of {PAGE.name} must name its extra: {reason!r}"
        out.append((found[1], code))
    return out


def test_every_extra_has_its_block():
    assert sorted(extra for extra, _ in _extra_blocks()) == sorted(MODULES)


@pytest.mark.parametrize("extra, code", _extra_blocks(), ids=[e for e, _ in _extra_blocks()])
def test_extra_block_runs(extra, code, tmp_path, monkeypatch):
    pytest.importorskip(MODULES[extra], reason=f"the {extra} extra is not installed")
    if extra == "transformers":
        pytest.importorskip("accelerate", reason="the Trainer needs accelerate")
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    for var in ("WANDB_CONFIG_DIR", "WANDB_CACHE_DIR", "WANDB_DATA_DIR"):
        monkeypatch.setenv(var, str(tmp_path / var.lower()))
    monkeypatch.setenv("WANDB_SILENT", "true")
    module = types.ModuleType("docs_trackers_extra")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    for reason, setup in _blocks():
        if reason is None:
            exec(compile(setup, f"{PAGE.name}[setup]", "exec"), module.__dict__)
    exec(compile(code, f"{PAGE.name}[{extra}]", "exec"), module.__dict__)
