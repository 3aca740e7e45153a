"""Run the calibration kit on every theory and table it in docs/confront.md.

:func:`ncdynamics.theories.testing.check_theory` is run, seeded, on every registered theory
that declares a calibration, with more streams than the test suite uses; the verdict and the
fitted parameters of every stream are written to
``benchmarks/results/calibration/<host>-<date>.json``. The region of ``docs/confront.md``
between the markers::

    <!-- calibration:table -->
    ...generated...
    <!-- /calibration -->

is then replaced by two tables made from that file (nothing in it is typed by hand): true
positives under each noise and false positives per generic family, and, per parameter, the
coverage of the 95% intervals and the spread over seeds / reported standard error, under
independent and AR(1) noise; and, where the file holds them (``check_theory(...,
forecast=True)``, skipped with ``--no-forecast``; files made before issue 28's forecast bands
lack them and render as before), a third: per theory, the mean share of later records inside
the 95% forecast band and the records' error over the band's standard error.

Usage::

    python benchmarks/calibration_table.py [--n-true 10] [--n-generic 5] [--seed 0]
        [--no-forecast] [--theories NAME [NAME ...]]
    python benchmarks/calibration_table.py --render [--results FILE|FOLDER] [--check]

``--theories`` runs only the theories named and merges them into the other theories of the
newest results file (or ``--results FILE``; ``--results FOLDER`` takes the newest file there
and writes there), read when the run ends, so that runs of different theories side by side
all end up in the newest file: the new file holds, per theory, when, where and
with which settings it was measured (``"measured"``), so one theory can be re-measured after
a change to it; the tables say which settings each row comes from when they differ.
``--render`` makes the tables from the newest results file without running anything;
``--check`` changes nothing and exits 1 when the docs differ from what the results give.

``--bands-only --theories NAME ...`` measures again only the forecast bands of the named
theories' true streams (the same streams: the file's seeds and noises) and writes a new file
with everything else kept: for a change to a theory's band alone, which no verdict, fitted
value or interval uses, at a fraction of a full run's cost. The theory's ``"measured"`` entry
gets the date of that measurement under ``"bands"``, and the band table says so.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import math
import platform
import re
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
DOCS = HERE.parent / "docs" / "confront.md"
RESULTS = HERE / "results" / "calibration"

_REGION = re.compile(r"(<!-- calibration:table -->\n)(?P<body>.*?)(<!-- /calibration -->)", re.S)

_FAMILY_LABELS = {
    "exponential": "exp. relaxation",
    "power_law": "power law",
    "two_exponentials": "two exp.",
    "logistic": "logistic",
    "random_walk": "random walk",
    "ar1_noise": "AR(1) noise",
}


#: The settings of a measurement, recorded per theory under ``"measured"``.
_SETTINGS = ("date", "host", "seed", "n_true", "n_generic", "forecast")


def calibrated() -> list[str]:
    """The registered theories that declare a calibration, in registry order."""
    from ncdynamics import theories

    return [n for n in theories.available() if theories.get(n).calibration is not None]


def run(
    n_true: int,
    n_generic: int,
    seed: int,
    forecast: bool = True,
    names: list[str] | None = None,
) -> dict[str, Any]:
    """Calibrated theories (``names``, default all) through ``check_theory``; the raw results,
    JSON-ready, each theory's entry with its settings under ``"measured"``."""
    from ncdynamics.theories.testing import check_theory

    known = calibrated()
    for name in names or []:
        if name not in known:
            raise ValueError(f"--theories must name calibrated theories ({known}), got {name!r}")
    out: dict[str, Any] = {
        "date": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "host": platform.node(),
        "seed": seed,
        "n_true": n_true,
        "n_generic": n_generic,
        "forecast": forecast,
        "theories": {},
    }
    settings = {k: out[k] for k in _SETTINGS}
    for name in known:
        if names and name not in names:
            continue
        start = time.perf_counter()
        report = check_theory(
            name, seed=seed, n_true=n_true, n_generic=n_generic, smoke=False, forecast=forecast
        )
        seconds = time.perf_counter() - start
        print(f"{name}: {len(report.results)} streams in {seconds:.0f} s", file=sys.stderr)
        out["theories"][name] = {
            "measured": settings,
            "seconds": seconds,
            "true_params": report.true_params,
            "results": [
                {
                    "kind": r.kind,
                    "family": r.family,
                    "seed": r.seed,
                    "verdict": r.verdict,
                    "params": r.params,
                    "intervals": {k: list(v) for k, v in r.intervals.items()},
                    **(
                        {"band_coverage": list(r.band_coverage), "band_z": list(r.band_z)}
                        if forecast and r.kind == "true"
                        else {}
                    ),
                }
                for r in report.results
            ],
        }
    return out


def remeasure_bands(results: dict[str, Any], names: list[str]) -> dict[str, Any]:
    """``results`` with the forecast bands of the true streams of theories ``names`` measured
    again (:func:`ncdynamics.theories.testing.true_stream_band`), each theory's ``"measured"``
    entry stamped ``"bands"`` with the date; every other number is kept. JSON has no NaN: a
    missing error is ``None``."""
    from ncdynamics.theories import testing

    out = json.loads(json.dumps(results))
    date = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for name in names:
        if name not in out["theories"]:
            raise ValueError(f"--theories must name theories of the results file, got {name!r}")
        entry = out["theories"][name]
        start = time.perf_counter()
        for row in entry["results"]:
            if row["kind"] != "true":
                continue
            coverage, z = testing.true_stream_band(name, row["family"], int(row["seed"]))
            row["band_coverage"] = [float(c) for c in coverage]
            row["band_z"] = [float(x) if math.isfinite(x) else None for x in z]
        print(f"{name}: bands in {time.perf_counter() - start:.0f} s", file=sys.stderr)
        entry["measured"] = {**measured(results, name), "forecast": True, "bands": date}
    out.update(date=date, host=platform.node())
    return out


def measured(results: dict[str, Any], name: str) -> dict[str, Any]:
    """When, where and with which settings theory ``name`` of ``results`` was measured: its
    own ``"measured"`` entry, else (files made before ``--theories``) the file's own."""
    entry = results["theories"][name]
    if "measured" in entry:
        return dict(entry["measured"])
    forecast = any("band_coverage" in r for r in entry["results"])
    return {**{k: results.get(k) for k in _SETTINGS[:-1]}, "forecast": forecast}


def merge(base: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """The theories of ``new`` in place of (or added to) those of ``base``; every theory keeps
    its own ``"measured"`` settings; the file's own date and host are ``new``'s."""
    theories = {
        name: {"measured": measured(base, name), **base["theories"][name]}
        for name in base["theories"]
    }
    theories.update(
        {
            name: {"measured": measured(new, name), **new["theories"][name]}
            for name in new["theories"]
        }
    )
    return {**new, "theories": dict(sorted(theories.items()))}


def _report(name: str, data: dict[str, Any]) -> Any:
    from ncdynamics.theories.testing import CalibrationReport, StreamResult

    report = CalibrationReport(name, true_params=dict(data["true_params"]))
    for r in data["results"]:
        intervals = {k: (float(v[0]), float(v[1])) for k, v in r["intervals"].items()}
        report.results.append(
            StreamResult(
                r["kind"],
                r["family"],
                r["seed"],
                r["verdict"],
                "",
                r["params"],
                intervals,
                # absent from files made before the forecast bands were measured
                tuple(float(x) for x in r.get("band_coverage", ())),
                tuple(math.nan if x is None else float(x) for x in r.get("band_z", ())),
            )
        )
    return report


def _rate(x: float, n: int) -> str:
    return "–" if math.isnan(x) else f"{round(x * n)}/{n}"


def _num(x: float) -> str:
    return "–" if not math.isfinite(x) else f"{x:.2f}"


def _made(results: dict[str, Any]) -> str:
    """The sentence saying how the theories were measured: one clause per distinct setting
    (seed, stream counts, day), naming the theories when there is more than one."""
    groups: dict[tuple[Any, ...], list[str]] = {}
    for name in sorted(results["theories"]):
        m = measured(results, name)
        groups.setdefault((m["seed"], m["n_true"], m["n_generic"], m["date"][:10]), []).append(name)
    clauses = [
        f"seed {seed}, {n_true} true streams per noise and {n_generic} per generic family and "
        f"theory; made {day}" + ("" if len(groups) == 1 else " for " + ", ".join(names))
        for (seed, n_true, n_generic, day), names in groups.items()
    ]
    text = "; ".join(clauses)
    return text[0].upper() + text[1:] + " by `benchmarks/calibration_table.py`."


def render(results: dict[str, Any]) -> str:
    """The two markdown tables of the results (module docstring)."""
    from ncdynamics.theories.testing import GENERIC_FAMILIES

    fams = list(GENERIC_FAMILIES)
    head = ["theory", "TP indep.", "TP AR(1)", "FP all", *(_FAMILY_LABELS[f] for f in fams)]
    lines = [
        _made(results) + " TP: true streams judged "
        "`holds` or `holds in a window`; FP: generic streams judged so (target: TP ≥ 90%, "
        "FP ≤ 5% overall and ≤ 20% per family).",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "|".join(["---"] + ["---:"] * (len(head) - 1)) + "|",
    ]
    cover = [
        "| theory | parameter | true | coverage indep. | coverage AR(1) | spread/SE indep. "
        "| spread/SE AR(1) |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    bands = [
        "| theory | band coverage indep. | band coverage AR(1) | error/SE indep. "
        "| error/SE AR(1) |",
        "|---|---:|---:|---:|---:|",
    ]
    unbanded: list[str] = []
    for name, data in sorted(results["theories"].items()):
        rep = _report(name, data)
        by = rep.fp_by_family
        n_of = {f: sum(r.kind == "generic" and r.family == f for r in rep.results) for f in fams}
        n_true = {
            k: sum(r.kind == "true" and r.family == k for r in rep.results)
            for k in ("independent", "ar1")
        }
        n_gen = sum(n_of.values())
        row = [
            name,
            _rate(rep.tp_rate_of("independent"), n_true["independent"]),
            _rate(rep.tp_rate_of("ar1"), n_true["ar1"]),
            _rate(rep.fp_rate, n_gen),
            *(_rate(by.get(f, math.nan), n_of[f]) for f in fams),
        ]
        lines.append("| " + " | ".join(row) + " |")
        cov = {k: rep.coverage(k) for k in ("independent", "ar1")}
        ratio = {k: rep.spread_over_se(k) for k in ("independent", "ar1")}
        for p, true in rep.true_params.items():
            cover.append(
                f"| {name} | `{p}` | {true:g} | {_num(cov['independent'].get(p, math.nan))} | "
                f"{_num(cov['ar1'].get(p, math.nan))} | {_num(ratio['independent'][p])} | "
                f"{_num(ratio['ar1'][p])} |"
            )
        kinds = ("independent", "ar1")
        if not any(math.isfinite(rep.band_coverage(k)) for k in kinds):
            unbanded.append(name)
        else:
            bands.append(
                f"| {name} | "
                + " | ".join(_num(rep.band_coverage(k)) for k in kinds)
                + " | "
                + " | ".join(_num(rep.band_error_over_se(k)) for k in kinds)
                + " |"
            )
    cover_note = (
        "Coverage: the share of true-stream fits whose 95% interval holds the true value "
        "(target ≥ 0.90); spread/SE: the standard deviation of the fitted value over seeds "
        "divided by the median reported standard error (half-width / 1.96; target 0.7–1.4)."
    )
    out = [*lines, "", cover_note, "", *cover]
    if len(bands) > 2:
        band_note = (
            "Forecast bands: the mean share of the records after each forecast origin inside "
            "the theory's 95% band, over the origins and observables of the true streams "
            "(target ≥ 0.90); error/SE: the root mean square of those records' errors over "
            "the band's standard error (half-width / 1.96), 1 for an honest band and below 1 "
            "for one wider than it needs to be."
        )
        if unbanded:
            band_note += " Not measured for " + ", ".join(unbanded) + "."
        again: dict[str, list[str]] = {}
        for name in sorted(results["theories"]):
            day = measured(results, name).get("bands")
            if day:
                again.setdefault(day[:10], []).append(name)
        for day, names in again.items():
            band_note += (
                f" Bands re-measured with `--bands-only` on {day} for {', '.join(names)} "
                "(same streams; the other tables are from the run above)."
            )
        out += ["", band_note, "", *bands]
    return "\n".join(out) + "\n"


def rewrite(text: str, results: dict[str, Any]) -> str:
    """``text`` with its calibration region regenerated from ``results``."""
    if not _REGION.search(text):
        raise ValueError("the docs have no `<!-- calibration:table -->` region.")
    return _REGION.sub(lambda m: m.group(1) + render(results) + m.group(3), text)


def newest_results(folder: Path = RESULTS) -> Path:
    """The calibration results file of ``folder`` with the latest ``date``."""
    files = sorted(folder.glob("*.json"))
    if not files:
        raise FileNotFoundError(f"no results file (*.json) in {folder}; run this script first.")
    return max(files, key=lambda f: (json.loads(f.read_text(encoding="utf-8"))["date"], f.name))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n-true", type=int, default=10)
    parser.add_argument("--n-generic", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--no-forecast", action="store_true", help="do not measure the forecast bands"
    )
    parser.add_argument(
        "--theories",
        nargs="+",
        metavar="NAME",
        help="run only these and merge them into the other theories of the results file",
    )
    parser.add_argument("--render", action="store_true", help="only regenerate the tables")
    parser.add_argument(
        "--bands-only",
        action="store_true",
        help="measure again only the forecast bands of the --theories named (module docstring)",
    )
    parser.add_argument(
        "--results",
        type=Path,
        help="results file, or a folder for its newest one (and where a run writes; default "
        "benchmarks/results/calibration)",
    )
    parser.add_argument("--docs", type=Path, default=DOCS)
    parser.add_argument("--check", action="store_true", help="exit 1 if the docs are stale")
    args = parser.parse_args()
    if args.bands_only and not args.theories:
        parser.error("--bands-only needs --theories NAME ...")
    given: Path = args.results or RESULTS

    def source() -> Path:
        return newest_results(given) if given.is_dir() else given

    if args.render or args.check:
        results = json.loads(source().read_text(encoding="utf-8"))
    elif args.bands_only:
        results = remeasure_bands(json.loads(source().read_text(encoding="utf-8")), args.theories)
        folder = given if given.is_dir() else given.parent
        stamp = results["date"].replace(":", "")
        path = folder / f"{results['host'] or 'host'}-{stamp}.json"
        path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    else:
        if args.theories:  # looked up before the run, so that a missing file fails at once
            source()
        results = run(
            args.n_true, args.n_generic, args.seed, not args.no_forecast, names=args.theories
        )
        if args.theories:  # read after the run: another run may have written a newer file
            results = merge(json.loads(source().read_text(encoding="utf-8")), results)
            # the file's date is when it was written, so the newest file holds every merge
            results["date"] = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        folder = given if given.is_dir() else given.parent
        folder.mkdir(parents=True, exist_ok=True)
        stamp = results["date"].replace(":", "")
        path = folder / f"{results['host'] or 'host'}-{stamp}.json"
        path.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {path}", file=sys.stderr)
    text = args.docs.read_text(encoding="utf-8")
    new = rewrite(text, results)
    if args.check:
        if new != text:
            print(f"{args.docs} is stale; run {Path(__file__).name} --render", file=sys.stderr)
            return 1
        return 0
    args.docs.write_text(new, encoding="utf-8")
    print(render(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
