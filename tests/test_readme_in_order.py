"""README.md, run top to bottom in a fresh directory (issue 30, item 5).

Every command line of the README's shell blocks runs in order, as a reader would paste it,
in one temporary directory; the long ones run small (the rewrites below: smoke presets, a
few epochs), and the ones this machine cannot run are skipped with the reason. Every Python
block then runs as a script and must print what it shows. A README line that this test does
not know fails it: add it to ``REWRITES`` or ``SKIPPED``.

It trains and fits for a few minutes of CPU, so it is in the slow suite (``-m slow``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"

#: README command -> what this test runs instead (small settings, same meaning).
REWRITES = {
    "make demo": "ncdyn demo --preset smoke",
    "ncdyn demo --resume": "ncdyn demo --preset smoke --resume",
    "ncdyn run hadamard.fig1 --preset cpu --out runs/fig1": (
        "ncdyn run hadamard.fig1 --preset smoke --out runs/fig1"
    ),
    "ncdyn run demo --set epochs=50 --set width=128 --out runs/d50": (
        "ncdyn run demo --set epochs=2 --set width=16 --out runs/d50"
    ),
    "ncdyn run demo --set epochs=50 --set width=128 --out runs/d50 --resume": (
        "ncdyn run demo --set epochs=2 --set width=16 --out runs/d50 --resume"
    ),
    "ncdyn sweep demo --grid lr=0.01,0.05 --grid width=64,256 --seeds 2 --out runs/sweep": (
        "ncdyn sweep demo --grid lr=0.01,0.05 --seeds 2 --set epochs=2 --set width=16 "
        "--workers 1 --no-progress --out runs/sweep"
    ),
    "ncdyn demo --resume --format latex": "ncdyn demo --preset smoke --resume --format latex",
    "ncdyn atlas --preset cpu --workers 2": (
        "ncdyn atlas --preset smoke --seeds 1 --no-progress --out runs/atlas"
    ),
    "ncdyn claims --run cpu --seeds 0,1,2 --only lesde.fig1 --out runs/claims": (
        "ncdyn claims --run smoke --seeds 0 --only lesde.fig1 --out runs/claims"
    ),
}

#: README commands this test does not run, and why.
SKIPPED = {
    "make test": "the test suite itself",
    "ncdyn sweep demo ... --backend ray --address HOST:PORT": "needs a Ray cluster",
    "ncdyn run lesde.fig3 --preset paper --device cuda": "needs CUDA and hours",
}


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"^```{kind}\n(.*?)^```", README.read_text(), flags=re.S | re.M)


def _commands() -> list[str]:
    lines = []
    for block in _blocks("bash"):
        for line in block.splitlines():
            command = line.split("  #")[0].split(" # ")[0].strip()
            if command:
                lines.append(command)
    return lines


def _env() -> dict[str, str]:
    return dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(sys.path),
        OMP_NUM_THREADS="1",
        MPLBACKEND="Agg",
    )


def test_every_readme_command_is_known() -> None:
    unknown = [c for c in _commands() if not c.startswith("ncdyn ") and c not in REWRITES | SKIPPED]
    assert not unknown, f"README commands this test does not know how to run: {unknown}"


@pytest.mark.slow
def test_the_readme_runs_in_order(tmp_path: Path) -> None:
    ncdyn = [sys.executable, "-c", "import sys; from ncdynamics.cli import main; sys.exit(main())"]
    done = []
    for command in _commands():
        if command in SKIPPED:
            continue
        argv = shlex.split(REWRITES.get(command, command))
        assert argv[0] == "ncdyn", command
        proc = subprocess.run(
            [*ncdyn, *argv[1:]],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, (
            f"README line `{command}` (after {len(done)} lines) exited {proc.returncode}: "
            f"{proc.stderr.strip()[-800:]}"
        )
        done.append(command)
    for number, block in enumerate(_blocks("python"), start=1):
        script = tmp_path / f"snippet{number}.py"
        script.write_text(block)
        proc = subprocess.run(
            [sys.executable, str(script)],
            cwd=tmp_path,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=900,
        )
        assert proc.returncode == 0, f"README Python block {number}: {proc.stderr[-800:]}"
        assert proc.stdout.strip(), f"README Python block {number} prints nothing"
