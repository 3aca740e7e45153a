"""docs/extending.md: every Python example runs, and the toy theory it shows is the tested one."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest

DOC = Path(__file__).parents[1] / "docs" / "extending.md"
TOY = Path(__file__).parent / "plugins" / "toy_theory"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


def _runnable_blocks() -> list[str]:
    # The toy theory's files use relative imports: they run as a package (test_theory_registry).
    return [b for b in _python_blocks() if "from ." not in b and "THEORY = Theory(" not in b]


def test_every_toy_theory_file_is_shown_verbatim_in_the_doc():
    blocks = _python_blocks()
    for path in sorted(TOY.glob("*.py")):
        assert path.read_text() in blocks, f"{path.name} differs from its copy in {DOC.name}"


@pytest.mark.parametrize("index", range(len(_runnable_blocks())))
def test_doc_example_runs(index, tmp_path, monkeypatch):
    from ncdynamics.probes import _base

    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(TOY.parent))  # the toy theory, installed as a user has it
    monkeypatch.setattr(_base, "_PROBES", dict(_base._PROBES))  # registrations stay local
    module = types.ModuleType(f"docs_extending_example_{index}")
    monkeypatch.setitem(sys.modules, module.__name__, module)  # dataclasses look it up
    code = _runnable_blocks()[index]
    exec(compile(code, f"{DOC.name}[{index}]", "exec"), module.__dict__)
