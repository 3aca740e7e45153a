"""The contract between a theory and a recorded run: what it needs, fits and predicts.

A theory confronts a run through a :class:`Confrontation`, which its
:class:`~ncdynamics.theories.Theory` declaration names (by convention the constant
``CONFRONTATION`` of ``<package>/confront.py``):

- ``needs``: the scalars and arrays the run must have recorded (and which probe records them);
- ``observe(stream)``: the measured trajectories of the observables the theory speaks about;
- ``fit(stream)``: the theory fitted to the records of a stream, as a :class:`TheoryFit`
  holding the fitted parameters (:class:`Param`), the fitted curves inside the records and a
  ``predict(steps)`` that extrapolates the observables beyond them (:class:`Curves`), how the
  intervals were obtained (:class:`Uncertainty`) and what the reports show beside it
  (:class:`Shown`).

A *stream* is one set of records in a run that share a name prefix (``"mse/"`` and
``"cross-entropy/"`` in the demo, ``""`` for a run that records one model). A
:class:`Stream` can be cut at a step, so that a fit sees only the first part of a run: that
is how ``ncdyn forecast`` keeps the theory from peeking at what it predicts.

This module is part of the theory contract (``ncdynamics.theories``), so that theories declare
their confrontations without importing the ``experiments`` layer that runs them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:  # the run store is imported by whoever builds a Stream
    import pandas as pd

    from ..runs import Run

__all__ = [
    "Assumption",
    "Confrontation",
    "Curves",
    "Need",
    "NotApplicable",
    "Param",
    "Series",
    "Shown",
    "Stream",
    "TheoryFit",
    "Uncertainty",
    "Undetermined",
    "r_squared",
]

#: ``(steps, values)``: float64 arrays of equal length, steps increasing.
Series = tuple[NDArray[np.float64], NDArray[np.float64]]


class NotApplicable(ValueError):
    """The run has the recorded names but not what the theory assumes (e.g. K not 2^k)."""


class Undetermined(ValueError):
    """These records cannot determine the fit (too few of them, a projection that is exactly
    zero, nothing left after the theory's own selection of records): the verdict is
    ``degenerate``, not ``error``."""


@dataclass(frozen=True)
class Need:
    """One record a theory needs: a scalar metric or an array, named without the prefix."""

    kind: Literal["scalar", "array"]
    name: str
    probe: str

    def describe(self) -> str:
        return f"{self.kind} {self.name!r} (probe {self.probe!r})"


class Stream:
    """The records of one prefix of a run, optionally cut after step ``until``.

    Parameters
    ----------
    run : ncdynamics.runs.Run
    prefix : str
        Metric-name prefix, e.g. ``"mse/"``; array names use it with ``/`` replaced by ``.``.
    until : float, default=inf
        Records after this step are invisible.
    since : float, default=-inf
        Records before this step are invisible (a window of the run, see :meth:`window`).
    wide : pandas.DataFrame, optional
        ``run.metrics_wide()``, when the caller has it already (it reads every Parquet part).
    """

    def __init__(
        self,
        run: Run,
        prefix: str = "",
        *,
        until: float = math.inf,
        since: float = -math.inf,
        wide: pd.DataFrame | None = None,
        _arrays: dict[str, Mapping[int, Any]] | None = None,
    ) -> None:
        self.run = run
        self.prefix = prefix
        self.until = float(until)
        self.since = float(since)
        self._wide = run.metrics_wide() if wide is None else wide
        # arrays read from disk once, shared by this stream's windows and cuts (a theory
        # reads the same array for several observables, the engine fits many windows)
        self._arrays: dict[str, Mapping[int, Any]] = {} if _arrays is None else _arrays

    @property
    def config(self) -> Mapping[str, Any]:
        """The run's ``config.json`` (experiment settings; empty for a hand-made run)."""
        path = self.run.path / "config.json"
        return self.run.config if path.exists() else {}

    def setting(self, key: str, default: Any = None) -> Any:
        """A setting of this stream: ``config["streams"][name][key]``, else ``config[key]``.

        ``name`` is the prefix without its trailing ``/`` or ``.`` (``"mse"`` for ``"mse/"``),
        so a run that trains several models (the demo) can state each one's loss, learning
        rate or initialisation; ``default`` when neither is recorded.
        """
        config = self.config
        streams = config.get("streams")
        name = self.prefix.rstrip("/.")
        if isinstance(streams, Mapping) and isinstance(streams.get(name), Mapping):
            if key in streams[name]:
                return streams[name][key]
        return config.get(key, default)

    def cut(self, until: float) -> Stream:
        """The same stream, seeing only records at steps ``<= until``."""
        return self.window(self.since, until)

    def window(self, since: float, until: float) -> Stream:
        """The same stream, seeing only records at steps in ``[since, until]`` (within the
        window this stream already has)."""
        return Stream(
            self.run,
            self.prefix,
            until=min(until, self.until),
            since=max(since, self.since),
            wide=self._wide,
            _arrays=self._arrays,
        )

    def uncut(self) -> Stream:
        """The same stream without its ``until`` limit, for the *inputs* of a prediction that
        is conditional on what the run recorded (the NTK collapse flow is driven by the
        recorded kernel). A fit may read its inputs from it beyond its cut, never the
        observables it predicts."""
        return Stream(
            self.run,
            self.prefix,
            since=self.since,
            wide=self._wide,
            _arrays=self._arrays,
        )

    def _visible(self, steps: Any) -> Any:
        return (steps >= self.since) & (steps <= self.until)

    def _array_name(self, name: str) -> str:
        return f"{self.prefix}{name}".replace("/", ".")

    def scalar(self, name: str) -> Series:
        """Finite values of metric ``prefix + name`` at steps in ``[since, until]``."""
        col = f"{self.prefix}{name}"
        if col not in self._wide.columns:
            raise KeyError(f"run {self.run.path} has no metric {col!r}.")
        s = self._wide[col]
        s = s[np.isfinite(s.to_numpy(dtype=np.float64)) & self._visible(s.index)]
        return s.index.to_numpy(dtype=np.float64), s.to_numpy(dtype=np.float64)

    def array(self, name: str) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """``(steps, stacked)`` of array ``prefix + name`` at steps in ``[since, until]``."""
        key = self._array_name(name)
        if key not in self._arrays:
            self._arrays[key] = self.run.arrays(key)
        series = self._arrays[key]
        steps = np.array([s for s in series if self._visible(s)], dtype=np.float64)
        if steps.size == 0:
            return steps, np.empty((0,))
        return steps, np.stack([np.asarray(series[int(s)], np.float64) for s in steps])


Predict = Callable[[NDArray[np.float64]], dict[str, NDArray[np.float64]]]
Band = Callable[[NDArray[np.float64]], dict[str, tuple[Any, Any]]]


@dataclass(frozen=True)
class Param:
    """One fitted parameter and what the theory says about it.

    Attributes
    ----------
    value : float
        The fitted value.
    interval : (float, float) or None
        Its 95% interval; ``None`` for a value that was not fitted (a constant read from the
        run, like ``X``).
    unit : str
        Shown after the value, e.g. ``"1/step"`` for a rate per recorded step.
    bound : (float, float) or None
        The range of the search: a value at either end means the data wanted to go further,
        and the verdict is ``degenerate``.
    sign : int
        ``+1`` or ``-1``: the sign the theory requires (a rate, a time scale), ``0`` for none.
        A value of the other sign is unphysical; an interval that holds zero means the value is
        indistinguishable from zero. Both make the verdict ``degenerate``.
    expected : float or None
        The value the theory predicts from the run's settings alone (the Hadamard time scale
        ``c = 2 eta``). Outside the 95% interval (widened by ``expected_rtol``) the verdict is
        ``fails``.
    expected_rtol : float
        The relative error the theory itself allows that prediction (an approximation's order,
        e.g. gradient descent against its flow).
    """

    value: float
    interval: tuple[float, float] | None = None
    unit: str = ""
    bound: tuple[float, float] | None = None
    sign: int = 0
    expected: float | None = None
    expected_rtol: float = 0.0

    def __post_init__(self) -> None:
        if self.sign not in (-1, 0, 1):
            raise ValueError(f"sign must be -1, 0 or +1; got {self.sign!r}.")


@dataclass(frozen=True)
class Curves:
    """What the engine scores: the fitted curves and the predictions beyond them.

    Attributes
    ----------
    fitted : dict
        Observable name -> ``(steps, values)``: the theory's curve over the fitted records.
        Its last step is the fit's :attr:`TheoryFit.fit_until`.
    predict : callable
        ``predict(steps) -> {observable: values}`` for steps after the last fitted record.
    ahead : dict
        Observable name -> ``(steps, values)``: one-record-ahead predictions, for a theory
        whose fit is record to record (each record carried to the next); empty when the
        increments of ``fitted`` serve (see :mod:`ncdynamics.theories.verdict`).
    band : callable or None
        ``band(steps) -> {observable: (low, high)}``: a 95% prediction band beside
        ``predict`` (parameter uncertainty propagated, plus the residual scatter).
    scales : dict
        Observable name -> ``"log"`` or ``"linear"``: where residuals and skill are measured
        (``"log"`` for positive quantities spanning decades; the default for an observable
        not named is ``"log"`` when all its values are positive).
    rivals : dict
        Name -> ``predict``-like callable: readings that keep the theory's form but drop what
        only the theory predicts (the NTK flow driven by a frozen or shuffled kernel instead
        of the recorded one). The out-of-sample test scores them like the generic curves, and
        the theory must beat each to hold (:mod:`ncdynamics.theories.verdict`).
    shared_parameters : bool
        True when every free parameter is shared by all the ``fitted`` observables (lesde's
        elasticities shape both margins): a generic curve, fitted to each observable on its
        own, is then counted with its parameters times the observables (verdict rule 4).
        False (the default) counts a curve's parameters once, which asks more of the theory.
    """

    fitted: dict[str, Series]
    predict: Predict
    ahead: dict[str, Series] = field(default_factory=dict)
    band: Band | None = None
    scales: dict[str, str] = field(default_factory=dict)
    rivals: dict[str, Predict] = field(default_factory=dict)
    shared_parameters: bool = False


@dataclass(frozen=True)
class Uncertainty:
    """How the intervals of a fit were obtained.

    Attributes
    ----------
    method : str
        In a few words (e.g. ``"least-squares Jacobian, t(n-p)"``, ``"profile likelihood"``,
        ``"bootstrap over records (200)"``); shown under the parameter table.
    n_fitted : int or None
        Number of free parameters (for information criteria and for which generic curves the
        theory must beat); ``None`` counts the parameters with an interval.
    """

    method: str = ""
    n_fitted: int | None = None


@dataclass(frozen=True)
class Shown:
    """What the reports show beside a fit and the verdict does not judge.

    Attributes
    ----------
    goodness : dict
        Goodness of fit on the records it saw, by name (e.g. ``r2_log_within_scatter``).
    predictions : dict
        What the theory states beyond the records, in numbers (e.g. a limit, a verdict).
    notes : tuple of str
        One-line remarks on the fit (an optimiser message, a choice made).
    alternatives : dict
        Variant name -> numbers (``aic``, ``heldout_rmse``, ``chosen``...) where the theory
        compared readings of itself (constant vs decaying rates) and kept one.
    """

    goodness: dict[str, float] = field(default_factory=dict)
    predictions: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    alternatives: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class TheoryFit:
    """A theory fitted to one stream.

    Attributes
    ----------
    theory : str
    params : dict
        Parameter name -> :class:`Param` (the value and the facts about it).
    curves : Curves
        The fitted curves and the predictions the engine scores.
    uncertainty : Uncertainty, default=Uncertainty()
        How the intervals were obtained and how many parameters were free.
    shown : Shown, default=Shown()
        Numbers and remarks for the reports only.
    """

    theory: str
    params: dict[str, Param]
    curves: Curves
    uncertainty: Uncertainty = field(default_factory=Uncertainty)
    shown: Shown = field(default_factory=Shown)

    def __post_init__(self) -> None:
        for name, p in self.params.items():
            if not isinstance(p, Param):
                raise TypeError(f"params[{name!r}] must be a Param; got {type(p).__name__} {p!r}.")
        parts = (("curves", Curves, "a"), ("uncertainty", Uncertainty, "an"), ("shown", Shown, "a"))
        for attr, kind, article in parts:
            value = getattr(self, attr)
            if not isinstance(value, kind):
                raise TypeError(
                    f"{attr} must be {article} {kind.__name__}; got {type(value).__name__}."
                )

    @property
    def values(self) -> dict[str, float]:
        """Parameter name -> fitted value."""
        return {name: p.value for name, p in self.params.items()}

    @property
    def intervals(self) -> dict[str, tuple[float, float]]:
        """Parameter name -> 95% interval, for the parameters that have one."""
        return {n: p.interval for n, p in self.params.items() if p.interval is not None}

    @property
    def n_free(self) -> int:
        """Free parameters of the fit: ``uncertainty.n_fitted``, else the number with an
        interval."""
        n = self.uncertainty.n_fitted
        return n if n is not None else len(self.intervals)

    @property
    def fit_until(self) -> float:
        """The last step the fit saw: the last step of :attr:`Curves.fitted` (NaN when no
        curve has a step)."""
        ends = [float(s[-1]) for s, _ in self.curves.fitted.values() if len(s)]
        return max(ends) if ends else math.nan


@dataclass(frozen=True)
class Assumption:
    """One condition of the regime a theory assumes, checked against a stream.

    Parameters
    ----------
    name : str
        Short name (``"loss"``, ``"learning rate"``, ``"classes"``).
    statement : str
        What the theory assumes, in one line (``"squared-error loss"``).
    check : callable
        ``check(stream) -> str | None``: the reason the stream is outside the regime (one
        line, naming what was recorded), or ``None`` when it is inside or the run does not
        record the setting.
    settings : tuple of str, default=()
        The run settings the check reads (``"loss"``, ``"momentum"``). When none of them is
        recorded for the stream, the engine reports the assumption as ``not recorded`` rather
        than inside the regime. Empty for a check on the records themselves (a class count,
        a kernel's structure), which is always decided.
    """

    name: str
    statement: str
    check: Callable[[Stream], str | None]
    settings: tuple[str, ...] = ()

    def unrecorded(self, stream: Stream) -> bool:
        """Whether the run records none of :attr:`settings` for ``stream`` (so a check that
        passed did not see what it is about)."""
        return bool(self.settings) and all(stream.setting(k) is None for k in self.settings)


@dataclass(frozen=True)
class Confrontation:
    """What a theory needs from a run and how it fits it (see the module docstring).

    Parameters
    ----------
    theory : str
        Theory subpackage name.
    summary : str
        One line: what is fitted to what.
    needs : tuple of Need
    observe : callable
        ``observe(stream) -> {observable: (steps, values)}``.
    fit : callable
        ``fit(stream) -> TheoryFit``; raises :class:`NotApplicable` when the records exist
        but the theory's assumptions do not hold, :class:`Undetermined` when the records
        cannot determine the fit (too few). The engine calls it on the whole stream, on the
        stream without its latest records (the out-of-sample test of
        :mod:`ncdynamics.theories.verdict`), on windows of it and at forecast cuts.
    assumptions : tuple of Assumption
        The regime the theory assumes; a stream outside it is not fitted unless forced.
    """

    theory: str
    summary: str
    needs: tuple[Need, ...]
    observe: Callable[[Stream], dict[str, Series]]
    fit: Callable[[Stream], TheoryFit]
    assumptions: tuple[Assumption, ...] = ()

    def out_of_regime(self, stream: Stream) -> list[str]:
        """The reasons ``stream`` lies outside the regime (empty when inside)."""
        return [r for a in self.assumptions if (r := a.check(stream))]


def r_squared(observed: Any, fitted: Any) -> float:
    """``1 - SS_res / SS_tot``; NaN when the observations are constant."""
    obs = np.asarray(observed, dtype=np.float64)
    fit = np.asarray(fitted, dtype=np.float64)
    tot = float(np.sum((obs - obs.mean()) ** 2))
    return float(1.0 - np.sum((obs - fit) ** 2) / tot) if tot > 0 else float("nan")
