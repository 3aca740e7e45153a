"""Theory against run: fit every applicable theory to a recorded run, or forecast its end.

Each theory declares what it needs from a run (:class:`ncdynamics.theories.Confrontation`,
named by its :class:`~ncdynamics.theories.Theory` declaration); this module gets those
declarations from the theory registry, finds the streams of a run that carry what each
needs, and

- :func:`compare` fits each applicable theory to the whole of each stream;
- :func:`forecast` fits it to the records up to a fraction of the run only, predicts each
  observable at the run's last record, and scores the prediction against what the run did,
  beside two naive baselines: the last value carried forward, and a power law
  ``|v| = c (step - s0 + 1)^p`` fitted in log-log to the later half of the fitted records
  (``s0`` the stream's first step).

The error of a prediction is ``|log10(pred / actual)|`` (decades off), infinite when the signs
differ or the prediction is not finite.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .. import runs, theories
from .._validation import check_scalar
from ..runs._outputs import OUTPUT_FORMAT as OUTPUT_FORMAT
from ..runs._outputs import check_output_dir as check_output_dir
from ..runs._outputs import write_output_marker as write_output_marker
from ..theories.confrontation import Confrontation, NotApplicable, Series, Stream, TheoryFit

__all__ = [
    "OUTPUT_FORMAT",
    "CompareEntry",
    "ForecastEntry",
    "check_output_dir",
    "compare",
    "confrontations",
    "decades_off",
    "find_streams",
    "forecast",
    "power_law_extrapolation",
    "read_run",
    "write_output_marker",
]


def confrontations() -> list[Confrontation]:
    """Every theory's confrontation with recorded runs, by theory name."""
    found = [theories.get(n).load_confrontation() for n in theories.available()]
    return sorted((c for c in found if c is not None), key=lambda c: c.theory)


def theories_without_confrontation() -> list[str]:
    """Theories that declare no confrontation with network runs."""
    return [n for n in theories.available() if theories.get(n).confrontation is None]


def _prefixes(names: list[str], suffix: str) -> set[str]:
    out = set()
    for n in names:
        if n.endswith(suffix):
            p = n[: -len(suffix)]
            if p == "" or p.endswith(("/", ".")):
                out.add(p)
    return out


def _normal(prefix: str) -> str:
    """Array names spell a metric prefix with ``.`` for ``/`` (the run store's rule)."""
    return prefix.replace("/", ".")


def find_streams(
    conf: Confrontation, run: runs.Run, metric_names: list[str] | None = None
) -> list[str]:
    """Prefixes of ``run`` under which every record ``conf`` needs exists, sorted.

    A prefix is given in its metric spelling (``mse/``) where the run has metrics under it.
    ``metric_names`` saves reading them again when the caller has them.
    """
    if metric_names is None:
        metric_names = list(run.metrics["name"].unique())
    pools = {"scalar": metric_names, "array": run.array_names()}
    keys = set.intersection(
        *({_normal(p) for p in _prefixes(pools[n.kind], n.name)} for n in conf.needs)
    )
    spelled = {n[: i + 1] for n in metric_names for i, c in enumerate(n) if c == "/"}
    spelling = {_normal(p): p for p in spelled} | {"": ""}
    return sorted(spelling.get(k, k) for k in keys)


@dataclass(frozen=True)
class CompareEntry:
    """One theory on one stream: its fit, or why there is none."""

    theory: str
    stream: str
    status: str  # "fitted", "not applicable", "failed", "missing"
    message: str = ""
    fit: TheoryFit | None = None
    observed: dict[str, Series] = field(default_factory=dict)

    def row(self) -> dict[str, Any]:
        """A flat table row: status, parameters, goodness and predictions."""
        row: dict[str, Any] = {
            "theory": self.theory,
            "stream": self.stream,
            "status": self.status,
            "message": self.message,
        }
        if self.fit is not None:
            for group in ("params", "goodness", "predictions"):
                for k, v in getattr(self.fit, group).items():
                    row[f"{group}.{k}"] = v
        return row


def read_run(path: str | os.PathLike[str]) -> runs.Run:
    """Open the run at ``path`` for reading, its JSON files checked first.

    ``status.json``, ``config.json`` and (when present) ``summary.json`` must each hold a
    JSON object; a file that is not valid JSON, or holds a list or a number, is a
    ``ValueError`` naming it, instead of a bare decoding error or an ``AttributeError``
    later on. Then :func:`ncdynamics.runs.open`.
    """
    p = Path(path)
    for name in ("status.json", "config.json", "summary.json"):
        f = p / name
        if not f.is_file():
            continue  # runs.open says which files a run directory needs
        try:
            value = json.loads(f.read_text())
        except ValueError as exc:  # json.JSONDecodeError, UnicodeDecodeError
            raise ValueError(f"{str(f)!r} is not valid JSON: {exc}.") from exc
        if not isinstance(value, dict):
            raise ValueError(f"{str(f)!r} must hold a JSON object; got {type(value).__name__}.")
    return runs.open(p)


def _open(run: runs.Run | str | os.PathLike[str]) -> runs.Run:
    return run if isinstance(run, runs.Run) else read_run(run)


def _fit_entry(conf: Confrontation, stream: Stream) -> CompareEntry:
    label = stream.prefix or "(no prefix)"
    try:
        observed = conf.observe(stream)
        fit = conf.fit(stream)
    except NotApplicable as exc:
        return CompareEntry(conf.theory, label, "not applicable", str(exc))
    except Exception as exc:  # one theory failing on one stream must not stop the others
        msg = str(exc).splitlines()[0] if str(exc) else ""
        return CompareEntry(conf.theory, label, "failed", f"{type(exc).__name__}: {msg}")
    return CompareEntry(conf.theory, label, "fitted", "; ".join(fit.notes), fit, observed)


def _missing_entry(conf: Confrontation) -> CompareEntry:
    needs = ", ".join(n.describe() for n in conf.needs)
    return CompareEntry(conf.theory, "", "missing", f"needs {needs}")


def compare(run: runs.Run | str | os.PathLike[str]) -> list[CompareEntry]:
    """Fit every theory whose needs ``run`` recorded, on each stream that has them.

    A theory with no such stream gets one ``"missing"`` entry naming what it needs.
    """
    run = _open(run)
    wide = run.metrics_wide()  # read once, shared by every stream
    entries = []
    for conf in confrontations():
        prefixes = find_streams(conf, run, list(wide.columns))
        if not prefixes:
            entries.append(_missing_entry(conf))
        for p in prefixes:
            entries.append(_fit_entry(conf, Stream(run, p, wide=wide)))
    return entries


# ---------------------------------------------------------------------------- forecast
def decades_off(predicted: float, actual: float) -> float:
    """``|log10(predicted / actual)|``; ``inf`` for a sign mismatch or non-finite input."""
    if not (np.isfinite(predicted) and np.isfinite(actual)) or predicted * actual <= 0:
        return math.inf
    return abs(math.log10(predicted / actual))


def power_law_extrapolation(steps: Any, values: Any, at: Any, *, origin: float) -> Any:
    """``|v| = c (step - origin + 1)^p`` fitted in log-log to the later half of the records,
    evaluated at ``at`` (a step or an array of steps) with the sign of the last value; NaN
    with fewer than 2 usable points."""
    s, v = np.asarray(steps, np.float64), np.asarray(values, np.float64)
    half = s.size // 2
    s, v = s[half:], v[half:]
    ok = v != 0
    at_ = np.asarray(at, dtype=np.float64)
    if ok.sum() < 2 or np.unique(s[ok]).size < 2:
        out = np.full(at_.shape, np.nan)
    else:
        p, c = np.polyfit(np.log(s[ok] - origin + 1.0), np.log(np.abs(v[ok])), 1)
        out = np.sign(v[-1]) * np.exp(c + p * np.log(at_ - origin + 1.0))
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True)
class ForecastEntry:
    """One theory on one stream, fitted up to ``cutoff`` and scored at ``final_step``."""

    theory: str
    stream: str
    status: str
    message: str = ""
    cutoff: float = math.nan
    final_step: float = math.nan
    fit: TheoryFit | None = None
    observed: dict[str, Series] = field(default_factory=dict)
    scores: list[dict[str, Any]] = field(default_factory=list)


def _score(name: str, series: Series, fit: TheoryFit, cutoff: float, final: float) -> list[dict]:
    steps, values = series
    seen = steps <= cutoff
    actual = float(values[steps == final][0])
    predicted = {
        f"theory ({fit.theory})": float(fit.predict(np.array([final]))[name][0]),
        "last value": float(values[seen][-1]),
        "power law": power_law_extrapolation(steps[seen], values[seen], final, origin=steps[0]),
    }
    return [
        {
            "observable": name,
            "method": method,
            "predicted": p,
            "actual": actual,
            "decades_off": decades_off(p, actual),
        }
        for method, p in predicted.items()
    ]


def _forecast_entry(conf: Confrontation, stream: Stream, at: float) -> ForecastEntry:
    label = stream.prefix or "(no prefix)"
    try:
        observed = conf.observe(stream)
    except ValueError as exc:
        return ForecastEntry(conf.theory, label, "failed", f"{type(exc).__name__}: {exc}")
    if not observed:
        return ForecastEntry(conf.theory, label, "failed", "no observable could be read")
    first = max(float(s[0]) for s, _ in observed.values())
    final = min(float(s[-1]) for s, _ in observed.values())
    cutoff = first + at * (final - first)
    entry = _fit_entry(conf, stream.cut(cutoff))
    if entry.fit is None:
        return ForecastEntry(
            conf.theory,
            label,
            entry.status,
            entry.message,
            cutoff=cutoff,
            final_step=final,
            observed=observed,
        )
    scores = [
        row
        for name, series in observed.items()
        if np.any(series[0] == final)
        for row in _score(name, series, entry.fit, entry.fit.fit_until, final)
    ]
    return ForecastEntry(
        conf.theory,
        label,
        "fitted",
        entry.message,
        cutoff=cutoff,
        final_step=final,
        fit=entry.fit,
        observed=observed,
        scores=scores,
    )


def forecast(run: runs.Run | str | os.PathLike[str], at: float) -> list[ForecastEntry]:
    """Fit each applicable theory on the records up to fraction ``at`` of each stream,
    predict every observable at the stream's last record and score it (module docstring).

    Parameters
    ----------
    run : Run or path
    at : float in (0, 1)
        Fraction of the stream's step range the fit may see.
    """
    at = check_scalar(at, "at", low=0.0, high=1.0, closed="neither")
    run = _open(run)
    wide = run.metrics_wide()  # read once, shared by every stream
    entries = []
    for conf in confrontations():
        prefixes = find_streams(conf, run, list(wide.columns))
        if not prefixes:
            m = _missing_entry(conf)
            entries.append(ForecastEntry(m.theory, m.stream, m.status, m.message))
        for p in prefixes:
            entries.append(_forecast_entry(conf, Stream(run, p, wide=wide), at))
    return entries


def compare_table(entries: list[CompareEntry]) -> pd.DataFrame:
    """One row per entry (see :meth:`CompareEntry.row`)."""
    return pd.DataFrame([e.row() for e in entries])


def forecast_table(entries: list[ForecastEntry]) -> pd.DataFrame:
    """One row per (theory, stream, observable, method); entries without a fit get one row."""
    rows = []
    for e in entries:
        base = {
            "theory": e.theory,
            "stream": e.stream,
            "status": e.status,
            "cutoff": e.cutoff,
            "final_step": e.final_step,
        }
        if not e.scores:
            rows.append({**base, "message": e.message})
        rows.extend({**base, **s} for s in e.scores)
    return pd.DataFrame(rows)


def default_out(run_dir: str | os.PathLike[str], kind: str, at: float | None = None) -> Path:
    """``RUN_DIR/compare`` or ``RUN_DIR/forecast-<at>``.

    Whatever the directory, it is replaced only when it holds this command's own output
    (:func:`check_output_dir`).
    """
    name = kind if at is None else f"{kind}-{at:g}"
    return Path(run_dir) / name
