"""The theory contract: built-in declarations, installed plugins and malformed declarations."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ncdynamics import experiments, theories
from ncdynamics.theories import Theory, TheoryDeclarationError

BUILTIN = ["alignment", "hadamard", "lesde", "ntk_collapse", "truncation"]
TOY_SOURCE = Path(__file__).parents[1] / "plugins" / "toy_theory"


def _install_toy(site: Path, value: str = "toy_theory:THEORY", name: str = "toy") -> Path:
    """Copy the toy package into ``site`` with a dist-info that declares the entry point."""
    shutil.copytree(TOY_SOURCE, site / "toy_theory", ignore=shutil.ignore_patterns("__pycache__"))
    info = site / "toy_theory-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-theory\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[ncdynamics.theories]\n{name} = {value}\n")
    return site


@pytest.fixture
def toy_site(tmp_path, monkeypatch):
    site = _install_toy(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    theories.refresh()
    yield site
    theories.refresh()
    for mod in [m for m in sys.modules if m.startswith("toy_theory")]:
        del sys.modules[mod]


def test_builtin_theories_are_declared_and_discovered():
    assert theories.available()[: len(BUILTIN)] == BUILTIN
    for name in BUILTIN:
        theory = theories.get(name)
        assert theory.name == name and theory.package == f"ncdynamics.theories.{name}"
        assert Path(theory.docs).name == f"{name}.md"
        specs = theory.load_experiments()
        assert specs and all(s.name.startswith(name + ".") for s in specs)
    assert theories.get("truncation").load_confrontation() is None
    assert theories.get("lesde").load_confrontation().theory == "lesde"


def test_every_registered_experiment_comes_from_a_declaration():
    declared = {s.name for n in theories.available() for s in theories.get(n).load_experiments()}
    assert {s.name for s in experiments.list_experiments()} == declared | {"demo", "atlas"}


def test_unknown_theory_lists_the_known_ones():
    with pytest.raises(ValueError, match="`theory` must be one of alignment, hadamard"):
        theories.get("nope")


_GOOD = {
    "name": "toy",
    "title": "t",
    "citation": "c",
    "package": "toy_pkg",
    "experiments": "toy_pkg.experiments:EXPERIMENTS",
}


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"name": "not a name"}, "`name` must be a Python identifier"),
        ({"title": "  "}, "`title` must be a non-empty string"),
        ({"citation": None}, "`citation` must be a non-empty string"),
        ({"experiments": "toy_pkg.experiments.EXPERIMENTS"}, "'module:attribute'"),
        ({"confrontation": "toy_pkg:class"}, "'module:attribute' string of Python names"),
        ({"package": ""}, "`package` must be a non-empty string"),
        ({"docs": 3}, "`docs` must be a string"),
    ],
)
def test_malformed_declaration_fails_at_construction_naming_the_package(change, match):
    with pytest.raises(TheoryDeclarationError, match=match) as info:
        Theory(**{**_GOOD, **change})
    if change.get("package") != "":
        assert "'toy_pkg'" in str(info.value)


def test_reference_that_does_not_resolve_names_package_and_reference():
    theory = Theory(**{**_GOOD, "experiments": "toy_pkg_absent.experiments:EXPERIMENTS"})
    with pytest.raises(TheoryDeclarationError, match="package 'toy_pkg'.*does not import"):
        theory.load_experiments()
    theory = Theory(**{**_GOOD, "experiments": "ncdynamics.theories.lesde:NO_SUCH"})
    with pytest.raises(TheoryDeclarationError, match="has no attribute 'NO_SUCH'"):
        theory.load_experiments()


def test_experiments_of_another_theory_are_refused():
    theory = Theory(**{**_GOOD, "experiments": "ncdynamics.theories.lesde.experiments:EXPERIMENTS"})
    with pytest.raises(TheoryDeclarationError, match="must have theory='toy'"):
        theory.load_experiments()


def test_subpackage_without_declaration_fails_loudly(tmp_path, monkeypatch):
    (tmp_path / "undeclared").mkdir()
    (tmp_path / "undeclared" / "__init__.py").write_text('"""No THEORY here."""\n')
    monkeypatch.setattr(theories, "__path__", [*theories.__path__, str(tmp_path)])
    theories.refresh()
    try:
        with pytest.raises(TheoryDeclarationError, match="'ncdynamics.theories.undeclared'"):
            theories.available()
    finally:
        sys.modules.pop("ncdynamics.theories.undeclared", None)
        theories.refresh()


def test_installed_theory_is_discovered_through_its_entry_point(toy_site):
    assert "toy" in theories.available()
    toy = theories.get("toy")
    assert toy.package == "toy_theory"
    assert [s.name for s in toy.load_experiments()] == ["toy.decay"]
    assert "toy.decay" in [s.name for s in experiments.list_experiments()]


@pytest.mark.parametrize(
    ("value", "name", "match"),
    [
        ("toy_theory.model:DecayParams", "toy", "must load a ncdynamics.theories.Theory"),
        ("toy_theory:THEORY", "other", "the entry point's name must be the theory's name"),
        ("toy_theory_absent:THEORY", "toy", "does not load"),
    ],
)
def test_bad_entry_point_fails_loudly(tmp_path, monkeypatch, value, name, match):
    site = _install_toy(tmp_path / "site", value=value, name=name)
    monkeypatch.syspath_prepend(str(site))
    theories.refresh()
    try:
        with pytest.raises(TheoryDeclarationError, match=match):
            theories.available()
    finally:
        theories.refresh()


def _ncdyn(args: list[str], site: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]),
    }
    cmd = [sys.executable, "-c", "import sys; from ncdynamics.cli import main; sys.exit(main())"]
    return subprocess.run(
        [*cmd, *args], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )


def test_installed_theory_reaches_ncdyn_list_run_and_compare(tmp_path):
    site = _install_toy(tmp_path / "site")
    listed = _ncdyn(["list", "--theory", "toy"], site, tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert "toy.decay" in listed.stdout
    theories_listed = _ncdyn(["list", "--theories"], site, tmp_path)
    assert (
        "toy" in theories_listed.stdout and "https://example.invalid/toy" in theories_listed.stdout
    )
    run_dir = tmp_path / "toy-run"
    ran = _ncdyn(["run", "toy.decay", "--out", str(run_dir), "--no-progress"], site, tmp_path)
    assert ran.returncode == 0, ran.stderr
    compared = _ncdyn(["compare", str(run_dir)], site, tmp_path)
    assert compared.returncode == 0, compared.stderr
    row = next(line for line in compared.stdout.splitlines() if line.lstrip().startswith("toy"))
    assert "holds" in row  # fitted, and the verdict holds
    assert "rate=0.1" in compared.stdout.replace(" ", "") or "0.1" in row
