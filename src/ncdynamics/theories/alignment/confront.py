"""The two-point theory of [1], confronted with a pair of probe points recorded in a run.

The ``pair_alignment`` probe records, for two fixed points of the probe set, the squared
representational distance ``a = |dh|^2`` at one hidden layer, the squared output distance
``b = |dy|^2``, the alignment variable ``w = b - dy . dt``, and the constants ``X`` (squared
input distance) and ``Y`` (squared target distance).

Assumptions (checked on the run's settings and records; an unrecorded one is not checked):
the loss is the squared error of eq. (1) (the system (7) is the gradient flow (4) of it);
the optimiser is plain gradient descent (eq. (3); with Adam the theory fits poorly, Fig. 15,
App. C.5); the learning rate is constant (the rates ``1/tau_h``, ``1/tau_y`` are constants of
eq. (6)).

Fit. The rates of the system (7) are fitted to ``(a, b, w)`` with the objective (49), its
integrals discretised by the trapezoid rule on the recorded steps (records may be unevenly
spaced), the theory started from the *first record* (its time and measured state), as
App. B.1 of [1] starts it from the measured initial state. The search is in the natural-log
rates (they span decades and must be positive; :func:`.estimate.fit_rates`, trust-region
inside bounds). The bounds are set by the stream: below ``1e-6 / (T s_max)`` (``T`` the
recorded time span, ``s_max`` the largest of ``X``, ``Y``, ``a``, ``b``) a rate moves no
variable by a millionth over the records; above ``1e4 / (dt_min s_min)`` (``dt_min`` the
smallest record gap, ``s_min`` the smaller of ``X`` and ``Y``) its transient would be over
within a record gap. A rate on a bound, or one whose 95% interval reaches below the lower
bound (reported as reaching 0: indistinguishable from a rate that does nothing here), makes
the verdict ``degenerate`` (:mod:`ncdynamics.theories.verdict`): a run still on its plateau
pushes ``1/tau_y`` to zero and the predicted final distance (10) to infinity.

Intervals: the Gauss--Newton sandwich of the log-rates from the Jacobian of the (49)
residuals at the optimum, its middle the AR(1) covariance of each variable's residuals (a
variance and a lag-one correlation per variable), plus the first record's scatter propagated
through the initial state the fit starts from (:func:`_rate_covariance`), with a ``t``
quantile on the effective records that correlation leaves (:func:`~ncdynamics.theories.
uncertainty.effective_dof`), reported as ``exp`` of the log interval. It costs about ten ODE
solves where a profile would cost a refit per profile point (and ``ncdyn compare`` refits
sliding windows), and the log parametrisation keeps the quadratic approximation good over
decades. A training curve's residuals about the theory are serially correlated, and where
the theory misses systematically (lag-one correlation near 1) few effective records remain
and the intervals are wide.
``rho`` and the final distance (10) get intervals from the same covariance by the delta method
(in log).

Forecast band (:attr:`Curves.band`, :func:`_curves`): the delta method in the log-rates and
the first record *together*, with their joint covariance, widened by each observable's
residual scatter, at Student's t on the effective records. The prediction is integrated from
the first record and the rates are fitted from it, so a first record off by ``d`` moves the
prediction by ``(g_y + g_theta G) d`` (``G`` the rates' response), and the refitted rates
steer it back to the later records: the two terms partly cancel. The band's middle takes each
variable's AR(1) coefficient at its restricted likelihood's maximum
(:func:`~ncdynamics.theories.uncertainty.ar1_reml_covariance`, ``rho_estimate="maximum"``);
the parameter intervals keep the residuals' own coefficient. Measured on the calibration kit's
true streams (coverage indep./AR(1), records' error over the band's standard error
indep./AR(1); seeds 0-3 | 4-11, or 0-11 where one figure, about 5.5 forecast origins a
stream):

* the band before: the first record carried through the rates alone, the normal quantile:
  0.99/0.93, 0.59/1.02 | 1.00/0.92, 0.64/1.16. Its width is that term: dropping it gives
  0.88/0.67, 1.35/2.51 (seeds 0-3), and changing the noise model does not move it -- the noise model
  chosen by the data per variable (AR(1) only where the REML likelihood ratio against
  ``rho = 0`` exceeds 3.84; issue 28's option (a)) 0.99/0.93, 0.61/1.05; independent noise
  0.99/0.93, 0.61/1.08; one REML model pooled over ``a``, ``b``, ``w`` (each scaled by its
  own residual variance; option (b), with the same choice) 0.99/0.93, 0.60/1.04 (seeds 0-3);
* the first record through the start and the rates together, normal quantile: 0.98/0.90,
  0.76/1.28 | 0.98/0.86, 0.83/1.43 (too narrow under AR(1));
* the same with Student's t on the effective records: 0.99/0.93, 0.71/1.05 (at the 0.7 floor
  under independent noise); with the noise model chosen by the data as above: 0.98/0.91,
  0.76/1.21 | 0.99/0.89, 0.81/1.31 (below 0.9 under AR(1)); with the REML marginal variance
  in the scatter too: 0.98/0.88, 0.86/1.37;
* **chosen**, the same with each variable's coefficient at its REML maximum: 0.99/0.92,
  0.77/1.15 (seeds 0-11). The 40-seed numbers are in the generated calibration table of
  docs/confront.md.

Alternatives: the four dynamics of eq. (51) (App. C.1), fitted the same way, with their AIC
relative to (7) in :attr:`Shown.alternatives` (:func:`_alternatives`).

Units: the rates are per recorded step: per epoch for :func:`ncdynamics.training.train`
runs (which record at epochs) and this theory's experiments (one full-batch step per epoch),
per step otherwise.

Observables: ``pair_distance`` (``a``), ``pair_output_distance`` (``b``) and ``pair_alignment``
(``w``), each judged on the linear scale the objective (49) fits them on.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np
from numpy.typing import NDArray

from ..confrontation import (
    Assumption,
    Confrontation,
    Curves,
    Need,
    Param,
    Series,
    Shown,
    Stream,
    TheoryFit,
    Uncertainty,
    Undetermined,
    r_squared,
)
from ..forecast_bands import student_level
from ..integrate import ConvergenceWarning, FitResult
from ..regime import constant_learning_rate_assumption, loss_is, plain_gradient_descent
from ..uncertainty import (
    ar1_meat,
    ar1_reml_covariance,
    delta_band,
    effective_dof,
    intervals_from_covariance,
    numeric_jacobian,
    residual_autocorrelation,
)
from .closed_form import final_distance
from .estimate import fit_rates, simulate
from .model import VARIANTS, AlignmentParams

__all__ = ["ASSUMPTIONS", "CONFRONTATION", "rate_bounds"]

_VARIABLES = ("pair_a", "pair_b", "pair_w")
_NEEDS = tuple(Need("scalar", v, "pair_alignment") for v in (*_VARIABLES, "pair_X", "pair_Y"))
_OBSERVABLES = {"pair_distance": 0, "pair_output_distance": 1, "pair_alignment": 2}
_RATES = ("inv_tau_h", "inv_tau_y")
#: log-rates are kept within +-_LOG_CAP (the estimator's own search limit is 40).
_LOG_CAP = 35.0


def _observe(stream: Stream) -> dict[str, Series]:
    return {
        "pair_distance": stream.scalar("pair_a"),
        "pair_output_distance": stream.scalar("pair_b"),
        "pair_alignment": stream.scalar("pair_w"),
    }


# ---------------------------------------------------------------------------- assumptions
def _check_optimizer(stream: Stream) -> str | None:
    name = stream.prefix.rstrip("/.")
    if stream.setting("optimizer") is None and _own_experiment(stream) and name == "adam":
        # this theory's experiments name a stream by its optimiser (Fig. 15)
        return f"optimizer 'adam' (stream {name!r}); {_GD_WHY}"
    return _PLAIN_GD.check(stream)


_GD_WHY = (
    "the rates of (7) are those of plain gradient descent (eq. (3) of [1]): momentum adds "
    "dynamics of its own, weight decay a term of its own, and with Adam the theory fits "
    "poorly (Fig. 15)"
)
_PLAIN_GD = plain_gradient_descent(_GD_WHY)


def _own_experiment(stream: Stream) -> bool:
    """Whether the run is one of this theory's experiments (``alignment.*``)."""
    return str(stream.config.get("experiment")).startswith("alignment.")


ASSUMPTIONS = (
    loss_is(
        ("mse", "half-mse"),
        "squared-error loss (eq. (1))",
        "the system (7) is gradient descent on the squared error of eq. (1) of [1]",
    ),
    Assumption(
        "optimizer",
        "plain gradient descent (eq. (3)): no momentum, no weight decay, not Adam",
        _check_optimizer,
        _PLAIN_GD.settings,
    ),
    constant_learning_rate_assumption(
        "constant learning rate (constant rates, eq. (6))",
        "the rates 1/tau_h, 1/tau_y of eq. (6) of [1] are constants",
    ),
)


# ---------------------------------------------------------------------------- the fit
def _state(stream: Stream) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    series = [stream.scalar(v) for v in _VARIABLES]
    steps = series[0][0]
    if any(s[0].shape != steps.shape or np.any(s[0] != steps) for s in series):
        raise ValueError("`pair_a`, `pair_b` and `pair_w` must be recorded at the same steps.")
    return steps, np.stack([s[1] for s in series], axis=1)


def _time_unit(stream: Stream) -> str:
    """What a recorded step is: an epoch (``train`` runs, this theory's experiments) or a step."""
    if _own_experiment(stream) or stream.setting("epochs") is not None:
        return "epoch"
    return "step"


def rate_bounds(
    steps: NDArray[np.float64], state: NDArray[np.float64], X: float, Y: float
) -> tuple[float, float]:
    """``(low, high)``: the search bounds of both rates for records ``(steps, state)``.

    ``low = 1e-6 / (T s_max)`` and ``high = 1e4 / (dt_min s_min)`` (module docstring), kept
    within ``exp(-35)`` and ``exp(35)``.
    """
    span = float(steps[-1] - steps[0])
    gap = float(np.min(np.diff(steps)))
    s_max = max(X, Y, float(np.max(np.abs(state[:, :2]))))
    s_min = min(X, Y) if Y > 0 else X
    low = math.exp(max(math.log(1e-6 / (span * s_max)), -_LOG_CAP))
    high = math.exp(min(math.log(1e4 / (gap * s_min)), _LOG_CAP))
    return low, high


def _fit(stream: Stream) -> TheoryFit:
    """Eq. (7) fitted to the stream's ``(a, b, w)`` records (module docstring): the two
    rates with their intervals, the fitted and predicted curves with their band, the final
    distance (10) and the alternatives (51)."""
    steps, state = _state(stream)
    if steps.size < 3:
        raise Undetermined(f"the fit needs at least 3 records; the stream has {steps.size}.")
    X, Y = float(stream.scalar("pair_X")[1][0]), float(stream.scalar("pair_Y")[1][0])
    low, high = rate_bounds(steps, state, X, Y)
    search = (math.log(low), math.log(high))  # the same for both log-rates
    fit = _fit_log_rates(steps, state, X, Y, search)
    params = fit.params
    theory = fit.extra["trajectory"]
    theta = np.log([params.inv_tau_h, params.inv_tau_y])
    at_rates = _params_at(X, Y)
    parts = _rate_covariance_parts(steps, state, theta, at_rates)
    cov, dof = _joint_covariance(parts.records, parts.gain, parts.start)[:2, :2], parts.dof
    joint = _joint_covariance(parts.band_records, parts.gain, parts.start), parts.band_dof
    intervals = {
        name: _within_search(iv, low, high)
        for name, iv in _log_intervals(list(_RATES), theta, cov, dof).items()
    }
    curves = _curves(steps, state, theory, theta, joint, at_rates)
    predictions = _final_distance(state[0], X, Y, theta, cov, dof)
    alternatives = _alternatives(steps, state, X, Y, theta, search, float(fit.loss))
    unit = _time_unit(stream)
    r2 = {f"r2_{v[5:]}": r_squared(state[:, k], theory[:, k]) for k, v in enumerate(_VARIABLES)}
    notes = [] if fit.success else [f"rate fit: {fit.message}"]
    return TheoryFit(
        theory="alignment",
        params=_fitted_params(params, intervals, (low, high), X, Y, unit),
        curves=curves,
        uncertainty=Uncertainty(method=_INTERVAL_METHOD, n_fitted=2),
        shown=Shown(
            goodness={**r2, "objective_49": float(fit.loss)},
            predictions=predictions,
            notes=tuple(notes),
            alternatives=alternatives,
        ),
    )


_INTERVAL_METHOD = (
    "least-squares sandwich of the eq. (49) residuals in log-rates with an AR(1) middle per "
    "variable (a, b, w), the first record's scatter propagated through the initial state, "
    "t(effective records); an end below the lower search bound reported as 0"
)


def _fit_log_rates(
    steps: NDArray[np.float64],
    state: NDArray[np.float64],
    X: float,
    Y: float,
    search: tuple[float, float],
) -> FitResult:
    """The rates of (7) fitted by the objective (49), each log-rate searched in ``search``;
    a solver's convergence warning is silenced (the fit's message says it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return fit_rates(
            steps,
            state,
            X=X,
            Y=Y,
            quadrature="trapezoid",
            log_bounds=(search, search),
        )


def _params_at(X: float, Y: float) -> Callable[[NDArray[np.float64]], AlignmentParams]:
    """The parameters of (7) at log-rates ``th``, with the distances ``X``, ``Y`` fixed."""

    def at_rates(th: NDArray[np.float64]) -> AlignmentParams:
        return AlignmentParams(float(np.exp(th[0])), float(np.exp(th[1])), X, Y)

    return at_rates


def _curves(
    steps: NDArray[np.float64],
    state: NDArray[np.float64],
    theory: NDArray[np.float64],
    theta: NDArray[np.float64],
    joint: tuple[NDArray[np.float64], int],
    at_rates: Callable[[NDArray[np.float64]], AlignmentParams],
) -> Curves:
    """The fitted curves, the prediction (integrated from the first record's time and
    state) and its band.

    The band is the delta method in the log-rates *and* the first record together, with
    their joint covariance ``joint = (cov, dof)`` (:func:`_joint_covariance`), widened by the
    records' scatter about the fit, at Student's t on the effective records. The prediction
    starts from the first record and the rates were fitted from it, so a first record off by
    ``d`` moves the prediction by ``(g_y + g_theta G) d``: the refitted rates steer the curve
    back to the later records and the two terms partly cancel. Carrying the first record
    through the rates alone, as the band did before, made it 1.6 times wider than its errors
    under independent noise (module docstring)."""
    y0, t0 = state[0], float(steps[0])
    cov, dof = joint

    def from_start(
        th: NDArray[np.float64], start: NDArray[np.float64], at: NDArray[np.float64]
    ) -> dict[str, Any]:
        at = np.asarray(at, dtype=np.float64)
        later = at > t0
        out = np.full((at.size, 3), np.nan)
        if np.any(later):  # integrated from the first record's time and state
            uniq, inverse = np.unique(at[later], return_inverse=True)
            ys = simulate(start, np.concatenate([[t0], uniq]), at_rates(th)).ys[1:]
            out[later] = ys[inverse.ravel()]
        return {name: out[:, k] for name, k in _OBSERVABLES.items()}

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        return from_start(theta, y0, at)

    def predict_with(phi: NDArray[np.float64], at: NDArray[np.float64]) -> dict[str, Any]:
        return from_start(phi[:2], phi[2:], at)

    scatter = {
        name: float(np.sqrt(np.mean((state[1:, k] - theory[1:, k]) ** 2)))
        for name, k in _OBSERVABLES.items()
    }
    phi = np.concatenate([theta, y0])
    level = student_level(dof)

    def band(at: NDArray[np.float64]) -> dict[str, tuple[Any, Any]]:
        return dict(delta_band(predict_with, phi, cov, at, scatter=scatter, level=level))

    return Curves(
        fitted={name: (steps, theory[:, k]) for name, k in _OBSERVABLES.items()},
        predict=predict,
        band=band,
        scales={name: "linear" for name in _OBSERVABLES},
    )


def _fitted_params(
    params: AlignmentParams,
    intervals: dict[str, tuple[float, float]],
    bound: tuple[float, float],
    X: float,
    Y: float,
    unit: str,
) -> dict[str, Param]:
    """The two fitted rates (per ``unit``, positive, searched in ``bound``) and the two
    measured distances ``X``, ``Y``."""
    units = {
        "inv_tau_h": f"1/{unit}",
        "inv_tau_y": f"1/{unit}",
        "X": "squared input distance",
        "Y": "squared target distance",
    }
    rates = {"inv_tau_h": params.inv_tau_h, "inv_tau_y": params.inv_tau_y}
    return {
        **{
            name: Param(
                value,
                interval=intervals[name],
                unit=units[name],
                bound=bound,
                sign=1,
            )
            for name, value in rates.items()
        },
        "X": Param(X, unit=units["X"]),
        "Y": Param(Y, unit=units["Y"]),
    }


def _alternatives(
    steps: NDArray[np.float64],
    state: NDArray[np.float64],
    X: float,
    Y: float,
    theta: NDArray[np.float64],
    search: tuple[float, float],
    loss_eq7: float,
) -> dict[str, dict[str, float]]:
    """The alternative dynamics (51) of [1] (App. C.1), each fitted like (7), by AIC.

    Each variant changes one term of (7) and keeps two rates, so their AIC
    ``n log(F / n) + 2 * 2`` (``F`` the objective (49), ``n`` the residuals) differ only by
    the fit; App. C.1 reports that (7) fits best. The search starts from the rates of (7).
    ``chosen`` is 1 for (7): the variants are controls, not readings of the theory.
    """
    n = 3 * (steps.size - 1)

    def aic(loss: float) -> float:
        return n * math.log(loss / n) + 4.0 if loss > 0 and math.isfinite(loss) else -math.inf

    out = {"eq7": {"objective_49": loss_eq7, "aic": aic(loss_eq7), "chosen": 1.0}}
    start = (float(theta[0]), float(theta[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        for variant in VARIANTS:
            if variant == "eq7":
                continue
            fit = fit_rates(
                steps,
                state,
                X=X,
                Y=Y,
                variant=variant,
                starts=(start,),
                quadrature="trapezoid",
                log_bounds=(search, search),
            )
            loss = float(fit.loss) if fit.success else math.inf
            out[variant] = {"objective_49": loss, "aic": aic(loss), "chosen": 0.0}
    for numbers in out.values():
        numbers["delta_aic"] = numbers["aic"] - out["eq7"]["aic"]
    return out


class _CovarianceParts(NamedTuple):
    """The two parts of the log-rates' covariance (:func:`_rate_covariance_parts`)."""

    #: ``A (sum_k J_k^T Sigma_k J_k) A``: the records' scatter after the first record.
    records: NDArray[np.float64]
    #: ``G = d theta / d y0``: how the fitted log-rates follow the first record.
    gain: NDArray[np.float64]
    #: ``diag(v_k)``: the first record's own scatter, per variable.
    start: NDArray[np.float64]
    #: Student-t degrees of freedom on the effective records.
    dof: int
    #: The records' part and the degrees of freedom for the forecast band: each variable's
    #: lag-one correlation at its restricted likelihood's maximum (:func:`_band_noise`).
    band_records: NDArray[np.float64]
    band_dof: int


def _rate_covariance(
    steps: NDArray[np.float64],
    state: NDArray[np.float64],
    theta: NDArray[np.float64],
    at_rates: Callable[[NDArray[np.float64]], AlignmentParams],
) -> tuple[NDArray[np.float64], int]:
    """``(cov, dof)``: covariance of the log-rates ``theta`` fitted by (49) to ``state``:
    the records' part plus the first record's, ``records + G diag(v) G^T``
    (:func:`_rate_covariance_parts`); all-``inf`` where it cannot be computed, and a
    direction the residuals do not depend on gets an infinite variance."""
    parts = _rate_covariance_parts(steps, state, theta, at_rates)
    return _joint_covariance(parts.records, parts.gain, parts.start)[:2, :2], parts.dof


def _joint_covariance(
    records: NDArray[np.float64], gain: NDArray[np.float64], start: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Covariance of ``(theta, y0)``, the log-rates and the first record they are fitted
    from: ``[[records + G V G^T, G V], [V G^T, V]]``. The prediction moves with both, and
    their parts partly cancel (:func:`_curves`)."""
    p, m = gain.shape
    out = np.empty((p + m, p + m))
    with np.errstate(invalid="ignore", over="ignore"):
        out[:p, :p] = records + gain @ start @ gain.T
        out[:p, p:] = gain @ start
        out[p:, :p] = start @ gain.T
        out[p:, p:] = start
    if not np.all(np.isfinite(out[:p, :p])):
        out[:p, :] = np.inf
        out[:, :p] = np.inf
    return out


def _rate_covariance_parts(
    steps: NDArray[np.float64],
    state: NDArray[np.float64],
    theta: NDArray[np.float64],
    at_rates: Callable[[NDArray[np.float64]], AlignmentParams],
) -> _CovarianceParts:
    """The covariance of the log-rates ``theta`` fitted by (49) to ``state``, in parts.

    Gauss--Newton on the (49) residuals after the first record (``J`` their Jacobian in
    ``theta``, ``A = (J^T J)^+``), in two parts:

    * the records' scatter, ``A (sum_k J_k^T Sigma_k J_k) A`` with ``Sigma_k`` the AR(1)
      covariance of the residuals of variable ``k`` of ``(a, b, w)``
      (:func:`~ncdynamics.theories.uncertainty.ar1_meat`: its own variance ``s_k^2``, since
      they differ by orders of magnitude, and its own lag-one autocorrelation);
    * the first record's own scatter, which the fit takes as the exact initial state:
      ``G diag(v_k) G^T`` with ``G = -A J^T J_0`` (``J_0`` the Jacobian of the residuals in the
      initial state) and ``v_k`` the unweighted residual variance of variable ``k``.

    ``dof`` is that of the effective records (:func:`~ncdynamics.theories.uncertainty.
    effective_dof`) of ``n - 2`` for ``n`` residuals; the records' part is all-``inf`` where
    it cannot be computed, and a direction the residuals do not depend on gets an infinite
    variance.
    """
    sqw = np.sqrt(_trapezoid_weights(steps))[1:, None]
    y0 = state[0]

    def weighted(th: NDArray[np.float64], start: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(sqw * simulate(start, steps, at_rates(th)).ys[1:], dtype=np.float64)

    base = weighted(theta, y0)
    resid = base - sqw * state[1:]  # (n_records - 1, 3)
    n, p = resid.size, theta.size
    dof = n - p
    jac = numeric_jacobian(lambda th: weighted(th, y0).ravel(), theta)  # (n, 2)
    inf = np.full((p, p), np.inf)
    nowhere = _CovarianceParts(inf, np.zeros((p, 3)), np.zeros((3, 3)), dof, inf, dof)
    if dof <= 0 or not (np.all(np.isfinite(jac)) and np.all(np.isfinite(resid))):
        return nowhere
    inflate = n / dof
    s2 = np.sum(resid**2, axis=0) / resid.shape[0] * inflate  # per variable, weighted
    v0 = np.mean((resid / sqw) ** 2, axis=0) * inflate  # per variable, unweighted
    A = np.linalg.pinv(jac.T @ jac)
    rows = jac.reshape(resid.shape[0], 3, p)  # residual (record, variable) x parameter
    # each variable's residuals are serially correlated: the AR(1) middle of the sandwich
    meat = sum(ar1_meat(rows[:, k], resid[:, k], s2[k]) for k in range(3))
    j0 = np.empty((n, 3))
    for k in range(3):
        scale = max(abs(y0[k]), 1e-3 * float(np.max(np.abs(state[:, k]))), 1e-300)
        h = 1e-6 * scale
        up, down = y0.copy(), y0.copy()
        up[k] += h
        down[k] -= h
        j0[:, k] = (weighted(theta, up) - weighted(theta, down)).ravel() / (2 * h)
    G = -A @ jac.T @ j0  # d theta / d y0
    records = A @ meat @ A
    rho = float(np.mean([residual_autocorrelation(resid[:, k]) for k in range(3)]))
    band_records, band_rho = _band_noise(np.asarray(A, np.float64), rows, resid, s2)
    band_dof = effective_dof(n, p, band_rho, dof)
    dof = effective_dof(n, p, rho, dof)  # effective records
    if not (np.all(np.isfinite(records)) and np.all(np.isfinite(G))):
        return nowhere._replace(dof=dof, band_dof=band_dof)
    flat = ~np.any(np.abs(jac) > 0, axis=0)
    for part in (records, band_records):
        part[flat, :] = np.inf
        part[:, flat] = np.inf
    return _CovarianceParts(
        np.asarray(records, np.float64), G, np.diag(v0), dof, band_records, band_dof
    )


def _band_noise(
    bread: NDArray[np.float64],
    rows: NDArray[np.float64],
    resid: NDArray[np.float64],
    s2: NDArray[np.float64],
) -> tuple[NDArray[np.float64], float]:
    """``(records, rho)``: the records' part of the log-rates' covariance for the forecast
    band, ``A (sum_k J_k^T Sigma_k J_k) A`` with each variable's lag-one correlation at the
    maximum of its restricted likelihood (:func:`~ncdynamics.theories.uncertainty.
    ar1_reml_covariance` with ``rho_estimate="maximum"``), and their mean. The residuals' own
    correlation, corrected for its small-sample bias and clipped at 0, reads a correlation
    into the few independent residuals of a forecast origin; the likelihood's maximum is 0 on
    most of them and still near 0.9 under a slow noise (module docstring)."""
    p = bread.shape[0]
    meat = np.zeros((p, p))
    rhos = []
    for k in range(resid.shape[1]):
        rho = ar1_reml_covariance(rows[:, k], resid[:, k], rho_estimate="maximum")[3]
        rho = rho if math.isfinite(rho) else 0.0
        meat += ar1_meat(rows[:, k], resid[:, k], s2[k], rho=rho)
        rhos.append(rho)
    return np.asarray(bread @ meat @ bread, np.float64), float(np.mean(rhos))


def _trapezoid_weights(ts: NDArray[np.float64]) -> NDArray[np.float64]:
    gaps = np.diff(ts)
    w = np.zeros(ts.size)
    w[:-1] += 0.5 * gaps
    w[1:] += 0.5 * gaps
    return w


def _log_intervals(
    names: list[str], logs: NDArray[np.float64], cov: NDArray[np.float64], dof: int
) -> dict[str, tuple[float, float]]:
    """95% intervals of positive quantities from those of their logs (``exp`` of the ends;
    an end beyond the float range is 0 or ``inf``)."""
    out = intervals_from_covariance(names, logs, cov, dof)
    with np.errstate(over="ignore"):
        return {k: (float(np.exp(lo)), float(np.exp(hi))) for k, (lo, hi) in out.items()}


def _within_search(interval: tuple[float, float], low: float, high: float) -> tuple[float, float]:
    """A rate interval with its ends outside the search bounds made 0 (below: the rate
    does nothing over the records) or ``inf`` (above: the data set no upper limit)."""
    lo, hi = interval
    return (0.0 if not lo >= low else lo, math.inf if not hi <= high else hi)


def _final_distance(
    y0: NDArray[np.float64],
    X: float,
    Y: float,
    theta: NDArray[np.float64],
    cov: NDArray[np.float64],
    dof: int,
) -> dict[str, float]:
    """``rho`` and the final distance (10) of [1], with 95% delta-method intervals in log."""

    def log_values(th: NDArray[np.float64]) -> NDArray[np.float64]:
        rho = float(np.exp(th[0] - th[1]))
        final = float(final_distance(y0[0], y0[1], X, Y, rho))
        return np.array([math.log(rho), math.log(final) if final > 0 else -math.inf])

    centre = log_values(theta)
    out: dict[str, float] = {
        "final_pair_distance": float(np.exp(centre[1])),
        "rho": float(np.exp(centre[0])),
    }
    if np.all(np.isfinite(cov)) and np.all(np.isfinite(centre)):
        g = numeric_jacobian(log_values, theta)
        vcov = g @ cov @ g.T
    else:
        vcov = np.full((2, 2), np.inf)
    iv = _log_intervals(["rho", "final_pair_distance"], centre, vcov, dof)
    for name, (lo, hi) in iv.items():
        out[f"{name}_low"], out[f"{name}_high"] = lo, hi
    return out


CONFRONTATION = Confrontation(
    theory="alignment",
    summary="two-point system (7): rates 1/tau_h, 1/tau_y fitted to (a, b, w) of a probe pair",
    needs=_NEEDS,
    observe=_observe,
    fit=_fit,
    assumptions=ASSUMPTIONS,
)
