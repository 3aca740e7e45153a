"""The layer rule of docs/architecture.md, checked on every import in ``src/ncdynamics``.

A layer imports only the layers above it (``runs`` and ``training`` share a rank and import
neither the other); the theories' shared floor imports no theory package; a theory package
imports no other theory package. Imports inside functions count as much as module-level ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import ncdynamics

SRC = Path(ncdynamics.__file__).parent
THEORIES = SRC / "theories"

BASE = ("_validation", "_simplex", "_reasons", "_losses", "_processes")
RANK = {
    "base": 0,
    "data": 1,
    "models": 2,
    "probes": 3,
    "runs": 4,
    "training": 4,
    "theories": 5,
    "experiments": 6,
    "report": 7,
    "cli": 8,
    "_experiment_listing": 7,  # the table `ncdyn list` prints, read by the CLI
}
#: Files allowed to import a layer below theirs, with why (docs/architecture.md).
EXCEPTIONS = {
    # the conformance kit judges streams through the engine, as a plugin's own test does
    ("theories/testing.py", "experiments"),
}


def _imports(path: Path, package: tuple[str, ...]) -> list[tuple[tuple[str, ...], int]]:
    """Every ``ncdynamics`` module a file imports, as a path of names below ``ncdynamics``
    (``("theories", "integrate")``), with its line. ``package`` is the file's package."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                if node.level - 1 > len(package):
                    raise AssertionError(f"{path}:{node.lineno}: relative import above the package")
                base = package[: len(package) - (node.level - 1)]
            elif node.module is not None and node.module.split(".")[0] == "ncdynamics":
                base = ()
                node_module = node.module.split(".", 1)[1] if "." in node.module else None
                target = tuple(node_module.split(".")) if node_module else ()
                found += _with_names(target, node)
                continue
            else:
                continue
            target = base + (tuple(node.module.split(".")) if node.module else ())
            found += _with_names(target, node)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                parts = alias.name.split(".")
                if parts[0] == "ncdynamics" and len(parts) > 1:
                    found.append((tuple(parts[1:]), node.lineno))
    return found


def _with_names(target: tuple[str, ...], node: ast.ImportFrom) -> list[tuple[tuple[str, ...], int]]:
    # ``from . import x`` / ``from .. import hadamard`` name modules in the imported names
    if node.module is None:
        return [((*target, alias.name), node.lineno) for alias in node.names]
    return [(target, node.lineno)]


def _files() -> list[tuple[Path, tuple[str, ...]]]:
    out = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).parts
        out.append((path, ("ncdynamics", *rel[:-1])[1:]))
    return out


def _layer(parts: tuple[str, ...]) -> str:
    name = parts[0].removesuffix(".py")
    return "base" if name in BASE else name


def _theory_packages() -> set[str]:
    return {p.name for p in THEORIES.iterdir() if (p / "__init__.py").is_file()}


def test_the_checker_sees_the_imports_it_must_judge():
    # an oracle for the parser itself: files whose imports are known
    integrate = {t for t, _ in _imports(THEORIES / "integrate.py", ("theories",))}
    assert ("_validation",) in integrate
    model = {t for t, _ in _imports(THEORIES / "hadamard" / "model.py", ("theories", "hadamard"))}
    assert ("theories", "integrate") in model
    cli = {t[0] for t, _ in _imports(SRC / "cli.py", ())}
    assert {"experiments", "report"} <= cli


def test_each_layer_imports_only_layers_above_it():
    wrong = []
    for path, package in _files():
        rel = path.relative_to(SRC).parts
        if rel == ("__init__.py",):
            continue  # the package face: lazy attributes, no layer of its own
        source = _layer(rel)
        assert source in RANK, f"{path}: a layer missing from docs/architecture.md"
        for target, line in _imports(path, package):
            if not target or target[0] in ("__version__",):
                continue
            layer = _layer(target)
            if layer == source:
                continue
            if ("/".join(rel), layer) in EXCEPTIONS:
                continue
            if layer not in RANK or RANK[layer] >= RANK[source]:
                wrong.append(f"{'/'.join(rel)}:{line} ({source}) imports {'.'.join(target)}")
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("kind", ["floor", "theory"])
def test_theory_packages_stay_apart(kind):
    names = _theory_packages()
    wrong = []
    for path, package in _files():
        if package[:1] != ("theories",):
            continue
        own = package[1] if len(package) > 1 else None
        if (own is None) != (kind == "floor"):
            continue
        for target, line in _imports(path, package):
            if target[:1] == ("theories",) and len(target) > 1 and target[1] in names:
                if target[1] != own:
                    wrong.append(f"{path.relative_to(SRC)}:{line} imports theories.{target[1]}")
    assert not wrong, "\n".join(wrong)
