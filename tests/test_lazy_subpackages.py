"""`import ncdynamics` reaches every subpackage lazily and stays light."""

from __future__ import annotations

import subprocess
import sys

import pytest

import ncdynamics

SUBPACKAGES = (
    "data",
    "models",
    "probes",
    "runs",
    "training",
    "theories",
    "experiments",
    "report",
)


def _run(code: str) -> str:
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    return out.stdout.strip()


def test_import_ncdynamics_does_not_import_torch_or_subpackages():
    code = (
        "import sys, ncdynamics; "
        "print(sorted(m for m in sys.modules if m == 'torch' or m.startswith('ncdynamics.')))"
    )
    assert _run(code) == "[]"


@pytest.mark.parametrize("name", SUBPACKAGES)
def test_each_subpackage_is_an_attribute_after_a_plain_import(name):
    code = f"import ncdynamics; m = ncdynamics.{name}; print(m.__name__)"
    assert _run(code) == f"ncdynamics.{name}"


def test_readme_style_calls_resolve(tmp_path):
    run = ncdynamics.runs.create(tmp_path / "r")
    run.close()
    assert callable(ncdynamics.report.write_report)


def test_dir_lists_the_subpackages():
    assert set(SUBPACKAGES) <= set(dir(ncdynamics))


def test_unknown_attribute_names_the_subpackages():
    with pytest.raises(AttributeError, match="no attribute 'nope'.*runs"):
        ncdynamics.nope  # noqa: B018
