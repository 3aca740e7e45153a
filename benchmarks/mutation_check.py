"""Which one-operator mutations of the formula and verdict-rule modules do the tests catch?

A hand-written list of mutations (:data:`MUTATIONS`): each changes one operator, index or
sign in one line of ``src/ncdynamics`` (a transposed einsum, a flipped sign inside a stable
branch, a dropped transpose, a comparison turned around). For each, the package is copied to
a temporary folder, the mutation applied to the copy (never to the checkout), and only the
test files that cover that module run against the copy (``pytest -x``, first failure stops
it). A mutation is *caught* when a test fails, *missed* when they all pass.

Usage::

    python benchmarks/mutation_check.py                 # every mutation (minutes per item)
    python benchmarks/mutation_check.py --only lesde    # names containing "lesde"
    python benchmarks/mutation_check.py --list          # the list, nothing run

It prints one line per mutation and a summary ``caught N of M``; the exit status is 1 when
one was missed (0 otherwise). The figure in CONTRIBUTING.md comes from a full run; rerun it
after changing a formula or its tests.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "ncdynamics"


@dataclass(frozen=True)
class Mutation:
    """Replace ``before`` (which must occur exactly once in ``path``) by ``after``."""

    name: str
    path: str  # relative to src/ncdynamics
    before: str
    after: str
    tests: tuple[str, ...]  # test files, relative to the repository root


MUTATIONS: tuple[Mutation, ...] = (
    Mutation(
        "lesde.simulate: particle drift block transposed",
        "theories/lesde/simulate.py",
        'np.einsum("rkij,rj->rki"',
        'np.einsum("rkji,rj->rki"',
        ("tests/theories/test_lesde_simulate.py",),
    ),
    Mutation(
        "lesde.model: drift block transposed",
        "theories/lesde/model.py",
        'np.einsum("klij,...lj->...ki", params.blocks(t), y)',
        'np.einsum("klji,...lj->...ki", params.blocks(t), y)',
        ("tests/theories/test_lesde_model.py", "tests/theories/test_lesde_simulate.py"),
    ),
    Mutation(
        "lesde.model: block matrix assembled with swapped axes",
        "theories/lesde/model.py",
        "blocks.transpose(0, 2, 1, 3).reshape(k * p, k * p)",
        "blocks.transpose(0, 3, 1, 2).reshape(k * p, k * p)",
        ("tests/theories/test_lesde_model.py",),
    ),
    Mutation(
        "lesde.model: class-mean coordinate contracts the wrong axis",
        "theories/lesde/model.py",
        'np.einsum("kj,...kj->...k", d, x) / ((k - 1) / k)',
        'np.einsum("kj,...jk->...k", d, x) / ((k - 1) / k)',
        ("tests/theories/test_lesde_model.py",),
    ),
    Mutation(
        "truncation.model: general flow A+ with R untransposed",
        "theories/truncation/model.py",
        'a_plus = np.einsum("lba,lnb,lbc->lnac", params.R, h, params.R)',
        'a_plus = np.einsum("lab,lnb,lbc->lnac", params.R, h, params.R)',
        ("tests/theories/test_truncation_model.py",),
    ),
    Mutation(
        "truncation.model: P^T e with P untransposed",
        "theories/truncation/model.py",
        'pte = np.einsum("nba,nb->na", p_plus, e)',
        'pte = np.einsum("nab,nb->na", p_plus, e)',
        ("tests/theories/test_truncation_model.py",),
    ),
    Mutation(
        "truncation.model: Omega sign",
        "theories/truncation/model.py",
        'omega[l] = -np.einsum("n,nab->ab", w, hm)',
        'omega[l] = np.einsum("n,nab->ab", w, hm)',
        ("tests/theories/test_truncation_model.py",),
    ),
    Mutation(
        "truncation.network: layer biases with W transposed",
        "theories/truncation/network.py",
        'b_layers = np.einsum("lab,lb->la", W_cum, beta - prev_b)',
        'b_layers = np.einsum("lba,lb->la", W_cum, beta - prev_b)',
        ("tests/theories/test_truncation_network.py",),
    ),
    Mutation(
        "alignment.model: output Jacobian-vector product with transposed Dy",
        "theories/alignment/model.py",
        'np.einsum("toh,th->to", Dy.reshape(-1, d_out, d_H), dh)',
        'np.einsum("tho,th->to", Dy.reshape(-1, d_H, d_out), dh)',
        ("tests/theories/test_alignment_model.py", "tests/theories/test_alignment_numerics.py"),
    ),
    Mutation(
        "hadamard.model: stable log-sum-exp branch with exp(m)",
        "theories/hadamard/model.py",
        "m + np.log(np.exp(-m) + s)",
        "m + np.log(np.exp(m) + s)",
        ("tests/theories/test_hadamard_model.py",),
    ),
    Mutation(
        "hadamard.model: log-sum-exp shift sign",
        "theories/hadamard/model.py",
        "s = np.exp(-x - m[..., None]).sum(axis=-1)",
        "s = np.exp(-x + m[..., None]).sum(axis=-1)",
        ("tests/theories/test_hadamard_model.py",),
    ),
    Mutation(
        "alignment.model: Jacobian-vector product with transposed Dh",
        "theories/alignment/model.py",
        'np.einsum("thi,i->th", Dh.reshape(-1, d_H, d_in), dx)',
        'np.einsum("tih,i->th", Dh.reshape(-1, d_in, d_H), dx)',
        ("tests/theories/test_alignment_model.py", "tests/theories/test_alignment_numerics.py"),
    ),
    Mutation(
        "truncation.model: rotated bias uses R transposed",
        "theories/truncation/model.py",
        'bt = np.einsum("lab,lb->la", R, beta + packed.ytilde)',
        'bt = np.einsum("lba,lb->la", R, beta + packed.ytilde)',
        ("tests/theories/test_truncation_model.py",),
    ),
    Mutation(
        "truncation.model: bias flow sign",
        "theories/truncation/model.py",
        'dbeta = -np.einsum("lba,lb->la", R, j0perp * bt)',
        'dbeta = np.einsum("lba,lb->la", R, j0perp * bt)',
        ("tests/theories/test_truncation_model.py",),
    ),
    Mutation(
        "ntk_collapse.model: classifier flow without the transpose",
        "theories/ntk_collapse/model.py",
        "-R @ s.H.T, -R.sum(axis=1)).pack()",
        "-R @ s.H, -R.sum(axis=1)).pack()",
        ("tests/theories/test_ntk_collapse_model.py",),
    ),
    Mutation(
        "probes._fast_ntk_layers: sequence Linear transpose dropped",
        "probes/_fast_ntk_layers.py",
        "g.reshape(n, o, -1, g.shape[-1]).transpose(2, 3).reshape(n, o * g.shape[-1], -1)",
        "g.reshape(n, o, -1, g.shape[-1]).reshape(n, o * g.shape[-1], -1)",
        ("tests/probes/test_ntk_layers.py",),
    ),
    Mutation(
        "runs._tables: page checksums not verified",
        "runs/_tables.py",
        "page_checksum_verification=True",
        "page_checksum_verification=False",
        ("tests/runs/test_corruption.py",),
    ),
    # verdict rules (theories/verdict.py is being rewritten: listed here, its tests are its
    # owner's)
    Mutation(
        "verdict: bound agreement tolerance comparison turned around",
        "theories/verdict.py",
        "return abs(math.log(value / bound)) < BOUND_TOL",
        "return abs(math.log(value / bound)) > BOUND_TOL",
        ("tests/theories/test_verdict.py",),
    ),
    Mutation(
        "verdict: an interval touching zero",
        "theories/verdict.py",
        "if low <= 0 <= high:",
        "if low < 0 < high:",
        ("tests/theories/test_verdict.py",),
    ),
    Mutation(
        "dependence: the runs' own uncertainty ignored (min instead of max)",
        "experiments/dependence.py",
        "se_slope = math.sqrt(max(var_scatter, var_runs))",
        "se_slope = math.sqrt(min(var_scatter, var_runs))",
        ("tests/experiments/test_atlas.py",),
    ),
    Mutation(
        "atlas: a cell's interval without the spread between seeds",
        "experiments/atlas.py",
        "var = float(np.var(v, ddof=1)) / n + float(np.mean(se**2)) / n",
        "var = float(np.mean(se**2)) / n",
        ("tests/experiments/test_atlas.py",),
    ),
)


def _apply(mutation: Mutation, dest: Path) -> None:
    target = dest / mutation.path
    text = target.read_text()
    count = text.count(mutation.before)
    if count != 1:
        raise SystemExit(
            f"mutation {mutation.name!r}: the text to replace occurs {count} times in "
            f"{mutation.path} (must be once); update the list."
        )
    target.write_text(text.replace(mutation.before, mutation.after))


def run_one(mutation: Mutation, timeout: float) -> tuple[str, float]:
    """``("caught" | "missed" | "timeout", seconds)`` for one mutation."""
    with tempfile.TemporaryDirectory(prefix="ncdyn-mutant-") as tmp:
        copy = Path(tmp) / "src" / "ncdynamics"
        shutil.copytree(SRC, copy, ignore=shutil.ignore_patterns("__pycache__"))
        _apply(mutation, copy)
        env = dict(os.environ, PYTHONPATH=str(copy.parent), OMP_NUM_THREADS="1")
        env.setdefault("MPLBACKEND", "Agg")
        cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider"]
        cmd += ["-o", "addopts=", *mutation.tests]
        start = time.monotonic()
        try:
            done = subprocess.run(
                cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout
            )
        except subprocess.TimeoutExpired:
            return "timeout", time.monotonic() - start
        seconds = time.monotonic() - start
        if done.returncode == 0:
            return "missed", seconds
        if done.returncode == 1:
            return "caught", seconds
        tail = (done.stdout + done.stderr).strip().splitlines()[-1:]
        return f"error ({tail[0] if tail else done.returncode})", seconds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", help="run the mutations whose name contains this text")
    parser.add_argument("--list", action="store_true", help="list the mutations and stop")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per mutation")
    args = parser.parse_args(argv)
    chosen = [m for m in MUTATIONS if args.only is None or args.only in m.name]
    if not chosen:
        parser.error(f"`--only` must match a mutation name; got {args.only!r}.")
    if args.list:
        for m in chosen:
            print(f"{m.name}  [{m.path}; {', '.join(m.tests)}]")
        return 0
    caught = 0
    for m in chosen:
        verdict, seconds = run_one(m, args.timeout)
        caught += verdict == "caught"
        print(f"{verdict:8s} {seconds:6.1f} s  {m.name}", flush=True)
    print(f"caught {caught} of {len(chosen)}")
    return 0 if caught == len(chosen) else 1


if __name__ == "__main__":
    raise SystemExit(main())
