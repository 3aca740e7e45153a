"""Run every benchmark script in this folder (``make bench``); pass --quick to each."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def main() -> int:
    here = Path(__file__).parent
    extra = sys.argv[1:]
    failed = []
    for script in sorted(here.glob("bench_*.py")):
        print(f"\n=== {script.name} {' '.join(extra)}", flush=True)
        if subprocess.run([sys.executable, str(script), *extra], cwd=here).returncode != 0:
            failed.append(script.name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
