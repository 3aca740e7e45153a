"""Theory against run, the shared part: the streams of a run that a theory can be fitted to.

Each theory declares what it needs from a run and the regime it assumes
(:class:`ncdynamics.theories.Confrontation`, named by its
:class:`~ncdynamics.theories.Theory` declaration). This module gets those declarations from
the theory registry, opens a run for reading (:func:`read_run`), finds the streams of the run
that carry what each theory needs (:func:`find_streams`) and checks a stream against the
theory's assumptions (:func:`check_regime`). :mod:`ncdynamics.experiments.compare` and
:mod:`ncdynamics.experiments.forecast` build on it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, cast

import pandas as pd

from .. import runs, theories
from .._reasons import one_line_reason
from ..theories.confrontation import Assumption, Confrontation, Stream

__all__ = [
    "ENTRY_STATUS",
    "RegimeCheck",
    "check_regime",
    "confrontations",
    "find_streams",
    "missing_reason",
    "not_recorded_note",
    "open_streams",
    "out_of_regime_reasons",
    "read_run",
    "theories_without_confrontation",
    "unrecorded_settings",
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


#: ``(assumption, reason)``: the reason the stream is outside it, ``None`` when inside or
#: not recorded.
RegimeCheck = tuple[Assumption, str | None]

#: The status of an entry that was not fitted, by its verdict (any other: ``"failed"``).
ENTRY_STATUS = {
    "missing": "missing",
    "out of regime": "not applicable",
    "error": "failed",
}


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


class _ReadOnce:
    """A run whose arrays and config are read from disk once.

    ``compare`` fits every theory to a stream and to each of its windows, and every fit
    reads the stream's arrays (one ``.npy`` file per record) and settings again; this
    wrapper keeps what was read. Everything else is the run's own.
    """

    def __init__(self, run: runs.Run) -> None:
        self._run = run
        self._arrays: dict[str, dict[int, Any]] = {}
        self._config: dict[str, Any] | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._run, name)

    def arrays(self, name: str) -> dict[int, Any]:
        if name not in self._arrays:
            self._arrays[name] = self._run.arrays(name)
        return self._arrays[name]

    @property
    def config(self) -> dict[str, Any]:
        if self._config is None:
            self._config = self._run.config
        return self._config


def open_streams(run: runs.Run | str | os.PathLike[str]) -> tuple[runs.Run, pd.DataFrame]:
    """``run`` (a path is opened with :func:`read_run`) wrapped so that its arrays and config
    are read from disk once (typed as a run), and its wide metrics table."""
    if not isinstance(run, runs.Run):
        run = read_run(run)
    return cast("runs.Run", _ReadOnce(run)), run.metrics_wide()


def check_regime(conf: Confrontation, stream: Stream) -> list[RegimeCheck]:
    """Each assumption of ``conf`` with the reason ``stream`` is outside it (or ``None``).

    A check that raises is reported as the reason, prefixed ``could not check``, and does
    not put the stream out of regime (see :func:`out_of_regime_reasons`).
    """
    out: list[RegimeCheck] = []
    for a in conf.assumptions:
        try:
            out.append((a, a.check(stream)))
        except Exception as exc:  # a broken check must not hide the fit
            out.append((a, f"could not check: {one_line_reason(exc)}"))
    return out


def unrecorded_settings(
    conf: Confrontation, stream: Stream, regime: Iterable[RegimeCheck]
) -> list[str]:
    """Names of the assumptions that passed only because the run records none of the
    settings they read (:meth:`Assumption.unrecorded`): not checked, not inside."""
    return [a.name for a, reason in regime if reason is None and a.unrecorded(stream)]


def not_recorded_note(conf: Confrontation, names: Sequence[str]) -> str:
    """One line: which assumptions could not be checked, which settings they read, and how
    to record them."""
    keys = sorted({k for a in conf.assumptions if a.name in names for k in a.settings})
    return (
        f"regime not checked for {', '.join(names)}: the run records none of "
        f"{', '.join(keys)} (record them with Recorder(..., optimizer=opt, loss=...) or in "
        "the run's config)"
    )


def out_of_regime_reasons(regime: Iterable[RegimeCheck]) -> list[str]:
    """The reasons of the failed assumptions (checks that could not run excluded)."""
    return [r for _, r in regime if r and not r.startswith("could not check")]


def missing_reason(conf: Confrontation, run: runs.Run | None = None) -> str:
    """Why ``conf`` has no stream in ``run``: what it needs, and the run's own note on why it
    does not record it (``config["not_recorded"][theory]``, such as the demo's for
    ``ntk_collapse``) where there is one."""
    needs = ", ".join(n.describe() for n in conf.needs)
    why = f"needs {needs}"
    note = _not_recorded(run, conf.theory) if run is not None else None
    if note:
        why = f"{why}; the run says why not: {note}"
    return why


def _not_recorded(run: runs.Run, theory: str) -> str | None:
    """``config["not_recorded"][theory]``: an experiment's own line on why it does not
    record what a theory needs (the demo's, for ``ntk_collapse``)."""
    if not (run.path / "config.json").is_file():
        return None
    notes = run.config.get("not_recorded")
    if isinstance(notes, dict) and isinstance(notes.get(theory), str):
        return str(notes[theory])
    return None
