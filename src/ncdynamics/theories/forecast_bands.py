"""What a forecast band must hold, and the quantile it uses.

A 95% band for records *after* a fit is the band of a new record: its error is the record's
own noise plus the error of the prediction. The record's noise has the *marginal* variance
of the noise process, which the residuals of a least-squares fit understate: the fitted
curve absorbs the part of the noise its ``p`` parameters can follow, ``E |r|^2 = sigma^2 (n -
tr(H R))`` for ``n`` records with noise correlation ``R`` and hat matrix ``H = J (J^T
J)^+ J^T``. Under independent noise ``tr(H R) = p``, the familiar ``n - p``; under AR(1)
noise along the records (``R_ij = rho^|i - j|``) a smooth curve follows the slow part of the
noise too, ``tr(H R)`` grows towards ``p (1 + rho) / (1 - rho)``, and with ``rho = 0.9`` and a
dozen records the residuals hold half of the noise variance or less: a band made of the
residuals' root mean square then covers far fewer than 95% of later records (hadamard 0.74,
ntk_collapse 0.45 before issue 28).

So each theory's band estimates the noise model with what the fit removed accounted for
(REML of an AR(1) noise, :func:`~ncdynamics.theories.uncertainty.ar1_reml_covariance`, whose
coefficient hadamard and alignment take at the likelihood's maximum, since on a forecast
origin's few records the posterior median reads a correlation into independent noise, or a
likelihood that models the residuals' covariance, as ntk_collapse's), adds the marginal
variance of a new record to the parameter covariance carried to the horizon by the delta
method (:func:`~ncdynamics.theories.uncertainty.delta_band`), and, since both are estimated
from the same few records, takes Student's t quantile on the effective degrees of freedom
rather than the normal one: :func:`student_level` gives the level whose normal quantile is
that t quantile, for ``delta_band``'s ``level``.
"""

from __future__ import annotations

import numpy as np

from .uncertainty import LEVEL

__all__ = ["student_level"]


def student_level(dof: float, level: float = LEVEL) -> float:
    """The level whose normal quantile is Student's t quantile of ``level`` on ``dof`` degrees
    of freedom (``level`` itself for infinite ``dof``): a band of ``delta_band(...,
    level=student_level(dof))`` is a t band. ``dof`` below 1 counts as 1, and the level is at
    most ``1 - 1e-12`` (a normal quantile of 7.1), so that the band stays finite.

    Examples
    --------
    >>> round(student_level(4), 4)  # t_{0.975, 4} = 2.776 is the normal quantile of 0.9945
    0.9945
    """
    # scipy.special, not scipy.stats (the same functions; stats costs ~0.7 s to import)
    from scipy.special import ndtr, stdtrit

    if not 0 < level < 1:
        raise ValueError(f"`level` must be in (0, 1); got {level!r}.")
    if not np.isfinite(dof):
        return float(level)
    t = float(stdtrit(max(float(dof), 1.0), 0.5 + level / 2))
    return float(min(1.0 - 2.0 * ndtr(-t), 1.0 - 1e-12))
