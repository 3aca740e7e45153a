"""The two-point theory of [1] fitted to one recorded training history, with derived numbers.

Shared by every experiment that fits eq. (7) to a network: the rates by objective (49),
the output-mean rate of the loss (9), the goodness of fit and the final distance (10).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ...confrontation import r_squared
from ..closed_form import final_distance
from ..estimate import fit_output_rate, fit_rates
from ..training import PairHistory

__all__ = ["HistoryFit", "fit_history", "plateau_epochs"]


@dataclass(frozen=True)
class HistoryFit:
    """Rates fitted to one history and the numbers derived from them.

    Attributes
    ----------
    inv_tau_h, inv_tau_y : float
        The rates of eq. (7) fitted by objective (49).
    fit_loss : float
        The value of (49) at the fit.
    theory : ndarray of shape (n_records, 3)
        The fitted theory's ``(a, b, w)`` on the recorded epochs.
    r2 : (float, float, float)
        Coefficient of determination of ``a``, ``b`` and ``w``.
    inv_tau_ybar : float
        The output-mean rate of the loss (9).
    loss_theory : ndarray of shape (n_records,)
        The fitted loss curve (9).
    predicted_final_a : float
        Eq. (10) from the measured start with the fitted ``rho``.
    """

    inv_tau_h: float
    inv_tau_y: float
    fit_loss: float
    theory: NDArray[np.float64]
    r2: tuple[float, float, float]
    inv_tau_ybar: float
    loss_theory: NDArray[np.float64]
    predicted_final_a: float

    @property
    def rho(self) -> float:
        """``tau_y / tau_h = inv_tau_h / inv_tau_y``."""
        return self.inv_tau_h / self.inv_tau_y


def fit_history(
    h: PairHistory,
    *,
    y1: ArrayLike,
    y2: ArrayLike,
    variant: str = "eq7",
    a: NDArray[np.float64] | None = None,
) -> HistoryFit:
    """Fit the rates (49) and the output-mean rate to a two-point history.

    Parameters
    ----------
    h : PairHistory
    y1, y2 : array of shape (d_out,) or float
        Targets of the tracked pair.
    variant : str, default="eq7"
        Eq. (7) or one of the alternatives of eq. (51).
    a : ndarray of shape (n_records,), optional
        ``|dh|^2`` to use instead of ``h.a`` (another hidden layer).
    """
    state = h.state if a is None else np.stack([a, h.b, h.w], axis=1)
    fit = fit_rates(h.epochs, state, X=h.X, Y=h.Y, variant=variant)
    th = fit.extra["trajectory"]
    r2 = (
        r_squared(state[:, 0], th[:, 0]),
        r_squared(state[:, 1], th[:, 1]),
        r_squared(state[:, 2], th[:, 2]),
    )
    lf = fit_output_rate(
        h.epochs,
        h.pair_loss,
        th[:, 1],
        th[:, 2],
        ybar0=h.ybar[0],
        y1=np.atleast_1d(y1),
        y2=np.atleast_1d(y2),
    )
    p = fit.params
    pred = float(final_distance(state[0, 0], state[0, 1], h.X, h.Y, p.rho))
    return HistoryFit(
        p.inv_tau_h,
        p.inv_tau_y,
        fit.loss,
        th,
        r2,
        float(lf.params),
        lf.extra["loss_curve"],
        pred,
    )


def plateau_epochs(loss: NDArray[np.float64], plateau: float) -> int:
    """First epoch at which the eq. (1) loss falls below half the plateau value ``Y/8``;
    ``len(loss)`` if it never does."""
    below = np.flatnonzero(loss < 0.5 * plateau)
    return int(below[0]) if below.size else int(loss.size)
