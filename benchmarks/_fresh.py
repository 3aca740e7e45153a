"""Fresh-process measurements shared by the benchmark scripts (not part of the package).

Comparing this checkout with a base commit means running the same code on two ``src``
trees, each in a new Python process (so that imports and caches are paid as a user pays
them): :func:`source_of` extracts a commit's ``src`` with ``git archive``, and
:func:`python_in` runs a snippet on a given ``src`` with one BLAS thread and returns the JSON
object its last line prints, with the process's CPU time.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def python_in(src: Path, code: str, *args: str) -> tuple[dict[str, Any], float]:
    """``(result, cpu)``: the JSON object printed last by ``python -c code args`` run on the
    sources ``src`` (``PYTHONPATH``; ``OMP_NUM_THREADS=1``, ``MPLBACKEND=Agg``), and the CPU
    seconds (user + system) of that process."""
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": "1", "MPLBACKEND": "Agg"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(
        [sys.executable, "-c", code, *args],
        env=env,
        capture_output=True,
        text=True,
        check=True,
        cwd=tempfile.gettempdir(),
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    if not isinstance(result, dict):
        raise RuntimeError(f"the snippet printed {result!r}, not a JSON object")
    result.setdefault("_stderr", out.stderr[-500:])
    return result, cpu


def source_of(commit: str, tmp: Path) -> Path | None:
    """The ``src`` of ``commit``, extracted under ``tmp``; ``None`` without git or the
    commit."""
    try:
        archive = subprocess.run(
            ["git", "-C", str(ROOT), "archive", commit, "src"], capture_output=True, check=True
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    target = tmp / "base"
    target.mkdir()
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target / "src"
