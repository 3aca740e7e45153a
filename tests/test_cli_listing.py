"""``ncdyn list`` and ``ncdyn --help`` start without importing what they do not print
(issue 30, item 6): the built-in experiments are listed from a table that must match the
registry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ncdynamics import _experiment_listing
from ncdynamics.experiments import list_experiments

HEAVY = ("torch", "pandas", "matplotlib", "scipy", "pyarrow")


def test_the_listing_table_matches_the_registry() -> None:
    registry = [
        (s.name, s.theory, " ".join(s.preset_names), s.summary)
        for s in list_experiments()
        if s.theory in ("core", *_experiment_listing.BUILTIN_THEORIES)
    ]
    assert list(_experiment_listing.BUILTIN) == registry, (
        "src/ncdynamics/_experiment_listing.py is stale: regenerate it with "
        "`python -m ncdynamics._experiment_listing` (then ruff format it)"
    )
    assert _experiment_listing.listing() == [
        (s.name, s.theory, " ".join(s.preset_names), s.summary) for s in list_experiments()
    ]


@pytest.mark.parametrize("argv", [["list"], ["list", "--names"], ["--help"], ["run", "--help"]])
def test_list_and_help_import_nothing_heavy(argv: list[str]) -> None:
    code = (
        "import sys\n"
        "from ncdynamics.cli import main\n"
        "try:\n"
        f"    main({argv!r})\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print('LOADED', sorted(m for m in {HEAVY!r} if m in sys.modules))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    ).stdout
    assert out.strip().splitlines()[-1] == "LOADED []", out[-500:]


def test_compare_does_not_import_scipy_stats(tmp_path) -> None:
    """Intervals and bands need only Student-t and normal quantiles (``scipy.special``):
    ``scipy.stats`` costs ~0.7 s of every ``ncdyn compare`` to import."""
    from ncdynamics.cli import main

    run = tmp_path / "demo"
    settings = ["epochs=4", "width=16", "depth=2", "in_regime=true"]
    assert main(["run", "demo", "--out", str(run), "--no-progress", *_sets(settings)]) == 0
    code = (
        "import sys\n"
        "from ncdynamics.cli import main\n"
        f"main(['compare', {str(tmp_path / 'demo')!r}, '--out', {str(tmp_path / 'cmp')!r}])\n"
        "print('LOADED', 'scipy.stats' in sys.modules)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    assert out.strip().splitlines()[-1] == "LOADED False", out[-500:]


def _sets(settings: list[str]) -> list[str]:
    return [arg for setting in settings for arg in ("--set", setting)]
