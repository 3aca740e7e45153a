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


def _recorded_names_table() -> dict[str, tuple[set[str], set[str]]]:
    """The doc's table of recorded names: writer -> (scalars, arrays)."""
    text = DOC.read_text()
    table = text.split("<!-- recorded-names -->", 1)[1].split("<!-- /recorded-names -->", 1)[0]
    out = {}
    for line in table.strip().splitlines()[2:]:
        writer, scalars, arrays = (c.strip() for c in line.strip().strip("|").split("|"))
        out[writer] = tuple(set(re.findall(r"`([^`]+)`", cell)) for cell in (scalars, arrays))
    return out


class _ListSink:
    def __init__(self) -> None:
        self.scalars: set[str] = set()
        self.arrays: set[str] = set()

    def log(self, step, values=None, **kw):
        self.scalars.update(dict(values or {}, **kw))

    def save_array(self, name, step, array):
        self.arrays.add(name)

    def flush(self):
        pass


def test_the_recorded_names_table_is_what_the_probes_and_train_write():
    """Every registered probe has its row, and each row lists exactly what the probe writes
    (and ``train`` what it records itself): the table cannot go stale untested."""
    import numpy as np
    import torch

    from ncdynamics import data
    from ncdynamics.probes import available_probes
    from ncdynamics.training import Recorder, train

    table = _recorded_names_table()
    probes = {w.removeprefix("probe `").removesuffix("`") for w in table if w.startswith("probe")}
    assert probes == set(available_probes())
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 3))
    x = np.random.default_rng(0).normal(size=(36, 4)).astype(np.float32)
    y = np.arange(36) % 3
    for name in sorted(probes):
        sink = _ListSink()
        Recorder(sink, x, y, probes=(name,), layer="2").record(model, 0)
        assert (sink.scalars, sink.arrays) == table[f"probe `{name}`"], name
    ds = data.load("gaussian-clusters", num_classes=3, dim=4, n_train_per_class=12, seed=0)
    sink = _ListSink()
    rec = Recorder(sink, ds.x_train, ds.y_train, probes=("performance",), layer="2")
    train(model, ds, epochs=1, batch_size=12, progress=False, recorder=rec)
    scalars, arrays = table["`train(..., recorder=rec)`"]
    assert sink.scalars - table["probe `performance`"][0] == scalars and not arrays


def test_the_demo_records_the_first_five_rows_of_the_table(tmp_path):
    from ncdynamics import experiments

    table = list(_recorded_names_table().values())[:5]
    scalars = set().union(*(s for s, _ in table))
    arrays = set().union(*(a for _, a in table))
    run = experiments.run("demo", "smoke", tmp_path / "demo", progress=False)
    prefixes = ("mse/", "cross-entropy/")
    assert set(run.metrics["name"]) == {p + n for p in prefixes for n in scalars}
    assert set(run.array_names()) == {p.replace("/", ".") + n for p in prefixes for n in arrays}
