"""``ncdyn``: the command line. It parses arguments, calls one library function and prints
the paths it wrote. Bad input is reported in one line on stderr with exit code 2."""

from __future__ import annotations

import argparse
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_FAILED = 1
#: The preset names of `run`, `sweep` and `claims --run` (ncdynamics.theories.experiment.PRESETS,
#: spelled out so that building the parser imports nothing heavy; a test keeps them equal).
_PRESETS = ("smoke", "cpu", "paper", "gpu")
#: The atlas plans (ncdynamics.experiments.atlas.ATLAS_PRESETS; a test keeps them equal).
_ATLAS_PRESETS = ("smoke", "cpu", "paper")
SEED_MAX = 2**32 - 1  # seeds offset per trial (seed + 10_000 + i) stay far inside int64


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, exit 2
        self.exit(EXIT_USAGE, f"ncdyn: error: {message}\n")


def _seed(text: str) -> int:
    """``--seed``: an integer in 0..SEED_MAX (torch and NumPy take it as is)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer; got {text!r}") from None
    if not 0 <= value <= SEED_MAX:
        raise argparse.ArgumentTypeError(f"must be in 0..{SEED_MAX} (2**32 - 1); got {text}")
    return value


def _common(p: argparse.ArgumentParser, *, out_help: str) -> None:
    p.add_argument("--out", type=Path, default=None, help=out_help)
    p.add_argument("--seed", type=_seed, default=0, help="random seed (default 0)")


def _runner_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("--resume", action="store_true", help="continue an unfinished run in --out")
    p.add_argument("--overwrite", action="store_true", help="replace a run already in --out")
    p.add_argument("--no-progress", action="store_true", help="hide progress bars")
    p.add_argument(
        "--device",
        default="auto",
        help="auto (CUDA when present, the default), cpu, cuda or cuda:N",
    )
    p.add_argument(
        "--threads",
        type=int,
        default=1,
        help="intra-op threads of this process (default 1: on a CPU, small networks "
        "run fastest single-threaded and parallelism goes across trials)",
    )


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="ncdyn",
        description="Training dynamics of neural collapse: measure, simulate, confront.",
    )
    from . import __version__

    parser.add_argument("--version", action="version", version=f"ncdynamics {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True

    demo = sub.add_parser(
        "demo",
        help="train an MLP on digits (MSE and CE) and write a report",
        description="Train a small MLP on scikit-learn's digits with MSE and "
        "with cross-entropy, record NC1-NC4 every epoch, print a table and "
        "write an HTML report; then fit the theories to the run (`ncdyn compare`).",
    )
    demo.add_argument(
        "--preset",
        default="cpu",
        choices=("smoke", "cpu", "paper"),
        help="size of the demo (default cpu: 30-70 s on 2 idle cores, about 35 s of CPU; "
        "smoke: 3 epochs, seconds)",
    )
    _common(demo, out_help="run directory (default runs/demo)")
    _runner_flags(demo)
    _format_flag(demo, "RUN/table.csv or RUN/table.tex")

    lst = sub.add_parser(
        "list",
        help="list experiments and presets",
        description="List registered experiments with their presets.",
    )
    lst.add_argument("--names", action="store_true", help="print only names, one per line")
    lst.add_argument("--theory", default=None, help="only experiments of this theory")
    lst.add_argument(
        "--theories",
        action="store_true",
        help="list the theories (built-in and installed) instead of experiments",
    )

    run = sub.add_parser(
        "run",
        help="run one experiment at a preset",
        description="Run a registered experiment at a preset (default smoke) and write its "
        "report. `ncdyn run demo` is the demo at the smoke preset (3 epochs); `ncdyn demo` "
        "runs it at cpu.",
    )
    run.add_argument("experiment", help="experiment name (see `ncdyn list`)")
    run.add_argument(
        "--preset",
        default="smoke",
        choices=_PRESETS,
        help="smoke (the default: seconds), cpu (minutes), paper (the paper's settings), gpu "
        "(the paper's compute scale on data a device machine holds; experiments that need a "
        "GPU)",
    )
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a config field (repeatable); lists as a,b,c",
    )
    run.add_argument(
        "--config",
        type=Path,
        default=None,
        help="YAML file of config overrides (applied before --set)",
    )
    _common(run, out_help="run directory (default runs/EXPERIMENT-PRESET)")
    _runner_flags(run)

    rep = sub.add_parser(
        "report",
        help="(re)draw figures and write report.html for a run, a sweep, several runs or a folder",
        description="Draw a run's (or a sweep's) figures and write its self-contained HTML "
        "report; with --compare, one report overlaying several runs; with --index, a page "
        "listing every run and sweep under a folder. See docs/reports.md.",
    )
    rep.add_argument("run_dir", type=Path, nargs="?", default=None, help="run directory")
    rep.add_argument(
        "--index",
        type=Path,
        default=None,
        metavar="DIR",
        help="instead of one run: write DIR/index.html listing every run and sweep under DIR",
    )
    rep.add_argument(
        "--compare",
        type=Path,
        nargs="+",
        default=None,
        metavar="RUN",
        help="instead of one run: overlay these runs in one report (runs that differ only in "
        "the seed are drawn as mean and min-max band); written to --out DIR (default: "
        "'comparison' beside the first run)",
    )
    rep.add_argument(
        "--metric",
        action="append",
        default=None,
        metavar="KEY",
        help="with --compare: draw only this metric key, e.g. nc/nc1 (repeatable)",
    )
    _common(rep, out_help="also copy the report to this path (with --compare: the report's folder)")

    cmp_ = sub.add_parser(
        "compare",
        help="confront every applicable theory with recorded runs: a verdict per stream",
        description="Check each theory's assumptions against the run, fit it to every stream "
        "that recorded what it needs (and to windows of training time), and print and report "
        "a verdict per theory and stream (holds, holds in a window, not distinguished, fails, "
        "degenerate, out of regime, missing, error) with its reason, the parameters with 95% "
        "intervals and the skill behind it. Several run directories, or a sweep directory, "
        "give one summary table (summary.csv, summary.tex, summary.html).",
    )
    cmp_.add_argument("run_dir", type=Path, nargs="+", help="run directory, or several, or a sweep")
    _format_flag(cmp_, "OUT/verdicts.csv or OUT/verdicts.tex (summary.csv/.tex for many runs)")
    cmp_.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default RUN_DIR/compare, SWEEP_DIR/compare, or ./compare "
        "for several runs)",
    )
    cmp_.add_argument(
        "--force",
        action="store_true",
        help="fit streams outside a theory's regime too (the verdict stays 'out of regime')",
    )
    cmp_.add_argument(
        "--no-windows",
        action="store_true",
        help="fit the whole streams only (faster; no window figure, no 'holds in a window')",
    )
    cmp_.add_argument(
        "--theory",
        action="append",
        default=None,
        metavar="NAME",
        help="confront only this theory (repeat for several; default: every one); with "
        "--force, what it says past its declared regime",
    )

    fc = sub.add_parser(
        "forecast",
        help="fit theories to the first part of a run and score their prediction of the rest",
        description="Fit each applicable theory on the records up to several cut points "
        "(fractions of the step range, and points where the first observable has made a "
        "fraction of its total change), predict every later record, and score the "
        "prediction over the whole post-cut trajectory beside two baselines fitted in "
        "training time: the last value carried forward and a power law, with 95% bands.",
    )
    fc.add_argument("run_dir", type=Path, help="run directory")
    fc.add_argument(
        "--at",
        default=None,
        metavar="F[,F...]",
        help="cut at these fractions of the step range, each 0 < F < 1 (default 0.3,0.5,0.7)",
    )
    fc.add_argument(
        "--change",
        default=None,
        metavar="F[,F...]",
        help="also cut where the first observable has made these fractions of its total "
        "change (default 0.25,0.5,0.75; 'none' for no such cut)",
    )
    fc.add_argument(
        "--force", action="store_true", help="forecast streams outside a theory's regime too"
    )
    fc.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output directory (default RUN_DIR/forecast-AT for one --at, else RUN_DIR/forecast)",
    )

    clm = sub.add_parser(
        "claims",
        help="tabulate the paper claims that runs checked",
        description="Read the claims in the summary.json of each run (or of every run under "
        "a folder, such as a sweep), count over runs (seeds) how many held, with mean ± sd "
        "of our numbers, and print one Markdown table per experiment and preset.",
    )
    clm.add_argument("runs", type=Path, nargs="*", help="run directories or folders of runs")
    clm.add_argument(
        "--smoke",
        action="store_true",
        help="first run every experiment's smoke preset (seed 0) in a temporary directory",
    )
    clm.add_argument(
        "--run",
        choices=_PRESETS,
        default=None,
        metavar="PRESET",
        help="first run this preset of the experiments (--only) for every seed (--seeds) "
        "into --out/NAME/seedK; completed runs there are kept, unfinished ones resumed",
    )
    clm.add_argument(
        "--seeds", default="0,1,2", help="seeds for --run, comma-separated (default 0,1,2)"
    )
    clm.add_argument(
        "--only",
        default=None,
        help="experiments for --run, comma-separated (default: every theory's experiments)",
    )
    clm.add_argument("--out", type=Path, default=Path("runs/claims"), help="folder of --run's runs")
    clm.add_argument(
        "--save",
        type=Path,
        default=None,
        metavar="FILE",
        help="also keep the rows in the JSON file FILE, e.g. docs/theories/claims-cpu.json: "
        "rows merged by seed into those kept for the same experiment and preset (a seed run "
        "again replaces its rows, other kept seeds stay, the provenance line names every "
        "commit); kept seeds checked by different claims (a claim, part, criterion or "
        "source changed) are dropped with a note, never mixed; other experiments kept; "
        "--update-docs then writes the merged rows",
    )
    clm.add_argument(
        "--update-docs",
        type=Path,
        default=None,
        metavar="DOCS_DIR",
        help="also rewrite the generated claims regions of the *.md pages under DOCS_DIR",
    )

    swp = sub.add_parser(
        "sweep",
        help="run an experiment over a grid of options and seeds",
        description="Expand a grid of config values times seeds into runs under one sweep "
        "directory, run them on a process pool or Ray, and write the sweep table "
        "(table.parquet, table.csv) and report. Running the same command again skips "
        "completed runs and resumes the others.",
    )
    swp.add_argument("experiment", help="experiment name (see `ncdyn list`)")
    swp.add_argument("--preset", default="smoke", choices=_PRESETS, help="preset of every run")
    swp.add_argument(
        "--grid",
        action="extend",
        nargs="+",
        default=[],
        metavar="KEY=V1,V2",
        help="an option and its values (several may follow one --grid, and --grid repeats)",
    )
    swp.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 for every grid point")
    swp.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option fixed for every run (repeatable)",
    )
    swp.add_argument("--config", type=Path, default=None, help="YAML file of fixed options")
    swp.add_argument(
        "--out",
        type=Path,
        default=None,
        help="sweep directory (default runs/sweep-EXPERIMENT-PRESET)",
    )
    swp.add_argument(
        "--backend",
        default="local",
        choices=("local", "ray"),
        help="local process pool (default) or Ray",
    )
    swp.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="host:port of a running Ray cluster (default: start Ray here)",
    )
    swp.add_argument(
        "--workers",
        type=int,
        default=None,
        help="worker processes (local) or CPUs of a local Ray (default: cores, at most 8)",
    )
    swp.add_argument("--threads", type=int, default=1, help="intra-op threads per worker")
    swp.add_argument(
        "--device",
        default="auto",
        help="where each run trains: auto (CUDA when the worker has it, the default), cpu, "
        "cuda or cuda:N",
    )
    swp.add_argument(
        "--retries", type=int, default=1, help="extra attempts for a failed run (default 1)"
    )
    swp.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    _format_flag(
        swp, "SWEEP/table.csv (every column) or SWEEP/table.tex (grid, seed, status, summary)"
    )

    atl = sub.add_parser(
        "atlas",
        help="the regime atlas: where each theory holds over a grid of training settings",
        description="Train the atlas cell over the blocks of a preset's plan (loss, optimiser, "
        "learning rate, width, init scale, classes, data) as sweeps, confront every run with "
        "every theory, and write the cells table (verdict shares, key parameters against the "
        "theories' predictions), the dependence checks and the atlas page. Running the same "
        "command again does only the runs and confrontations that are missing. See "
        "docs/atlas.md.",
    )
    atl.add_argument(
        "--preset", default="smoke", choices=_ATLAS_PRESETS, help="the atlas plan (default smoke)"
    )
    atl.add_argument(
        "--seeds", type=int, default=None, help="seeds 0..N-1 per cell (default: the plan's)"
    )
    atl.add_argument(
        "--out", type=Path, default=None, help="atlas directory (default runs/atlas-PRESET)"
    )
    atl.add_argument("--backend", default="local", choices=("local", "ray"), help="local or Ray")
    atl.add_argument("--address", default=None, metavar="ADDR", help="a running Ray cluster")
    atl.add_argument(
        "--workers", type=int, default=1, help="worker processes or Ray CPUs (default 1)"
    )
    atl.add_argument("--threads", type=int, default=1, help="intra-op threads per worker")
    atl.add_argument("--device", default="auto", help="where each run trains (default auto)")
    atl.add_argument("--no-progress", action="store_true", help="hide the progress bars")
    return parser


def _parse_overrides(items: Sequence[str], config_file: Path | None) -> dict[str, Any]:
    from .theories.experiment import parse_value

    out: dict[str, Any] = {}
    if config_file is not None:
        import yaml

        if not config_file.is_file():
            raise FileNotFoundError(f"`--config` must be an existing YAML file; got {config_file}.")
        try:
            loaded = yaml.safe_load(config_file.read_text()) or {}
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            where = " ".join(str(exc).split())
            raise ValueError(f"`--config` {str(config_file)!r} is not valid YAML: {where}") from exc
        if not isinstance(loaded, dict):
            raise ValueError(
                f"`--config` {str(config_file)!r} must hold a mapping of options; "
                f"got {type(loaded).__name__}."
            )
        out.update({str(k): v for k, v in loaded.items()})
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ValueError(f"`--set` must be KEY=VALUE; got {item!r}.")
        out[key.strip().replace("-", "_")] = parse_value(value)
    return out


def _parse_grid(items: Sequence[str]) -> dict[str, Any]:
    from .theories.experiment import parse_value

    grid: dict[str, Any] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().replace("-", "_")
        if not sep or not key or not value.strip():
            raise ValueError(f"`--grid` must be KEY=V1,V2,...; got {item!r}.")
        if key in grid:
            raise ValueError(f"`--grid` names {key!r} twice; give its values once.")
        grid[key] = parse_value(value)
    if not grid:
        raise ValueError(
            "`--grid` must name at least one option, e.g. --grid lr=0.01,0.1; got none."
        )
    return grid


def _cmd_sweep(args: argparse.Namespace) -> int:
    from . import experiments, report
    from .training import default_workers

    grid = _parse_grid(args.grid)
    overrides = _parse_overrides(args.overrides, args.config)
    points = experiments.expand_grid(
        args.experiment, args.preset, grid=grid, seeds=args.seeds, overrides=overrides
    )
    workers = default_workers() if args.workers is None else args.workers
    executor = experiments.make_executor(
        args.backend, workers=workers, threads_per_worker=args.threads, address=args.address
    )
    with executor:
        result = experiments.sweep(
            args.experiment,
            args.preset,
            args.out,
            grid=grid,
            seeds=args.seeds,
            overrides=overrides,
            executor=executor,
            retries=args.retries,
            after_run=report.write_report,
            progress=not args.no_progress,
            device=args.device,
        )
    path = report.write_sweep_report(result.path)
    if args.format == "text":  # what --format text promises: the table, at the end
        from .experiments.sweep import sweep_summary_table

        _print_sweep_text(sweep_summary_table(result.path), list(grid))
    elif args.format == "csv":  # the whole table, as table.csv holds it
        _print_table(result.table, "csv", result.path / "table.csv", index=False, write=False)
    elif args.format == "latex":  # the columns a paper shows
        from .experiments.sweep import sweep_summary_table

        table = sweep_summary_table(result.path)
        _print_table(table, "latex", result.path / "table.tex", index=False)
    print(
        f"runs:   {len(points)} ({len(result.completed)} completed now, "
        f"{len(result.skipped)} already completed, {len(result.failed)} failed)"
    )
    for run_id in result.failed:
        row = result.table[result.table["run_id"] == run_id].iloc[0]
        print(f"failed: {run_id}: {row['error']}")
    print(f"sweep:  {result.path}")
    print(f"table:  {result.path / 'table.csv'}")
    print(f"report: {path}")
    return 0 if result.ok else EXIT_FAILED


def _cmd_atlas(args: argparse.Namespace) -> int:
    from . import experiments
    from .experiments.atlas import atlas
    from .report.atlas import write_atlas_report

    if args.seeds is not None and args.seeds < 1:
        raise ValueError(f"`--seeds` must be at least 1; got {args.seeds}.")
    if args.workers < 1:
        raise ValueError(f"`--workers` must be at least 1; got {args.workers}.")
    executor = experiments.make_executor(
        args.backend, workers=args.workers, threads_per_worker=args.threads, address=args.address
    )
    with executor:
        cells = atlas(
            args.preset,
            args.out,
            seeds=args.seeds,
            executor=executor,
            progress=not args.no_progress,
            device=args.device,
        )
    info = cells.attrs["atlas"]
    path = Path(info["path"])
    page = write_atlas_report(path)
    if not cells.empty:
        counts = cells.groupby("theory")["verdict"].value_counts().unstack(fill_value=0)
        print(counts.to_string())
    print(
        f"runs:   {info['runs_now']} run now, {info['runs_failed']} failed; "
        f"confronted now: {info['confronted_now']}"
    )
    print(f"atlas:  {path}")
    print(f"cells:  {path / 'cells.csv'}")
    print(f"report: {page}")
    return EXIT_FAILED if info["runs_failed"] else 0


def _cmd_report(args: argparse.Namespace) -> int:
    from . import report

    chosen = [args.run_dir is not None, args.index is not None, args.compare is not None]
    if sum(chosen) != 1:
        raise ValueError(
            "`report` needs a run directory or --index DIR or --compare RUN [RUN ...] "
            "(exactly one of them)."
        )
    if args.metric is not None and args.compare is None:
        raise ValueError("`--metric` needs --compare RUN [RUN ...].")
    if args.compare is not None:
        from .experiments.compare_many import expand_run_dirs

        out = args.out if args.out is not None else args.compare[0].parent / "comparison"
        runs_ = [path for _, path in expand_run_dirs(args.compare)]  # a sweep gives its runs
        page = report.write_comparison_report(runs_, out, keys=args.metric, progress=True)
        print(f"report: {page}")
        return 0
    if args.index is not None:
        print(f"index:  {report.write_index(args.index)}")
        return 0
    if args.out is not None and (args.out.exists() or args.out.is_symlink()):
        raise FileExistsError(
            f"`--out` {str(args.out)!r} already exists; choose a new path for the copy "
            "(nothing was overwritten)."
        )
    path: Path
    if (args.run_dir / "sweep.json").is_file():
        path = report.write_sweep_report(args.run_dir)
    else:
        path = report.write_report(args.run_dir)
    print(f"report: {path}")
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "xb") as fh:  # exclusive: never replaces a file made meanwhile
            fh.write(path.read_bytes())
        print(f"copied: {args.out}")
    return 0


def _print_sweep_text(table: Any, grid: Sequence[str], *, max_metrics: int = 6) -> None:
    """A sweep's table for the terminal: the grid, seed and status, then at most
    ``max_metrics`` summary columns that differ between runs (``table.`` dropped from their
    names); table.csv has all."""
    table = table.rename(columns=lambda c: c.removeprefix("table."))
    fixed = [c for c in (*grid, "seed", "status") if c in table.columns]
    metrics = [
        c
        for c in table.columns
        if c not in fixed
        and not str(c).startswith("provenance.")
        and (len(table) < 2 or table[c].nunique(dropna=False) > 1)  # not the same in every run
    ]
    _print_frame(table, fixed + metrics[:max_metrics])
    if len(metrics) > max_metrics:
        print(f"({len(metrics) - max_metrics} more columns in table.csv)")


def _print_frame(df: Any, columns: Sequence[str]) -> None:
    import pandas as pd

    shown = [c for c in columns if c in df.columns]
    with pd.option_context("display.width", 160, "display.max_columns", 30):
        print(df[shown].to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def _fractions(text: str, name: str) -> tuple[float, ...]:
    """``--at`` / ``--change``: comma-separated fractions (their range is checked by the
    library), or ``none``."""
    if text.strip().lower() == "none":
        return ()
    try:
        return tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ValueError(
            f"`{name}` must be fractions separated by commas, like 0.3,0.5; got {text!r}."
        ) from None


#: Column widths of the terminal verdict table: theory, stream, verdict.
_COLUMNS = (14, 16, 19)


def _reason_lines(reason: str, indent: int, width: int) -> list[str]:
    """``reason`` wrapped to the terminal's width (whole: its end often says what to do);
    one line when the output is not a terminal (a file or a pipe: one row per verdict)."""
    import textwrap

    if not sys.stdout.isatty():
        return [reason]
    return textwrap.wrap(reason, max(40, width - indent)) or [""]


def _print_verdicts_head() -> None:
    a, b, c = _COLUMNS
    print(f"{'theory':<{a}}{'stream':<{b}}{'verdict':<{c}}reason")


def _print_verdict(theory: str, stream: str, verdict: Any) -> None:
    """One verdict row: the stream named as the engine names it, the reason wrapped."""
    import shutil

    a, b, c = _COLUMNS
    width = shutil.get_terminal_size((110, 24)).columns
    lines = _reason_lines(verdict.reason, a + b + c, width)
    print(f"{theory:<{a}}{stream or '(no prefix)':<{b}}{verdict.verdict:<{c}}{lines[0]}")
    for line in lines[1:]:
        print(" " * (a + b + c) + line)


def _interval_text(low: float, high: float) -> str:
    """``[low, high]``, or ``[not determined]`` when the interval is unbounded or spans more
    than the verdict's SPAN_MAX (printing 5e-96 ... 7e+100 says nothing)."""
    from .theories.verdict import SPAN_MAX

    finite = math.isfinite(low) and math.isfinite(high)
    wide = (
        finite and low * high > 0 and max(abs(low), abs(high)) > SPAN_MAX * min(abs(low), abs(high))
    )
    if not finite or wide:
        return " [not determined]"
    return f" [{_cell(low)}, {_cell(high)}]"


def _citation_line(theory: str) -> str | None:
    """``[1] (theory) <citation>``: what the theory's reasons cite as [1]; ``None`` for a
    theory the registry does not know (one made up in a test)."""
    from . import theories

    try:
        return f"[1] ({theory}) {theories.get(theory).citation}"
    except (KeyError, ValueError):
        return None


def _print_compare(entries: Sequence[Any]) -> None:
    _print_verdicts_head()
    pad = _COLUMNS[0]
    cited: set[str] = set()
    for e in entries:
        if e.theory not in cited:  # the head of the theory's rows
            cited.add(e.theory)
            line = _citation_line(e.theory)
            if line is not None:
                print(line)
        _print_verdict(e.theory, e.stream, e.verdict)
        if e.fit is None:
            _print_regime_windows(e.windows)
            continue
        fit = e.fit
        items = []
        for k, p in fit.params.items():
            text = f"{k}={_cell(p.value)}"
            if p.interval is not None:
                text += _interval_text(*p.interval)
            if p.unit:
                text += f" {p.unit}"
            if p.expected is not None:
                text += f" (settings: {_cell(p.expected)})"
            items.append(text)
        print(f"{'':<{pad}}{'params':<12}{', '.join(items)}")
        for group in ("goodness", "predictions"):
            values = ", ".join(f"{k}={_cell(v)}" for k, v in getattr(fit.shown, group).items())
            if values:
                print(f"{'':<{pad}}{group:<12}{values}")
        holding = [w for w in e.windows if w.verdict.verdict == "holds"]
        if e.windows:
            spans = ", ".join(f"{w.since:g}-{w.until:g}" for w in holding) or "none"
            print(f"{'':<{pad}}{'windows':<12}{len(e.windows)} tried; holds on steps: {spans}")


def _print_regime_windows(windows: Sequence[Any]) -> None:
    """For a stream out of the theory's regime as a whole: what its windows inside the
    regime gave (each window's verdict), or that none of them is inside it."""
    if not windows:
        return
    inside = [w for w in windows if w.verdict.verdict != "out of regime"]
    if not inside:
        text = f"none of {len(windows)} inside the regime"
    else:
        text = "inside the regime: " + ", ".join(
            f"steps {w.since:g}-{w.until:g} {w.verdict.verdict}" for w in inside
        )
    print(f"{'':<{_COLUMNS[0]}}{'windows':<12}{text}")


def _unfinished_note(run: Any) -> str | None:
    """A line saying that ``run`` has not completed (its verdicts are provisional), or
    ``None`` for a completed run."""
    try:
        state = run.state
    except (ValueError, OSError):
        state = "of unknown state"
    if state == "completed":
        return None
    what = "still training" if state == "running" else state
    return (
        f"run {str(run.path)!r} is {what} (state {state!r}, not completed): these verdicts "
        "are of the records it has so far."
    )


def _cmd_compare(args: argparse.Namespace) -> int:
    from .experiments.compare import chosen_confrontations, compare
    from .experiments.sweep import is_sweep
    from .runs._outputs import check_output_dir, default_out

    force = getattr(args, "force", False)
    windows = not getattr(args, "no_windows", False)
    fmt = getattr(args, "format", "text")
    theories = getattr(args, "theory", None)
    chosen_confrontations(theories)  # an unknown name is refused before any work
    dirs = args.run_dir if isinstance(args.run_dir, list) else [args.run_dir]
    if len(dirs) > 1 or is_sweep(dirs[0]):
        return _compare_many(
            dirs, args.out, force=force, windows=windows, fmt=fmt, theories=theories
        )
    from . import report
    from .report._reading import read_run  # JSON files read safely first (size, nesting)

    run = read_run(dirs[0])
    out = args.out if args.out is not None else default_out(run.path, "compare")
    check_output_dir(out, "compare")  # refuse a foreign --out before any work
    note = _unfinished_note(run)
    entries = compare(run, force=force, windows=windows, theories=theories)
    if note is not None:
        print(f"note: {note}")
    _print_compare(entries)
    path = report.write_compare_report(entries, run.path, out, note=note)
    print(f"report: {path}")
    if fmt != "text":
        from .experiments.compare_many import verdict_table

        suffix = "csv" if fmt == "csv" else "tex"
        _print_table(verdict_table(entries), fmt, path.parent / f"verdicts.{suffix}", index=False)
    return 0


def _comma_list(text: str, name: str) -> list[str]:
    items = [x.strip() for x in text.split(",") if x.strip()]
    if not items:
        raise ValueError(f"`{name}` must be a comma-separated list; got {text!r}.")
    return items


def _cmd_claims(args: argparse.Namespace) -> int:
    import tempfile

    from .experiments import claims, list_experiments

    if not args.runs and not args.smoke and args.run is None:
        raise ValueError("`runs` must name at least one run directory (or pass --smoke or --run).")
    specs = {s.name: s for s in list_experiments() if "." in s.name}  # theories' own
    made = _claims_presets_run(args, specs) if args.run is not None else []
    with tempfile.TemporaryDirectory() as tmp:
        if args.smoke:
            made += claims.run_smoke(list(specs), tmp)
        rows = claims.collect([*args.runs, *made])
    if not rows:
        print(_no_claims_line([*args.runs, *made]))
        return 0
    _print_claims(rows)
    if args.save is not None:
        notes: list[str] = []
        saved = claims.save_rows(rows, args.save, notes=notes)
        for note in notes:
            print(f"note: {note}")
        print(f"saved: {saved}")
        # the docs show what the file now holds for these experiments: kept and new seeds
        ran = {(r.experiment, r.preset) for r in rows}
        rows = [r for r in claims.load_rows(saved) if (r.experiment, r.preset) in ran]
    if args.update_docs is not None:
        for page in claims.update_docs(rows, args.update_docs):
            print(f"updated: {page}")
    return 0


def _claims_presets_run(args: argparse.Namespace, specs: dict[str, Any]) -> list[Path]:
    """``claims --run PRESET``: run the experiments named by ``--only`` (by default every one
    that declares the preset; ``gpu`` is optional) at ``--seeds``; their run directories."""
    from .experiments import claims

    names = list(specs)
    having = [n for n in names if args.run in specs[n].presets]
    only = having if args.only is None else _comma_list(args.only, "--only")
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise ValueError(f"`--only` must name registered experiments; got {unknown}.")
    lacking = sorted(set(only) - set(having))
    if lacking:
        raise ValueError(
            f"`--only` must name experiments with a {args.run!r} preset; got {lacking}."
        )
    try:
        seed_list = [_seed(v) for v in _comma_list(args.seeds, "--seeds")]
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"`--seeds`: {exc}.") from None
    return list(claims.run_presets(only, args.run, args.out, seeds=seed_list, progress=True))


def _print_claims(rows: Sequence[Any]) -> None:
    """One markdown table per experiment and preset, headed by its seeds and sources."""
    from .experiments import claims

    groups: dict[tuple[str, str], list[claims.ClaimRow]] = {}
    for r in rows:
        groups.setdefault((r.experiment, r.preset), []).append(r)
    for (experiment, preset), group in groups.items():
        first = group[0]
        seeds = ", ".join(map(str, sorted(set(first.seeds))))
        print(f"\n## {experiment} ({preset}; seeds {seeds}; {', '.join(sorted(first.sources))})\n")
        print(claims.markdown_table(group), end="")


def _no_claims_line(paths: Sequence[str | Path]) -> str:
    """Why ``ncdyn claims`` found nothing: which experiments the runs hold, and what to run."""
    from .experiments import claims

    found: dict[str, int] = {}
    for run_dir in claims._run_dirs(paths):
        config, _ = claims._summary(run_dir)
        name = str(config.get("experiment", "?"))
        found[name] = found.get(name, 0) + 1
    held = ", ".join(f"{n} ({k} run{'s' if k != 1 else ''})" for n, k in sorted(found.items()))
    where = f"these runs hold {held}, which check" if found else "no runs found here; they check"
    return (
        f"no paper claims: {where} no paper claim. Claims come from the theories' "
        "experiments (`ncdyn list`): e.g. `ncdyn claims --run smoke --only lesde.fig1`."
    )


def _compare_many(
    dirs: Sequence[Path],
    out: Path | None,
    *,
    force: bool,
    windows: bool,
    fmt: str = "text",
    theories: Sequence[str] | None = None,
) -> int:
    from .experiments.compare_many import compare_runs, expand_run_dirs, summary_table
    from .report.confront import write_summary_report
    from .runs._outputs import check_output_dir

    if out is None:
        out = dirs[0] / "compare" if len(dirs) == 1 else Path("compare")
    check_output_dir(out, "compare")  # refuse a foreign --out before any work
    if not expand_run_dirs(dirs):
        raise ValueError(f"`run_dir` {str(dirs[0])!r} holds no runs to compare.")
    results = compare_runs(
        dirs, force=force, windows=windows, progress=sys.stderr.isatty(), theories=theories
    )
    table = summary_table(results)
    if fmt == "text":
        _print_frame(table, list(table.columns))
    path = write_summary_report(results, out)
    if fmt == "csv":
        _print_table(table, fmt, path.parent / "summary.csv", index=False, write=False)
    elif fmt == "latex":  # summary.tex is the package-free tabular the report writes
        print((path.parent / "summary.tex").read_text(), end="")
    print(f"summary: {path.parent / 'summary.csv'}, summary.tex, summary.html")
    return 0


def _cmd_forecast(args: argparse.Namespace) -> int:
    from . import report
    from .experiments.forecast import DEFAULT_AT, DEFAULT_CHANGE, forecast, forecast_table
    from .runs._outputs import check_output_dir, default_out

    at = DEFAULT_AT if args.at is None else _fractions(args.at, "at")
    change = DEFAULT_CHANGE if args.change is None else _fractions(args.change, "change")
    if not at and not change:
        raise ValueError("`at` and `change` are both empty; give at least one cut point.")
    from .report._reading import read_run

    run = read_run(args.run_dir)
    single = at[0] if args.at is not None and len(at) == 1 else None
    out = args.out if args.out is not None else default_out(run.path, "forecast", single)
    check_output_dir(out, "forecast")  # refuse a foreign --out before any work
    entries = forecast(run, at, change=change, force=args.force)
    table = forecast_table(entries)
    cols = ["theory", "stream", "cutoff", "observable", "method", "rmse", "error_unit"]
    cols += ["skill_vs_last_value", "skill_vs_power_law", "coverage"]
    scored = table.dropna(subset=["method"]) if "method" in table else table.iloc[:0]
    if not scored.empty:
        _print_frame(scored, cols)
    _print_verdicts_head()
    for e in entries:
        _print_verdict(e.theory, e.stream, e.verdict)
    path = report.write_forecast_report(entries, run.path, out, at)
    print(f"report: {path}")
    return 0


def _cell(v: Any) -> str:
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_cell(x) for x in v) + "]"
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _format_table(table: dict[str, dict[str, float]]) -> str:
    cols = list(dict.fromkeys(k for row in table.values() for k in row))
    width = max(len(r) for r in table) + 2
    head = " " * width + "".join(f"{c:>16}" for c in cols)
    lines = [head]
    for name, row in table.items():
        cells = "".join(f"{row.get(c, float('nan')):>16.4g}" for c in cols)
        lines.append(f"{name:<{width}}{cells}")
    return "\n".join(lines)


def _run_and_report(
    name: str, preset: str, out: Path | None, args: argparse.Namespace, overrides: dict[str, Any]
) -> int:
    import torch

    from . import experiments, report

    if args.threads < 1:
        raise ValueError(f"`--threads` must be >= 1; got {args.threads}.")
    torch.set_num_threads(args.threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(args.threads)  # NumPy's BLAS too: oversubscribed threads spin and stall
    torch.manual_seed(args.seed)  # the one global seeding, for code that uses torch's default RNG
    # where experiments.run writes the traceback of a failure (main names it, if written)
    args.error_file = (out if out is not None else Path("runs") / f"{name}-{preset}") / "error.txt"
    run = experiments.run(
        name,
        preset=preset,
        out=out,
        seed=args.seed,
        resume=args.resume,
        overwrite=args.overwrite,
        progress=not args.no_progress,
        device=args.device,
        **overrides,
    )
    table = run.summary.get("table")
    fmt = getattr(args, "format", "text")  # `run` has no --format: text
    if isinstance(table, dict) and table and all(isinstance(v, dict) for v in table.values()):
        if fmt == "text":
            print(_format_table(table))
        else:
            suffix = "csv" if fmt == "csv" else "tex"
            _print_table(_summary_frame(table), fmt, run.path / f"table.{suffix}", index=True)
    path = report.write_report(run)
    print(f"run:    {run.path}")
    print(f"report: {path}")
    return 0


def _cmd_list_theories() -> int:
    from . import theories

    names = theories.available()
    width = max(len(n) for n in names) + 2
    print(f"{'theory':<{width}}{'experiments':<13}{'confronts':<11}title / [1] citation / docs")
    for name in names:
        t = theories.get(name)
        confronts = "yes" if t.confrontation is not None else "no"
        print(f"{name:<{width}}{len(t.load_experiments()):<13}{confronts:<11}{t.title}")
        print(f"{'':<{width + 24}}[1] {t.citation}")  # what a verdict reason's "[1]" cites
        print(f"{'':<{width + 24}}{t.docs}")
    return 0


def _cmd_list(args: argparse.Namespace) -> int:
    # the built-in experiments are listed from a table: importing them takes seconds
    from ._experiment_listing import listing

    if args.theories:
        return _cmd_list_theories()
    rows = listing()
    if args.theory is not None:
        rows = [r for r in rows if r[1] == args.theory]
    if args.names:
        print("\n".join(row[0] for row in rows))
        return 0
    width = max((len(row[0]) for row in rows), default=10) + 2
    print(f"{'experiment':<{width}}{'theory':<14}{'presets':<20}summary")
    for name, theory, presets, summary in rows:
        print(f"{name:<{width}}{theory:<14}{presets:<20}{summary}")
    return 0


def _dispatch(args: argparse.Namespace) -> int:
    if args.command == "list":
        return _cmd_list(args)
    if args.command == "demo":
        out = args.out if args.out is not None else Path("runs/demo")
        code = _run_and_report("demo", args.preset, out, args, {})
        print("\ntheory against run (ncdyn compare):")
        compare_args = argparse.Namespace(run_dir=[out], out=None, format=args.format)
        return code or _cmd_compare(compare_args)
    if args.command == "run":
        overrides = _parse_overrides(args.overrides, args.config)
        return _run_and_report(args.experiment, args.preset, args.out, args, overrides)
    if args.command == "report":
        return _cmd_report(args)
    if args.command == "sweep":
        return _cmd_sweep(args)
    if args.command == "atlas":
        return _cmd_atlas(args)
    if args.command == "compare":
        return _cmd_compare(args)
    if args.command == "forecast":
        return _cmd_forecast(args)
    if args.command == "claims":
        return _cmd_claims(args)
    raise AssertionError(args.command)  # pragma: no cover - argparse guarantees a command


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ncdyn``; returns the exit code."""
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        return _dispatch(args)
    except BrokenPipeError:  # output piped into `head` and the like: stop quietly
        sys.stderr.close()
        return 0
    except SystemExit as exc:  # SIGTERM while a run was open (ncdynamics.runs._signals)
        signals = sys.modules.get("ncdynamics.runs._signals")
        if signals is None or not isinstance(exc, signals.Terminated):
            raise
        print(
            "ncdyn: terminated (SIGTERM); the run is marked failed: resume with --resume",
            file=sys.stderr,
        )
        return 128 + 15
    except KeyboardInterrupt:
        hint = (
            "run the same command again to resume"
            if args.command in ("sweep", "atlas")
            else ("resume with --resume")
        )
        print(f"ncdyn: interrupted; {hint}", file=sys.stderr)
        return 130
    except (
        ValueError,
        TypeError,
        FileNotFoundError,
        FileExistsError,  # RunExistsError, an output that is not the command's own
        KeyError,
        ConnectionError,
        ImportError,
    ) as exc:
        msg = str(exc.args[0]) if isinstance(exc, KeyError) and exc.args else str(exc)
        line = cli_words(msg.splitlines()[0]) if msg else type(exc).__name__
        print(f"ncdyn: error: {line}", file=sys.stderr)
        return EXIT_USAGE
    except OSError as exc:  # read-only directory, disk full, a path under a regular file...
        print(f"ncdyn: error: {_os_error_line(exc, args)}{_traceback_at(args)}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # a failure inside an experiment: one line, details on disk
        memory = _allocation_line(exc, args)
        if memory is not None:
            print(f"ncdyn: failed: {memory}{_traceback_at(args)}", file=sys.stderr)
            return EXIT_FAILED
        print(
            f"ncdyn: failed: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
            f"{_traceback_at(args)}",
            file=sys.stderr,
        )
        return EXIT_FAILED


_ALLOC = re.compile(r"(?:can't allocate memory|out of memory|not enough memory)", re.I)
_TRIED = re.compile(r"tried to allocate (\d+) bytes")


def _allocation_line(exc: BaseException, args: argparse.Namespace) -> str | None:
    """One line for a failed memory allocation (torch's allocator message or MemoryError):
    how much was asked for and the ``--set`` settings that may have asked for it; ``None``
    for any other failure."""
    text = str(exc)
    if not isinstance(exc, MemoryError) and not _ALLOC.search(text):
        return None
    tried = _TRIED.search(text)
    amount = f" {int(tried.group(1)) / 2**30:.3g} GiB at once" if tried else " more memory"
    try:
        have = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        machine = f", and this machine has {have / 2**30:.3g} GiB"
    except (ValueError, OSError, AttributeError):
        machine = ""
    given = getattr(args, "overrides", None) or []
    settings = (
        f"; the settings given were {', '.join('--set ' + str(g) for g in given)}: lower them"
        if given
        else "; use a smaller preset or lower the sizes with --set"
    )
    return f"out of memory: the run asked for{amount}{machine}{settings}."


def cli_words(message: str) -> str:
    """``message`` as the command line says it: a library message that gives a keyword
    argument and its flag (``"pass resume=True (ncdyn: --resume)"``) keeps only the flag."""
    import re

    message = re.sub(
        r"\b(\w+)=True or (\w+)=True \((?:ncdyn: )?(--[\w-]+) or (--[\w-]+)\)",
        r"\3 or \4",
        message,
    )
    message = re.sub(r"\b\w+=True \((?:ncdyn: )?(--[\w-]+)\)", r"\1", message)
    return message.replace(" (ncdyn: --resume)", "")


def _traceback_at(args: argparse.Namespace) -> str:
    """`` (traceback in RUN/error.txt)`` when a failed run wrote that file, else nothing."""
    error_file = getattr(args, "error_file", None)
    if error_file is not None and Path(error_file).is_file():
        return f" (traceback in {error_file})"
    return ""


def _os_error_line(exc: OSError, args: argparse.Namespace) -> str:
    """One line for an operating-system error: what failed, and the path it concerns (the
    error's own file name, else the command's output or run directory)."""
    what = exc.strerror or (str(exc).splitlines()[0] if str(exc) else type(exc).__name__)
    path = exc.filename
    if path is None:
        for attr in ("out", "index", "run_dir"):
            if getattr(args, attr, None) is not None:
                path = getattr(args, attr)
                break
    return f"{what}: {str(path)!r}" if path is not None else str(what)


# ---------------------------------------------------------------------------- --format
FORMATS = ("text", "csv", "latex")


def _format_flag(p: argparse.ArgumentParser, files: str) -> None:
    """``--format {text,csv,latex}``: how a command prints its table (and which file it adds)."""
    p.add_argument(
        "--format",
        default="text",
        choices=FORMATS,
        help=f"how the table is printed: text (default), csv or latex; csv and latex are "
        f"also written to {files}",
    )


def _summary_frame(table: dict[str, dict[str, float]]) -> Any:
    """An experiment's summary table ``{row: {column: value}}`` as a DataFrame (rows in
    order, columns in order of first appearance)."""
    import pandas as pd

    cols = list(dict.fromkeys(k for row in table.values() for k in row))
    frame = pd.DataFrame.from_dict(table, orient="index")
    return frame.reindex(columns=cols)


def _table_text(df: Any, fmt: str, *, index: bool) -> str:
    """``df`` as CSV (full precision) or as a LaTeX tabular (4 significant digits, special
    characters escaped, missing values as ``--``)."""
    if fmt == "csv":
        return str(df.to_csv(index=index))
    if fmt == "latex":
        return str(
            df.to_latex(index=index, float_format=lambda v: f"{v:.4g}", escape=True, na_rep="--")
        )
    raise ValueError(f"`--format` must be one of {', '.join(FORMATS)}; got {fmt!r}.")


def _print_table(df: Any, fmt: str, path: Path, *, index: bool, write: bool = True) -> None:
    """Print ``df`` in ``fmt`` (csv or latex) and write the same text to ``path``
    atomically (``write=False``: the file exists already, written by the library)."""
    text = _table_text(df, fmt, index=index)
    print(text, end="" if text.endswith("\n") else "\n")
    if write:
        from .runs._io import atomic_write

        atomic_write(path, lambda p: p.write_text(text))
        print(f"table:  {path}")


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
