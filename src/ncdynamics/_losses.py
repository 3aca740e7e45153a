"""The canonical loss names every layer shares (the run records them, the theories read them).

One home for the spellings: :func:`canonical_loss` maps what a user typed or passed
(``"CE"``, ``"cross_entropy"``, ``"MSELoss"``, ``"half_mse"``) to one of :data:`LOSSES`.
:mod:`ncdynamics.theories.regime` builds its loss checks on it and the Recorder records the
canonical name.
"""

from __future__ import annotations

from typing import Any

__all__ = ["LOSSES", "canonical_loss"]

#: Canonical loss names: mean squared error, half of it (the ``1/2 |y - f|^2`` of many
#: papers), and softmax cross-entropy.
LOSSES = ("mse", "half-mse", "cross-entropy")
_SPELLINGS = {
    "mse": "mse",
    "mseloss": "mse",
    "l2": "mse",
    "squared": "mse",
    "squared-error": "mse",
    "mean-squared-error": "mse",
    "half-mse": "half-mse",
    "halfmse": "half-mse",
    "half-squared-error": "half-mse",
    "cross-entropy": "cross-entropy",
    "crossentropy": "cross-entropy",
    "crossentropyloss": "cross-entropy",
    "ce": "cross-entropy",
    "softmax-cross-entropy": "cross-entropy",
    "nll": "cross-entropy",
}


def canonical_loss(name: Any) -> str | None:
    """The canonical name (one of :data:`LOSSES`) of a loss as a user may spell it, or
    ``None`` when it is none of them (a loss the vocabulary does not know).

    >>> canonical_loss("CE"), canonical_loss("MSELoss"), canonical_loss("half_mse")
    ('cross-entropy', 'mse', 'half-mse')
    """
    spelled = str(name).strip().lower().replace("_", "-").replace(" ", "-")
    return _SPELLINGS.get(spelled, _SPELLINGS.get(spelled.replace("-", "")))
