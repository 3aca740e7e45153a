"""A conformance and calibration kit for theories: :func:`check_theory`.

Like scikit-learn's ``check_estimator``, :func:`check_theory` puts one theory through a fixed
battery and says, in numbers, whether its verdicts can be trusted:

1. **smoke**: the theory's smoke experiment(s) run (``experiments.run(name, "smoke")``) and,
   where the run records what the theory needs, the theory is confronted with it
   (:func:`ncdynamics.experiments.compare.compare`); a smoke run that raises, or an ``error``
   verdict, is a failure;
2. **true positives**: streams that the theory's own model generates, written as run
   directories whose config sits inside the theory's regime, with noise on the observables'
   scale that is independent from record to record, and AR(1) noise (``rho = 0.9``) as the
   residuals of a training curve are; the share judged positive (``holds`` or
   ``holds in a window``) is the true-positive rate;
3. **false positives**: streams inside the same regime whose observables follow a generic
   curve that is not the theory (:data:`GENERIC_FAMILIES`: exponential relaxation to an
   asymptote, power law in time, sum of two exponentials, logistic, random walk with drift,
   correlated noise without a trend), mapped onto the same records; the share judged
   positive, per family and overall, is the false-positive rate;
4. **coverage**: on the true streams, the share of 95% intervals that hold the true value of
   a parameter, under each kind of noise, and the spread of the fitted value over seeds
   divided by the reported standard error (the interval's half-width / 1.96): near 1 when the
   intervals are honest, above 1 when they are too narrow;
5. **invariants** of every fit: at least one free parameter, an interval for each, and each
   fitted observable predicted by ``fit.curves.predict`` after the last fitted record;
6. **forecast bands** (only with ``forecast=True``, which forecasts every true stream from
   several origins and so costs about as much again): the share of the records after each
   origin inside the theory's 95% band (:func:`ncdynamics.experiments.forecast.forecast`),
   under each kind of noise, and how wide the band is: the root mean square of the records'
   errors over the band's standard error (half-width / 1.96 on the observable's scale), near
   1 for an honest band, below 1 for one wider than its coverage needs.

The streams come from the theory's :class:`Calibration` (its declaration names it:
``Theory(..., calibration="pkg.calibration:CALIBRATION")``). A theory that declares no
confrontation is checked on its smoke experiment only, and the report says so.

:meth:`CalibrationReport.check` turns the numbers into a pass or an ``AssertionError`` that
lists every target missed, with its numbers.

Examples
--------
>>> from ncdynamics.theories.testing import check_theory
>>> report = check_theory("hadamard", quick=True)  # doctest: +SKIP
>>> report.table()  # doctest: +SKIP
>>> report.check()  # doctest: +SKIP
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from .._reasons import one_line_reason
from . import registry
from .theory import Theory, TheoryDeclarationError

if TYPE_CHECKING:
    import pandas as pd

    from .confrontation import TheoryFit

__all__ = [
    "GENERIC_FAMILIES",
    "NOISE_KINDS",
    "POSITIVE",
    "Calibration",
    "CalibrationReport",
    "StreamResult",
    "check_theory",
    "fit_invariants",
    "follow",
    "generic_progress",
    "noise_series",
    "true_stream_band",
]

#: Verdicts that say the theory explains the records.
POSITIVE = frozenset({"holds", "holds in a window"})
#: Noise on the true streams: independent from record to record, and AR(1) with rho = 0.9.
NOISE_KINDS = ("independent", "ar1")
#: The correlation of the AR(1) noise (true streams, and the ``ar1_noise`` family).
AR1_RHO = 0.9
#: Generic curves that are not the theory (:func:`generic_progress`).
GENERIC_FAMILIES = (
    "exponential",
    "power_law",
    "two_exponentials",
    "logistic",
    "random_walk",
    "ar1_noise",
)
#: Normal quantile of a two-sided 95% interval.
_Z95 = 1.959963984540054

Array = NDArray[np.float64]


def noise_series(
    rng: np.random.Generator, n: int, kind: str, *, size: Sequence[int] = (), rho: float = AR1_RHO
) -> Array:
    """Unit-variance noise of ``n`` records (axis 0), each record of shape ``size``.

    ``kind="independent"``: standard normal draws. ``kind="ar1"``: the stationary AR(1)
    process ``e[i] = rho e[i-1] + sqrt(1 - rho^2) z[i]`` along the records, so that every
    record still has unit variance but neighbours are correlated ``rho``.
    """
    if kind not in NOISE_KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(NOISE_KINDS)}; got {kind!r}.")
    z = rng.standard_normal((n, *size))
    if kind == "independent" or n == 0:
        return z
    out = np.empty_like(z)
    out[0] = z[0]
    scale = math.sqrt(1.0 - rho**2)
    for i in range(1, n):
        out[i] = rho * out[i - 1] + scale * z[i]
    return out


def generic_progress(family: str, t: Any, rng: np.random.Generator) -> Array:
    """A generic curve over record times ``t``: 0 at the first record, about 1 at the last.

    A theory's calibration maps it onto its observables (e.g. a log-interpolation between
    the first and the last value of a true trajectory), so that a generic stream starts and
    ends where the theory's own would, but moves between them along a curve the theory
    does not predict. The family's shape parameters are drawn from ``rng``:

    - ``exponential``: relaxation ``1 - exp(-(t - t0)/tau)`` to an asymptote;
    - ``power_law``: ``((t + s)/(t0 + s))^p - 1``, ``p`` in [0.3, 3];
    - ``two_exponentials``: a fast and a slow relaxation, weighted;
    - ``logistic``: a sigmoid centred inside the records;
    - ``random_walk``: a random walk whose drift brings it to 1 on average, steps as large
      as the drift;
    - ``ar1_noise``: no trend, AR(1) noise (rho = 0.9) of standard deviation 0.25 around 0.5.

    The trend families are normalised to end at exactly 1.
    """
    t = np.asarray(t, dtype=np.float64)
    if t.ndim != 1 or t.size < 2:
        raise ValueError(f"`t` must be at least 2 record times; got shape {t.shape}.")
    x = (t - t[0]) / (t[-1] - t[0])  # 0 .. 1
    if family == "exponential":
        tau = rng.uniform(0.08, 0.5)
        h = -np.expm1(-x / tau)
    elif family == "power_law":
        p = rng.uniform(0.3, 3.0)
        s = rng.uniform(0.05, 1.0)
        h = ((x + s) / s) ** p - 1.0
    elif family == "two_exponentials":
        fast, slow = rng.uniform(0.03, 0.1), rng.uniform(0.5, 3.0)
        w = rng.uniform(0.3, 0.7)
        h = w * -np.expm1(-x / fast) + (1 - w) * -np.expm1(-x / slow)
    elif family == "logistic":
        mid, width = rng.uniform(0.3, 0.7), rng.uniform(0.05, 0.15)
        h = 1.0 / (1.0 + np.exp(-(x - mid) / width))
        h = h - h[0]
    elif family == "random_walk":
        drift = 1.0 / (t.size - 1)
        steps = drift + drift * rng.standard_normal(t.size - 1)
        return np.concatenate([[0.0], np.cumsum(steps)])
    elif family == "ar1_noise":
        return 0.5 + 0.25 * noise_series(rng, t.size, "ar1")
    else:
        raise ValueError(f"`family` must be one of {', '.join(GENERIC_FAMILIES)}; got {family!r}.")
    return np.asarray(h / h[-1], dtype=np.float64)


def follow(first: Any, last: Any, progress: Any, *, log: bool = True) -> Array:
    """Values that go from ``first`` to ``last`` along ``progress`` (from
    :func:`generic_progress`; axis 0 is the record): geometrically when ``log`` (positive
    values), else linearly. ``first`` and ``last`` may be arrays (one value per component).
    """
    a = np.asarray(first, dtype=np.float64)
    b = np.asarray(last, dtype=np.float64)
    h = np.asarray(progress, dtype=np.float64).reshape((-1,) + (1,) * a.ndim)
    if log:
        return np.asarray(a * np.exp(h * np.log(b / a)), dtype=np.float64)
    return np.asarray(a + h * (b - a), dtype=np.float64)


@dataclass(frozen=True)
class Calibration:
    """How to make calibration streams of one theory (see the module docstring).

    Parameters
    ----------
    true_stream : callable
        ``true_stream(path, rng, noise) -> None``: write a run directory at ``path`` whose
        records the theory's own model generates with parameters :attr:`true_params`, with
        noise of kind ``noise`` (one of :data:`NOISE_KINDS`, e.g. from
        :func:`noise_series`) on the observables' scale, and a config inside the regime.
    generic_stream : callable
        ``generic_stream(path, family, rng) -> None``: write a run directory at ``path``
        inside the same regime whose observables follow the generic curve ``family`` (one of
        :data:`GENERIC_FAMILIES`, e.g. from :func:`generic_progress`) instead of the theory.
    true_params : mapping
        Parameter name (as in ``TheoryFit.params``) -> the true value, for coverage.
    smoke : tuple of str
        The smoke experiments to run; ``quick=True`` runs the first. Empty: the theory's
        experiments (the first one when quick).
    families : tuple of str
        The generic families this theory is checked against (default: all).
    quick_overrides : mapping
        Experiment name -> settings that override its smoke preset when ``quick`` (a
        smaller smoke run that still records what the theory needs).
    """

    true_stream: Callable[[Path, np.random.Generator, str], None]
    generic_stream: Callable[[Path, str, np.random.Generator], None]
    true_params: Mapping[str, float]
    smoke: tuple[str, ...] = ()
    families: tuple[str, ...] = GENERIC_FAMILIES
    quick_overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not callable(self.true_stream) or not callable(self.generic_stream):
            raise TypeError("`true_stream` and `generic_stream` must be callables.")
        unknown = sorted(set(self.families) - set(GENERIC_FAMILIES))
        if unknown:
            raise ValueError(
                f"`families` must be among {', '.join(GENERIC_FAMILIES)}; got {unknown}."
            )


@dataclass(frozen=True)
class StreamResult:
    """One calibration stream: what it was and the verdict the engine gave it."""

    kind: str  # "true", "generic" or "smoke"
    family: str  # the noise kind (true), the generic family, or the smoke experiment
    seed: int
    verdict: str
    reason: str = ""
    params: dict[str, float] = field(default_factory=dict)
    intervals: dict[str, tuple[float, float]] = field(default_factory=dict)
    #: Forecast band of a true stream (``check_theory(..., forecast=True)``): its coverage at
    #: each origin and observable, and each later record's error over the band's standard error.
    band_coverage: tuple[float, ...] = ()
    band_z: tuple[float, ...] = ()

    @property
    def positive(self) -> bool:
        return self.verdict in POSITIVE


@dataclass
class CalibrationReport:
    """What :func:`check_theory` measured on one theory (see the module docstring).

    Attributes
    ----------
    theory : str
    results : list of StreamResult
        Every stream: smoke runs, true streams and generic streams.
    true_params : dict
    invariant_failures : list of str
        One line per fit that breaks an invariant.
    notes : list of str
        What was not checked and why (e.g. a theory without confrontation).
    confronts : bool
        Whether the theory declares a confrontation (else only the smoke run is checked).
    """

    theory: str
    results: list[StreamResult] = field(default_factory=list)
    true_params: dict[str, float] = field(default_factory=dict)
    invariant_failures: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    confronts: bool = True

    # ------------------------------------------------------------------ numbers
    def _of(self, kind: str, family: str | None = None) -> list[StreamResult]:
        return [
            r for r in self.results if r.kind == kind and (family is None or r.family == family)
        ]

    @staticmethod
    def _rate(results: list[StreamResult]) -> float:
        return sum(r.positive for r in results) / len(results) if results else math.nan

    @property
    def tp_rate(self) -> float:
        """Share of true streams judged positive (NaN when there are none)."""
        return self._rate(self._of("true"))

    def tp_rate_of(self, noise: str) -> float:
        """The true-positive rate under one kind of noise."""
        return self._rate(self._of("true", noise))

    @property
    def fp_rate(self) -> float:
        """Share of generic streams judged positive (NaN when there are none)."""
        return self._rate(self._of("generic"))

    @property
    def fp_by_family(self) -> dict[str, float]:
        """The false-positive rate of each generic family."""
        families = dict.fromkeys(r.family for r in self._of("generic"))
        return {f: self._rate(self._of("generic", f)) for f in families}

    def coverage(self, noise: str) -> dict[str, float]:
        """Parameter -> share of true-stream fits (noise ``noise``) whose interval holds the
        true value; a fit without that parameter or interval counts as a miss."""
        out = {}
        fitted = [r for r in self._of("true", noise) if r.params]
        for name, true in self.true_params.items():
            if not fitted:
                continue
            hits = [
                name in r.intervals and r.intervals[name][0] <= true <= r.intervals[name][1]
                for r in fitted
            ]
            out[name] = sum(hits) / len(hits)
        return out

    def spread_over_se(self, noise: str) -> dict[str, float]:
        """Parameter -> spread of the fitted value over seeds / median reported standard
        error (half-width of the 95% interval / 1.96); NaN with fewer than 3 fits."""
        out = {}
        for name in self.true_params:
            rows = [
                r
                for r in self._of("true", noise)
                if name in r.params and name in r.intervals and math.isfinite(r.params[name])
            ]
            if len(rows) < 3:
                out[name] = math.nan
                continue
            values = np.array([r.params[name] for r in rows])
            se = np.array(
                [(r.intervals[name][1] - r.intervals[name][0]) / (2 * _Z95) for r in rows]
            )
            median_se = float(np.median(se))
            spread = float(np.std(values, ddof=1))
            out[name] = spread / median_se if median_se > 0 else math.inf
        return out

    def band_coverage(self, noise: str) -> float:
        """Mean share of later records inside the theory's 95% forecast band, over the origins
        and observables of the true streams with noise ``noise``; NaN when not measured
        (``check_theory(..., forecast=True)``)."""
        values = [c for r in self._of("true", noise) for c in r.band_coverage]
        return float(np.mean(values)) if values else math.nan

    def band_error_over_se(self, noise: str) -> float:
        """Root mean square of the later records' errors over the band's standard error
        (half-width / 1.96): 1 for an honest band, below 1 for one too wide; NaN when not
        measured."""
        values = np.array([z for r in self._of("true", noise) for z in r.band_z])
        values = values[np.isfinite(values)]
        return float(np.sqrt(np.mean(values**2))) if values.size else math.nan

    @property
    def smoke_failures(self) -> list[str]:
        return [
            f"smoke {r.family}: {r.verdict}: {r.reason}"
            for r in self._of("smoke")
            if r.verdict == "error"
        ]

    # ------------------------------------------------------------------ views
    def table(self) -> pd.DataFrame:
        """Long table: ``metric``, ``group`` (noise, family or parameter), ``value``, ``n``."""
        import pandas as pd

        rows: list[dict[str, Any]] = []

        def add(metric: str, group: str, value: float, n: int) -> None:
            rows.append(
                {"theory": self.theory, "metric": metric, "group": group, "value": value, "n": n}
            )

        for noise in NOISE_KINDS:
            add("tp", noise, self.tp_rate_of(noise), len(self._of("true", noise)))
        add("tp", "all", self.tp_rate, len(self._of("true")))
        for family, rate in self.fp_by_family.items():
            add("fp", family, rate, len(self._of("generic", family)))
        add("fp", "all", self.fp_rate, len(self._of("generic")))
        for noise in NOISE_KINDS:
            n = len(self._of("true", noise))
            for name, value in self.coverage(noise).items():
                add(f"coverage.{noise}", name, value, n)
            for name, value in self.spread_over_se(noise).items():
                add(f"spread_over_se.{noise}", name, value, n)
            bands = [c for r in self._of("true", noise) for c in r.band_coverage]
            if bands:
                add(f"band_coverage.{noise}", "forecast", self.band_coverage(noise), len(bands))
                add(f"band_error_over_se.{noise}", "forecast", self.band_error_over_se(noise), n)
        add("invariant_failures", "all", float(len(self.invariant_failures)), len(self.results))
        for r in self._of("smoke"):
            add("smoke", f"{r.family}: {r.verdict}", float(r.verdict != "error"), 1)
        return pd.DataFrame(rows, columns=["theory", "metric", "group", "value", "n"])

    def failures(
        self,
        *,
        tp_min: float = 0.9,
        fp_max: float = 0.05,
        family_fp_max: float = 0.2,
        coverage_min: float = 0.9,
        spread_se: tuple[float, float] | None = (0.7, 1.4),
    ) -> list[str]:
        """Every target missed, one line each with its numbers (see :meth:`check`)."""
        out = list(self.smoke_failures) + list(self.invariant_failures)
        if not self.confronts:
            return out
        n_true, n_generic = len(self._of("true")), len(self._of("generic"))
        if n_true and not self.tp_rate >= tp_min:
            per = ", ".join(
                f"{k} {self.tp_rate_of(k):.2f}" for k in NOISE_KINDS if self._of("true", k)
            )
            out.append(f"true positives {self.tp_rate:.2f} < {tp_min} of {n_true} ({per})")
        if n_generic and not self.fp_rate <= fp_max:
            out.append(f"false positives {self.fp_rate:.2f} > {fp_max} of {n_generic}")
        for family, rate in self.fp_by_family.items():
            if not rate <= family_fp_max:
                n = len(self._of("generic", family))
                out.append(
                    f"false positives of family {family} {rate:.2f} > {family_fp_max} of {n}"
                )
        for noise in NOISE_KINDS:
            for name, value in self.coverage(noise).items():
                if not value >= coverage_min:
                    out.append(
                        f"coverage of {name} under {noise} noise {value:.2f} < {coverage_min} "
                        f"(true value {self.true_params[name]:g})"
                    )
            band = self.band_coverage(noise)
            if not math.isnan(band) and not band >= coverage_min:
                out.append(
                    f"forecast band coverage under {noise} noise {band:.2f} < {coverage_min} "
                    "(mean share of later records inside the 95% band)"
                )
            if spread_se is None:
                continue
            low, high = spread_se
            for name, value in self.spread_over_se(noise).items():
                if math.isfinite(value) and not low <= value <= high:
                    out.append(
                        f"spread over seeds / reported standard error of {name} under {noise} "
                        f"noise {value:.2f} outside [{low}, {high}]"
                    )
        return out

    def check(
        self,
        *,
        tp_min: float = 0.9,
        fp_max: float = 0.05,
        family_fp_max: float = 0.2,
        coverage_min: float = 0.9,
        spread_se: tuple[float, float] | None = (0.7, 1.4),
    ) -> None:
        """Raise ``AssertionError`` listing every target missed, with its numbers.

        Parameters
        ----------
        tp_min : float, default=0.9
            Least share of true streams judged positive.
        fp_max : float, default=0.05
            Largest share of generic streams judged positive, over all families.
        family_fp_max : float, default=0.2
            The same for each family.
        coverage_min : float, default=0.9
            Least coverage of each true parameter's 95% interval, under each noise, and of
            the forecast band where it was measured (``forecast=True``).
        spread_se : (float, float) or None, default=(0.7, 1.4)
            Range of spread over seeds / reported standard error; ``None`` skips it.
        """
        failed = self.failures(
            tp_min=tp_min,
            fp_max=fp_max,
            family_fp_max=family_fp_max,
            coverage_min=coverage_min,
            spread_se=spread_se,
        )
        if failed:
            raise AssertionError(
                f"check_theory({self.theory!r}) missed {len(failed)} target(s):\n- "
                + "\n- ".join(failed)
            )


# ---------------------------------------------------------------------------- the checks
def fit_invariants(fit: TheoryFit) -> list[str]:
    """What is wrong with ``fit`` as a fit (empty when nothing): at least one free parameter,
    a finite ordered interval for each, and each fitted observable predicted after the last
    fitted record."""
    out = []
    if fit.n_free <= 0:
        out.append(f"{fit.n_free} free parameters (a fit must have at least one)")
    if len(fit.intervals) < fit.n_free:
        out.append(f"{len(fit.intervals)} intervals for {fit.n_free} free parameters")
    for name, (low, high) in fit.intervals.items():
        if math.isnan(low) or math.isnan(high) or low > high:
            out.append(f"interval of {name} is [{low}, {high}]")
    if not fit.curves.fitted:
        out.append("no fitted observable")
    for name, (steps, _) in fit.curves.fitted.items():
        span = float(steps[-1] - steps[0]) if steps.size > 1 else 1.0
        at = np.array([fit.fit_until + 0.05 * span + 1.0])
        try:
            predicted = fit.curves.predict(at)
        except Exception as exc:
            out.append(f"predict raised {one_line_reason(exc)}")
            break
        if name not in predicted:
            out.append(f"fitted observable {name!r} is not predicted")
        elif np.shape(predicted[name]) != at.shape:
            out.append(f"prediction of {name!r} has shape {np.shape(predicted[name])}")
    return out


def _band_scores(path: Path, name: str) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(coverage, z)`` of theory ``name``'s forecast band on the stream at ``path``: the
    coverage at each origin and observable, and each later record's error from the band's
    centre over its standard error (half-width / 1.96), on the observable's scale."""
    from ..experiments.forecast import forecast
    from ..experiments.forecast_scoring import to_scale
    from .verdict import observable_scale

    coverage: list[float] = []
    z: list[float] = []
    for entry in forecast(path):
        if entry.theory != name:
            continue
        coverage.extend(
            float(row["coverage"])
            for row in entry.scores
            if str(row["method"]).startswith("theory") and not math.isnan(row["coverage"])
        )
        for origin in entry.origins:
            fit = origin.fit
            if fit is None or fit.curves.band is None:
                continue
            for obs, (steps, values) in entry.observed.items():
                after = steps > origin.cut
                if not after.any():
                    continue
                try:
                    with np.errstate(all="ignore"):
                        low, high = fit.curves.band(steps[after])[obs]
                except Exception:  # scored as missing, as forecast() does
                    continue
                scale = observable_scale(fit, obs, values)
                lo, hi = to_scale(np.asarray(low), scale), to_scale(np.asarray(high), scale)
                with np.errstate(all="ignore"):
                    err = to_scale(values[after], scale) - (lo + hi) / 2
                    z.extend((err / ((hi - lo) / 2 / _Z95)).tolist())
    return tuple(coverage), tuple(z)


def _make_true_stream(cal: Calibration, path: Path, noise: str, seed: int) -> None:
    """The true stream :func:`check_theory` makes for ``seed`` and ``noise``, at ``path``."""
    cal.true_stream(path, np.random.default_rng([seed, 1]), noise)


def true_stream_band(
    theory: Theory | str, noise: str, seed: int
) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """``(coverage, z)`` of the theory's forecast band on the true stream of kind ``noise``
    that :func:`check_theory` makes for ``seed`` (its ``i``-th stream under ``seed=s`` has
    seed ``s + i``), scored as ``check_theory(..., forecast=True)`` scores it: the coverage at
    each origin and observable, and each later record's error over the band's standard
    error. For re-measuring a band alone (``benchmarks/calibration_table.py --bands-only``).
    """
    theory = registry.get(theory) if isinstance(theory, str) else theory
    cal = _resolve_calibration(theory)
    if cal is None:
        raise ValueError(f"`theory` must declare a calibration; got {theory.name!r}.")
    with tempfile.TemporaryDirectory(prefix=f"bands_{theory.name}_") as tmp, _alone(theory):
        path = Path(tmp) / f"{noise}-{seed}"
        _make_true_stream(cal, path, noise, seed)
        return _band_scores(path, theory.name)


@contextmanager
def _alone(theory: Theory) -> Iterator[None]:
    """The theory registry holding ``theory`` only, inside the block (so that the engine and
    the experiment runner see this theory, registered or not, and no other)."""
    saved = registry._FOUND
    registry._FOUND = {theory.name: theory}
    try:
        yield
    finally:
        registry._FOUND = saved


def _resolve_calibration(theory: Theory) -> Calibration | None:
    reference = getattr(theory, "calibration", None)
    if reference is None:
        return None
    value = theory.load_calibration()
    if not isinstance(value, Calibration):
        raise TheoryDeclarationError(
            f"{theory.where}: `calibration` ({reference}) must be a Calibration; got "
            f"{type(value).__name__}."
        )
    return value


def check_theory(
    theory: Theory | str,
    *,
    seed: int = 0,
    n_true: int | None = None,
    n_generic: int | None = None,
    quick: bool = False,
    calibration: Calibration | None = None,
    smoke: bool = True,
    workdir: str | Path | None = None,
    forecast: bool = False,
) -> CalibrationReport:
    """Put ``theory`` through the conformance and calibration battery (module docstring).

    Parameters
    ----------
    theory : Theory or str
        A declaration, or the name of a registered theory.
    seed : int, default=0
        Seeds every stream (stream ``i`` of a kind uses ``seed + i``).
    n_true : int, optional
        True streams per noise kind; default 10, or 2 when ``quick``.
    n_generic : int, optional
        Streams per generic family; default 10, or 1 when ``quick``.
    quick : bool, default=False
        Fewer streams and only the first smoke experiment.
    calibration : Calibration, optional
        Streams to use instead of the ones the theory's declaration names.
    smoke : bool, default=True
        Run the smoke experiment(s).
    workdir : path, optional
        Where the run directories are written (kept); a temporary directory by default.
    forecast : bool, default=False
        Also forecast every true stream and measure the theory's forecast band (module
        docstring, item 6); off by default, since it costs about as much as the rest.

    Returns
    -------
    CalibrationReport
        Call :meth:`CalibrationReport.check` to assert the targets.

    Notes
    -----
    While it runs, the theory registry holds ``theory`` alone (so that an unregistered
    theory is confronted and the engine fits no other theory to the streams); it is restored
    afterwards. Do not run it concurrently with other uses of the registry in one process.
    """
    from .. import theories

    if isinstance(theory, str):
        theory = theories.get(theory)
    if not isinstance(theory, Theory):
        raise TypeError(f"`theory` must be a Theory or a theory name; got {type(theory).__name__}.")
    n_true = (2 if quick else 10) if n_true is None else n_true
    n_generic = (1 if quick else 10) if n_generic is None else n_generic
    for name, value in (("n_true", n_true), ("n_generic", n_generic)):
        if not isinstance(value, int) or value < 0:
            raise ValueError(f"`{name}` must be a non-negative integer; got {value!r}.")
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix=f"check_{theory.name}_") as tmp:
            return _check(
                theory, seed, n_true, n_generic, quick, calibration, smoke, Path(tmp), forecast
            )
    return _check(
        theory, seed, n_true, n_generic, quick, calibration, smoke, Path(workdir), forecast
    )


def _check(
    theory: Theory,
    seed: int,
    n_true: int,
    n_generic: int,
    quick: bool,
    calibration: Calibration | None,
    smoke: bool,
    root: Path,
    forecast: bool = False,
) -> CalibrationReport:
    """The battery of :func:`check_theory` in ``root``, with the registry holding
    ``theory`` alone: smoke runs, then true streams, then generic streams."""
    report = CalibrationReport(theory.name)
    with _alone(theory):
        conf = theory.load_confrontation()
        cal = calibration if calibration is not None else _resolve_calibration(theory)
        _note_what_is_checked(report, theory, conf is not None, cal)
        if smoke:
            _check_smoke(report, theory, cal, conf is not None, seed, quick, root)
        if conf is None or cal is None:
            return report
        _check_true_streams(report, theory, cal, seed, n_true, root, forecast)
        _check_generic_streams(report, theory, cal, seed, n_generic, root)
    return report


def _note_what_is_checked(
    report: CalibrationReport, theory: Theory, confronts: bool, cal: Calibration | None
) -> None:
    """Record in ``report`` whether the theory confronts runs, its true parameters, and a
    note for each part of the battery it cannot take."""
    report.confronts = confronts
    if not confronts:
        report.notes.append(
            f"theory {theory.name!r} declares no confrontation with recorded runs: only its "
            "smoke experiment is checked"
        )
    elif cal is None:
        report.notes.append(
            f"theory {theory.name!r} declares no calibration: no true or generic streams "
            "were made (declare `calibration=` to check its verdicts)"
        )
    if cal is not None:
        report.true_params = {k: float(v) for k, v in cal.true_params.items()}


def _judge_stream(
    report: CalibrationReport, theory: Theory, path: Path, kind: str, family: str, s: int
) -> None:
    """Compare the run at ``path`` and append the theory's verdicts (or the error) to
    ``report``, with every invariant its fit and window fits break."""
    from ..experiments.compare import compare

    try:
        entries = [e for e in compare(path) if e.theory == theory.name]
    except Exception as exc:
        report.results.append(StreamResult(kind, family, s, "error", one_line_reason(exc)))
        return
    if not entries:
        report.results.append(StreamResult(kind, family, s, "missing", "no entry"))
    for e in entries:
        fit = e.fit
        report.results.append(
            StreamResult(
                kind,
                family,
                s,
                e.verdict.verdict,
                e.verdict.reason,
                fit.values if fit is not None else {},
                fit.intervals if fit is not None else {},
            )
        )
        for w in [fit, *(getattr(x, "fit", None) for x in e.windows)]:
            if w is None:
                continue
            report.invariant_failures.extend(
                f"{kind} {family} seed {s}: {why}" for why in fit_invariants(w)
            )


def _check_smoke(
    report: CalibrationReport,
    theory: Theory,
    cal: Calibration | None,
    confronts: bool,
    seed: int,
    quick: bool,
    root: Path,
) -> None:
    """Run the smoke experiment(s) on the CPU (only the first when ``quick``) and judge each
    run, or note that it ran when the theory confronts no runs."""
    from ..experiments import _registry as experiments

    names = list(cal.smoke) if cal is not None and cal.smoke else []
    if not names:
        names = [spec.name for spec in theory.load_experiments()]
    for name in names[:1] if quick else names:
        out = root / "smoke" / name
        overrides = dict(cal.quick_overrides.get(name, {})) if quick and cal else {}
        try:
            experiments.run(
                name, "smoke", out, seed=seed, progress=False, device="cpu", **overrides
            )
        except Exception as exc:
            report.results.append(StreamResult("smoke", name, seed, "error", one_line_reason(exc)))
            continue
        if not confronts:
            report.results.append(StreamResult("smoke", name, seed, "ran"))
            continue
        _judge_stream(report, theory, out, "smoke", name, seed)


def _check_true_streams(
    report: CalibrationReport,
    theory: Theory,
    cal: Calibration,
    seed: int,
    n_true: int,
    root: Path,
    forecast: bool,
) -> None:
    """Make and judge ``n_true`` true streams per noise kind; with ``forecast``, also
    measure the forecast band of each one judged."""
    for noise in NOISE_KINDS:
        for i in range(n_true):
            path = root / "true" / f"{noise}-{i}"
            _make_true_stream(cal, path, noise, seed + i)
            _judge_stream(report, theory, path, "true", noise, seed + i)
            if forecast and report.results and report.results[-1].kind == "true":
                last = report.results[-1]
                try:
                    cov, z = _band_scores(path, theory.name)
                except Exception as exc:  # noted, and the stream has no band measured
                    report.notes.append(
                        f"forecast of true stream {noise} {i} raised {one_line_reason(exc)}"
                    )
                    continue
                report.results[-1] = replace(last, band_coverage=cov, band_z=z)


def _check_generic_streams(
    report: CalibrationReport,
    theory: Theory,
    cal: Calibration,
    seed: int,
    n_generic: int,
    root: Path,
) -> None:
    """Make and judge ``n_generic`` streams of each generic family the calibration names."""
    for j, family in enumerate(cal.families):
        for i in range(n_generic):
            path = root / "generic" / f"{family}-{i}"
            cal.generic_stream(path, family, np.random.default_rng([seed + i, 2, j]))
            _judge_stream(report, theory, path, "generic", family, seed + i)
