"""The toy theory against a run: fit ``log L = log L0 - r t`` to the recorded loss."""

import numpy as np
from numpy.typing import NDArray

from ncdynamics.theories import Confrontation, Need, Stream, TheoryFit
from ncdynamics.theories.confrontation import Series, r_squared


def _observe(stream: Stream) -> dict[str, Series]:
    return {"loss": stream.scalar("loss")}


def _fit(stream: Stream) -> TheoryFit:
    steps, loss = stream.scalar("loss")
    if steps.size < 3 or np.any(loss <= 0):
        raise ValueError("the toy theory needs at least 3 positive loss records.")
    (slope, intercept), cov = np.polyfit(steps, np.log(loss), 1, cov="unscaled")
    resid = np.log(loss) - (intercept + slope * steps)
    se = np.sqrt(np.diag(cov) * np.sum(resid**2) / max(steps.size - 2, 1))
    half = 1.96 * se  # 95%, normal approximation; loss0 by exp of its log interval

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        return {"loss": np.exp(intercept + slope * np.asarray(at, np.float64))}

    curve = predict(steps)["loss"]
    return TheoryFit(
        theory="toy",
        params={"rate": float(-slope), "loss0": float(np.exp(intercept))},
        goodness={"r2_log_loss": r_squared(np.log(loss), np.log(curve))},
        predictions={},
        fitted={"loss": (steps, curve)},
        predict=predict,
        fit_until=float(steps[-1]),
        intervals={
            "rate": (float(-slope - half[0]), float(-slope + half[0])),
            "loss0": (float(np.exp(intercept - half[1])), float(np.exp(intercept + half[1]))),
        },
        interval_method="least squares in log L, normal approximation",
        n_fitted=2,
    )


CONFRONTATION = Confrontation(
    theory="toy",
    summary="log-linear fit of the recorded loss",
    needs=(Need("scalar", "loss", "run.log"),),
    observe=_observe,
    fit=_fit,
)
