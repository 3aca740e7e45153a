"""The toy theory against a run: fit ``log L = log L0 - r t`` to the recorded loss.

The toy's one parameter-free prediction: the rate is the run's learning rate per step.
"""

import numpy as np
from numpy.typing import NDArray

from ncdynamics.theories import (
    Confrontation,
    Curves,
    Need,
    Param,
    Shown,
    Stream,
    TheoryFit,
    Uncertainty,
)
from ncdynamics.theories.confrontation import Series, Undetermined, r_squared
from ncdynamics.theories.uncertainty import covariance_from_jacobian, intervals_from_covariance


def _observe(stream: Stream) -> dict[str, Series]:
    return {"loss": stream.scalar("loss")}


def _fit(stream: Stream) -> TheoryFit:
    steps, loss = stream.scalar("loss")
    if steps.size < 3 or np.any(loss <= 0):
        raise Undetermined("the toy theory needs at least 3 positive loss records.")
    design = np.stack([np.ones_like(steps), -steps], axis=1)  # log L = log L0 - r t
    coef, *_ = np.linalg.lstsq(design, np.log(loss), rcond=None)
    # serially correlated residuals widen the intervals (an AR(1) sandwich)
    cov, _, dof = covariance_from_jacobian(design, np.log(loss) - design @ coef)
    intervals = intervals_from_covariance(
        ["loss0", "rate"], coef, cov, dof, log_scale=[True, False]
    )

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        return {"loss": np.exp(coef[0] - coef[1] * np.asarray(at, np.float64))}

    curve = predict(steps)["loss"]
    lr = stream.setting("lr")
    return TheoryFit(
        theory="toy",
        params={
            "loss0": Param(float(np.exp(coef[0])), interval=intervals["loss0"]),
            "rate": Param(
                float(coef[1]),
                interval=intervals["rate"],
                unit="1/step",
                sign=1,
                expected=float(lr) if lr is not None else None,
            ),
        },
        curves=Curves(
            fitted={"loss": (steps, curve)},
            predict=predict,
            # judged on the loss itself, where the decay bends: in log it is a straight line,
            # which a random walk with drift extrapolates as well (the verdict would say so)
            scales={"loss": "linear"},
        ),
        uncertainty=Uncertainty(method="least squares in log L, AR(1) sandwich", n_fitted=2),
        shown=Shown(goodness={"r2_log_loss": r_squared(np.log(loss), np.log(curve))}),
    )


CONFRONTATION = Confrontation(
    theory="toy",
    summary="log-linear fit of the recorded loss",
    needs=(Need("scalar", "loss", "run.log"),),
    observe=_observe,
    fit=_fit,
)
