"""The Hadamard-reduced cross-entropy ODE, confronted with a run's class-mean logits.

The network's class-mean logit matrix ``Zbar`` (outputs x classes, probe ``class_means``) is
read as the logit matrix of the theory with ``n = 1`` sample per class. Cross-entropy does not
see a logit offset shared by all outputs, and the reduced dynamics live off the all-ones
directions, so ``Zbar`` is centred on both sides before its top ``K - 1`` singular values are
taken. The reduced ODE (9) of [1] is fitted to their logarithms with
:func:`~ncdynamics.theories.hadamard.estimate.fit_reduced` (initial reduced values and the
time scale ``c`` per recorded step, started from the best of a few scales and the predicted
one). ``K`` must be a power of two (else :class:`NotApplicable`).

**Regime** (:data:`ASSUMPTIONS`, each checked against the run's config and records, unchecked
where the run does not record the setting): cross-entropy loss; a constant learning rate over
the records; full-batch gradient descent on the unregularised loss (no momentum, no weight
decay); and a logit matrix near the subspace where the reduction is exact ([1], Thm 1/2): the
off-diagonal part of the Hadamard core of ``Zbar`` (:func:`offdiagonal_fraction`) at most
:data:`OFFDIAGONAL_MAX` at every record. The theory is an initial-value problem on that
subspace (the flow stays in it, Thm 2), so a run from a random initialisation, whose early
logits are far off it, is in the regime only in a later window.

**Predicted time scale.** Gradient descent with step ``eta`` on the *summed* loss (1) is the
flow (2) at time ``t = eta k``, and the reduced time is ``tau = 2 sqrt(n) t`` ([1] eqs.
(9)-(10); docs/theories/hadamard.md, Units and erratum 5), so ``c = 2 sqrt(n) eta`` per
iteration. The theory's own experiments (``hadamard.*``) run exactly that, one record step
per iteration. A run of
:func:`ncdynamics.training.train` records per epoch and averages the loss over batches of
``B`` samples (with momentum ``mu``): one SGD step moves like ``eta / N`` on the summed loss of
all ``N`` samples, an epoch has ``N / B`` steps, and momentum multiplies the step by
``1 / (1 - mu)``, so ``c = 2 sqrt(n) eta / (B (1 - mu))`` per epoch (``n`` the training
samples per class, read from ``samples_per_class`` or ``train_per_class``). Where the run does
not state what that needs, no value is predicted.

Observables: the geometric mean of the singular values (``logit_scale``, which grows like
``log t`` once the loss is small) and their ratio max/min (``logit_anisotropy``, 1 at a
simplex), both on a log scale.

Intervals: Gauss-Newton (least-squares Jacobian of the log residuals in ``log a(0)`` and
``log c``, Student t), exponentiated, so they stay positive. The residuals of successive records
are correlated, so the intervals are optimistic; the Jacobian is cheap, which matters since the
engine refits sliding windows.

Forecast band (:attr:`TheoryFit.band`, see :mod:`~ncdynamics.theories.forecast_bands`): a
later record's error is its own noise plus the prediction's, so the band adds the record
noise's *marginal* variance to the parameter covariance carried to the horizon (delta method),
both from an AR(1) noise model fitted by REML
(:func:`~ncdynamics.theories.uncertainty.ar1_reml_covariance`), which accounts for the noise
the fitted curve absorbed; a summary's record noise is at least what the ``K - 1`` residual
series say for it (``s2 / (K - 1)`` for the mean of the logs, ``2 s2`` for a log ratio), and
the quantile is Student's t on the effective records. The residuals' root mean square with the
normal quantile, as before, held 0.92 (independent) and 0.74 (AR(1), rho = 0.9) of later
records on the calibration kit's streams; this band's coverage and width are in the generated
calibration table of docs/confront.md.

The noise model's AR(1) coefficient is the restricted likelihood's **maximum**
(``ar1_reml_covariance(..., rho_estimate="maximum")``), not the posterior median that the
parameter intervals of lesde use. Measured first (the kit's true streams, seeds 0-7 of each
noise, 40 forecast origins each, about 9 records of 3 singular values per origin): the records
cannot rule out a slow noise, so the posterior median is 0.21 (quartiles 0.13-0.37) on
independent noise, and at that coefficient REML's noise variance is 1.36 times the true one
(the residuals' mean square over ``n - p``: 1.00) and the t quantile is taken on about 14
degrees of freedom instead of 23; on AR(1) noise (rho = 0.9) it gives a median of 0.84 and
0.78 of the true variance, where the residuals' mean square gives 0.24. Estimating the marginal
variance from the residuals' expected share, ``|r|^2 / (n - tr(H R))`` at the same
coefficient, gave 1.23 and 0.78. The band's coverage indep./AR(1) and records' error over the
band's standard error indep./AR(1), on the same forecast origins (seeds 0-3 | seeds 4-11):

* posterior median (the band before the REML maximum): 0.99/0.96, 0.66/1.02 | 0.99/0.98,
  0.64/0.76 -- wider than it needs under independent noise (floor 0.7);
* the noise model chosen by the data (issue 28's option (a)): AR(1) only where the likelihood
  ratio against ``rho = 0`` exceeds chi2(1)'s 95% point (3.84; 2.71 and AICc on the REML
  likelihoods chose the same at every origin), else independent noise: 0.97/0.92, 0.91/1.47 |
  0.99/0.93, 0.84/1.17 -- honest under independent noise, but under AR(1) the test keeps
  independence at the origins whose few records hide the correlation, and those bands are
  too narrow (error/SE above 1.4);
* the same selection, at the REML maximum where AR(1) is chosen: 0.97/0.93, 0.88/1.39 |
  0.99/0.93, 0.84/1.16;
* independent noise always: 0.96/0.84, 1.01/2.09 (seeds 0-3);
* **the REML maximum** (chosen): 0.98/0.95, 0.78/1.11 | 0.99/0.97, 0.79/0.88. On nine records
  of three series the maximum is 0 at about half the draws of independent noise, with an
  unbiased variance, and still near 0.84 under rho = 0.9 (tests/theories/
  test_uncertainty_reml.py): it neither reads a correlation into independent residuals, as
  the median does, nor drops a real one on a test's verdict, as the selection does.

Pooling the noise model across forecast origins (option (b)) cannot help without leaking: a
band may use only the records up to its cut, and the origins of one stream are nested, so the
earliest origin has nothing to pool with and a later one only records it already has; the
model is already pooled across the ``K - 1`` singular values (one coefficient, one variance).
The 40-seed numbers are in the generated calibration table of docs/confront.md.
"""

from __future__ import annotations

import functools
import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..confrontation import (
    Assumption,
    Confrontation,
    Curves,
    Need,
    NotApplicable,
    Param,
    Series,
    Shown,
    Stream,
    TheoryFit,
    Uncertainty,
    Undetermined,
)
from ..forecast_bands import student_level
from ..integrate import ConvergenceWarning
from ..regime import constant_learning_rate_assumption, loss_is, plain_gradient_descent
from ..uncertainty import (
    ar1_reml_covariance,
    covariance_from_jacobian,
    delta_band,
    intervals_from_covariance,
)
from .estimate import ReducedFit, fit_reduced
from .metrics import reduced_basis

__all__ = [
    "ASSUMPTIONS",
    "CONFRONTATION",
    "OFFDIAGONAL_MAX",
    "centred_singular_values",
    "expected_time_scale",
    "offdiagonal_fraction",
]

_NEEDS = (Need("array", "class_means_logits", "class_means"),)
#: Starting values of the time scale per recorded step tried by the fit (``c = 2 eta``).
_START_SCALES = (1e-3, 1e-2, 1e-1, 1.0)
#: Largest off-diagonal fraction of the Hadamard core at any record inside the regime. GD on
#: the UFM from a small random init (K = 4) starts near 0.7-0.85 and falls to 0.16 when the
#: loss drops, 0.02 later; from the first record below this, the ODE fits with R^2 > 0.99 and
#: c within its interval of 2 eta (the calibration tests).
OFFDIAGONAL_MAX = 0.25
_OBSERVABLES = ("logit_scale", "logit_anisotropy")


def centred_singular_values(means: Any) -> NDArray[np.float64]:
    """Top ``K - 1`` singular values of doubly centred class-mean logits, descending.

    Parameters
    ----------
    means : ndarray of shape (T, K, K)
        ``means[t, k]``: mean logits of class ``k`` at record ``t``.
    """
    x = np.asarray(means, dtype=np.float64)
    k = x.shape[1]
    sigma = np.linalg.svd(_centred(x), compute_uv=False)
    return np.asarray(sigma[:, : k - 1], dtype=np.float64)


def _centred(means: NDArray[np.float64]) -> NDArray[np.float64]:
    """``P Zbar P`` with ``Zbar`` (outputs x classes) and ``P = I - 1 1^T / K``."""
    k = means.shape[-1]
    p = np.eye(k) - 1.0 / k
    return p @ np.swapaxes(means, -1, -2) @ p


def offdiagonal_fraction(means: Any) -> float:
    """``|C - diag(C)|_F / |C|_F`` of the Hadamard core ``C = U~^T Zbar V~`` of one record.

    Zero when the Hadamard basis diagonalises the centred class-mean logits (the subspace of
    [1], Thm 1, where the reduced ODE is exact); for ``n = 1`` the centred matrix lies in the
    span of the basis on both sides, so this is the part of it that the theory cannot follow.
    """
    z = _centred(np.asarray(means, dtype=np.float64))
    u, v = reduced_basis(z.shape[0], 1)
    core = u.T @ z @ v
    off = core - np.diag(np.diag(core))
    total = float(np.linalg.norm(core))
    return float(np.linalg.norm(off) / total) if total > 0 else float("nan")


def _summaries(sigma: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
    """The observables: the geometric mean of the singular values (0 where one is zero) and
    the largest over the smallest (undefined, NaN, where the smallest is zero; the fit says
    why it stops there, :func:`_singular_values`)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        scale = np.exp(np.mean(np.log(sigma), axis=-1))
        smallest = sigma[..., -1]
        anisotropy = np.where(smallest > 0, sigma[..., 0] / smallest, np.nan)
    return {"logit_scale": scale, "logit_anisotropy": anisotropy}


# ---------------------------------------------------------------------------- settings
def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value) if math.isfinite(float(value)) else None


def _recorded_lr(stream: Stream) -> NDArray[np.float64] | None:
    """The stream's recorded ``lr`` metric at steps in its window, or ``None``."""
    try:
        _, values = stream.scalar("lr")
    except KeyError:
        return None
    return values if values.size else None


def _learning_rate(stream: Stream) -> float | None:
    """The run's step size: ``lr`` or ``learning_rate`` setting, else a constant recorded
    ``lr``; ``None`` when neither is recorded or the recorded one varies."""
    for key in ("lr", "learning_rate"):
        value = _number(stream.setting(key))
        if value is not None:
            return value
    lr = _recorded_lr(stream)
    if lr is not None and np.ptp(lr) <= 1e-12 * np.max(np.abs(lr)):
        return float(lr[0])
    return None


def _own_experiment(stream: Stream) -> bool:
    """Whether the run is one of this theory's experiments (GD on the summed loss (1))."""
    name = stream.config.get("experiment")
    return isinstance(name, str) and name.startswith("hadamard.")


def _time_unit(stream: Stream) -> str:
    if _own_experiment(stream):
        return "iteration"
    return "epoch" if stream.setting("epochs") is not None else "step"


def expected_time_scale(stream: Stream) -> tuple[float | None, str]:
    """``(c, how)``: the time scale per recorded step the theory predicts from the run's
    settings (module docstring), or ``None`` with the reason it cannot be predicted."""
    eta = _learning_rate(stream)
    if eta is None:
        return None, "the run records no constant learning rate"
    if _own_experiment(stream):
        n_own = _number(stream.setting("n")) or 1.0
        return 2.0 * math.sqrt(n_own) * eta, f"2 sqrt(n) eta per GD iteration (n = {n_own:g})"
    if stream.setting("epochs") is None:
        return None, "the run does not say how many GD iterations a recorded step is"
    batch = _number(stream.setting("batch_size"))
    mu = _number(stream.setting("momentum")) or 0.0
    n = _number(stream.setting("samples_per_class")) or _number(stream.setting("train_per_class"))
    if batch is None or n is None or not mu < 1:
        return None, "the run does not record its batch size and training samples per class"
    return (
        2.0 * math.sqrt(n) * eta / (batch * (1.0 - mu)),
        f"2 sqrt(n) eta / (B (1 - momentum)) per epoch (n = {n:g}, B = {batch:g})",
    )


# ---------------------------------------------------------------------------- assumptions
_GD_WHY = "the reduced ODE (9) is gradient descent on the unregularised loss (1), without momentum"
_PLAIN_GD = plain_gradient_descent(_GD_WHY)


def _check_optimiser(stream: Stream) -> str | None:
    why = _PLAIN_GD.check(stream)
    if why is not None:
        return why
    batch = _number(stream.setting("batch_size"))
    n = _number(stream.setting("samples_per_class")) or _number(stream.setting("train_per_class"))
    if batch is not None and n is not None:
        steps, means = stream.array("class_means_logits")
        k = means.shape[1] if means.ndim == 3 else 0
        if k and batch < n * k:
            return f"batch size {batch:g} < {n * k:g} samples: SGD, the theory is full-batch GD"
    return None


def _check_classes(stream: Stream) -> str | None:
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or steps.size == 0:
        return None  # the fit says what is wrong with the records
    k = means.shape[1]
    if k & (k - 1):
        return f"the Hadamard theory needs K a power of two; the run has K = {k}"
    return None


def _check_subspace(stream: Stream) -> str | None:
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or steps.size == 0 or means.shape[1] & (means.shape[1] - 1):
        return None  # the fit says what is wrong with the records
    off = np.array([offdiagonal_fraction(m) for m in means])
    worst = int(np.nanargmax(off)) if np.any(np.isfinite(off)) else 0
    if off[worst] > OFFDIAGONAL_MAX:
        return (
            f"off-diagonal fraction of the Hadamard core {off[worst]:.3g} > {OFFDIAGONAL_MAX} "
            f"at step {steps[worst]:g}: the logits are off the subspace where the ODE (9) is "
            "exact (a later window may be inside)"
        )
    return None


#: The regime of the reduced ODE (module docstring).
ASSUMPTIONS = (
    Assumption("classes", "K a power of two (the Hadamard basis, Sec. 3)", _check_classes),
    loss_is(
        ("cross-entropy",),
        "cross-entropy loss (1)",
        "the reduced ODE (9) is derived for cross-entropy",
    ),
    constant_learning_rate_assumption(
        "a constant learning rate over the records",
        "the flow's time scale c = 2 eta assumes a constant rate",
    ),
    Assumption(
        "optimizer",
        "full-batch gradient descent on the unregularised loss: no momentum, no weight decay",
        _check_optimiser,
        (*_PLAIN_GD.settings, "batch_size"),
    ),
    Assumption(
        "Hadamard subspace",
        f"centred class-mean logits near the Hadamard-diagonal subspace (Thm 1/2): "
        f"off-diagonal fraction <= {OFFDIAGONAL_MAX} at every record",
        _check_subspace,
    ),
)


# ---------------------------------------------------------------------------- observe and fit
def _observe(stream: Stream) -> dict[str, Series]:
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or means.shape[1] != means.shape[2] or steps.size == 0:
        return {}
    return {k: (steps, v) for k, v in _summaries(centred_singular_values(means)).items()}


def _singular_values(
    stream: Stream,
) -> tuple[NDArray[np.float64], NDArray[np.float64], int, NDArray[np.float64]]:
    """The records' steps, class-mean logits, K and the top K - 1 singular values of the
    doubly centred means (raising where the theory or the records cannot be fitted)."""
    steps, means = stream.array("class_means_logits")
    if means.ndim != 3 or means.shape[1] != means.shape[2]:
        raise ValueError(f"`class_means_logits` must be (T, K, K); got {means.shape}.")
    k = means.shape[1]
    if k & (k - 1):
        raise NotApplicable(f"the Hadamard theory needs K a power of two; the run has K = {k}.")
    if steps.size < 3:
        raise Undetermined(f"the fit needs at least 3 records; the stream has {steps.size}.")
    sigma = centred_singular_values(means)
    if np.any(sigma <= 0):
        raise Undetermined("a centred class-mean logit singular value is zero; log undefined.")
    return steps, means, int(k), sigma


def _band(
    best: Any,
    series: int,
    theta: NDArray[np.float64],
    predict_with: Callable[[NDArray[np.float64], NDArray[np.float64]], dict[str, Any]],
    scatter: dict[str, float],
    k: int,
) -> Callable[[NDArray[np.float64]], dict[str, tuple[Any, Any]]]:
    """``band(steps) -> {observable: (low, high)}``: the 95% band for later records. It holds
    the record noise's marginal variance, which the residuals understate under correlated
    noise, estimated by REML (``ar1_reml_covariance``), with the parameter covariance at that
    noise model and a t quantile (module docstring). The noise model is estimated on the
    first call: most fits (held-out origins, windows) are never asked for a band."""

    @functools.cache
    def noise() -> tuple[NDArray[np.float64], float, dict[str, float]]:
        residuals = best.extra["residuals"]
        band_cov, s2, band_dof, _ = ar1_reml_covariance(
            best.extra["jacobian"],
            residuals,
            series=series,
            layout="interleaved",
            rho_estimate="maximum",
        )
        raise_to = s2 / float(np.mean(residuals**2)) if np.any(residuals) else 1.0
        # each summary's noise from all K - 1 residual series (its own few residuals, fitted
        # by the same parameters, say less): the mean of K - 1 logs, and the difference of two
        floor = {"logit_scale": s2 / (k - 1), "logit_anisotropy": 2 * s2}
        wide = {name: math.sqrt(max(raise_to * v**2, floor[name])) for name, v in scatter.items()}
        return band_cov, band_dof, wide

    def band(at: NDArray[np.float64]) -> dict[str, tuple[Any, Any]]:
        band_cov, band_dof, wide = noise()
        out = delta_band(
            predict_with,
            theta,
            band_cov,
            at,
            scatter=wide,
            log_observables=_OBSERVABLES,
            level=student_level(band_dof),
        )
        return dict(out)

    return band


def _fit(stream: Stream) -> TheoryFit:
    steps, means, k, sigma = _singular_values(stream)
    c_expected, how = expected_time_scale(stream)
    starts = _START_SCALES + ((c_expected,) if c_expected else ())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        best = fit_reduced(steps, sigma, learning_rate=None, start_scales=starts)
    reduced: ReducedFit = best.params
    pred_sigma = reduced.predict(steps)
    names = [*(f"a0_{i}" for i in range(k - 1)), "time_scale"]
    theta = np.log(np.append(reduced.a0, reduced.time_scale))
    series, intervals = _intervals(best, steps.size, names, theta)
    fitted = _summaries(pred_sigma)
    observed = _summaries(sigma)
    scatter = {
        name: float(np.sqrt(np.mean((np.log(observed[name]) - np.log(fitted[name])) ** 2)))
        for name in _OBSERVABLES
    }
    step0 = reduced.step0

    def predict_with(th: NDArray[np.float64], at: NDArray[np.float64]) -> dict[str, Any]:
        model = ReducedFit(np.exp(th[:-1]), float(np.exp(th[-1])), k, 1, step0)
        return _summaries(model.predict(np.asarray(at, dtype=np.float64)))

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        return _summaries(reduced.predict(np.asarray(at, dtype=np.float64)))

    unit = f"1/{_time_unit(stream)}"
    return TheoryFit(
        theory="hadamard",
        params=_params(best, intervals, unit, c_expected),
        curves=Curves(
            fitted={n: (steps, v) for n, v in fitted.items()},
            predict=predict,
            band=_band(best, series, theta, predict_with, scatter, k),
            scales=dict.fromkeys(_OBSERVABLES, "log"),
        ),
        uncertainty=Uncertainty(
            method=(
                "least-squares Jacobian of the log singular-value residuals in log parameters, "
                "AR(1) sandwich per singular value, t on the effective record count, exponentiated"
            ),
            n_fitted=len(names),
        ),
        shown=_shown(best, (sigma, pred_sigma, means[-1]), unit, (c_expected, how)),
    )


def _intervals(
    best: Any, n_records: int, names: list[str], theta: NDArray[np.float64]
) -> tuple[int, dict[str, Any]]:
    """``(series, intervals)``: the singular values fitted side by side (``series`` per record)
    and each log parameter's 95% interval from the AR(1) sandwich, exponentiated."""
    residuals = best.extra["residuals"]
    series = residuals.size // n_records if residuals.size % n_records == 0 else 1
    cov, _, dof = covariance_from_jacobian(
        best.extra["jacobian"], residuals, series=series, layout="interleaved"
    )
    with np.errstate(over="ignore"):  # an unidentified parameter: exp of a huge log bound
        intervals = intervals_from_covariance(names, theta, cov, dof, log_scale=[True] * len(names))
    return series, intervals


def _params(
    best: Any, intervals: dict[str, Any], unit: str, c_expected: float | None
) -> dict[str, Param]:
    """The time scale, with its bounds, sign and the value the settings predict, and the
    initial reduced logits ``a0_i``."""
    reduced: ReducedFit = best.params
    values = {
        "time_scale": reduced.time_scale,
        **{f"a0_{i}": float(v) for i, v in enumerate(reduced.a0)},
    }
    return {
        "time_scale": Param(
            values["time_scale"],
            interval=intervals["time_scale"],
            unit=unit,
            bound=best.extra["bounds"],
            sign=1,
            expected=c_expected,
            # gradient descent follows the flow (2) to first order in its step, which is
            # c itself in reduced time: the predicted c is good to about that relative error
            expected_rtol=float(c_expected) if c_expected is not None else 0.0,
        ),
        **{
            name: Param(v, interval=intervals[name], unit="reduced logit (sigma / K)")
            for name, v in values.items()
            if name != "time_scale"
        },
    }


def _shown(
    best: Any,
    arrays: tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]],
    unit: str,
    expected: tuple[float | None, str],
) -> Shown:
    """R² in log over the singular values, the last record's off-diagonal fraction, the fitted
    time scale over the predicted one, and the notes. ``arrays`` is ``(observed singular
    values, fitted ones, last class means)``, ``expected`` ``(c_expected, how)``."""
    sigma, pred_sigma, last_means = arrays
    c_expected, how = expected
    log_obs, log_fit = np.log(sigma), np.log(pred_sigma)
    ss_tot = float(np.sum((log_obs - log_obs.mean(axis=0)) ** 2))
    r2 = 1.0 - float(np.sum((log_obs - log_fit) ** 2)) / ss_tot if ss_tot > 0 else float("nan")
    notes = [] if best.success else [f"least squares: {best.message}"]
    goodness = {
        "r2_log_singular_values": r2,
        "rms_log_error": float(np.sqrt(best.loss)),
        "offdiagonal_fraction_last": offdiagonal_fraction(last_means),
    }
    if c_expected is not None:
        goodness["time_scale_over_expected"] = best.params.time_scale / c_expected
        notes.append(f"expected time scale {c_expected:.4g} {unit}: {how}")
    else:
        notes.append(f"no expected time scale: {how}")
    return Shown(
        goodness=goodness,
        predictions={"singular_values_at_end": [float(v) for v in pred_sigma[-1]]},
        notes=tuple(notes),
    )


CONFRONTATION = Confrontation(
    theory="hadamard",
    summary="reduced cross-entropy ODE (9) fitted to centred class-mean logit singular values",
    needs=_NEEDS,
    observe=_observe,
    fit=_fit,
    assumptions=ASSUMPTIONS,
)
