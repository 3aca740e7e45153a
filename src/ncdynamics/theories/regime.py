"""The regime vocabulary every theory shares: loss names, optimiser settings, schedules.

A theory states the regime it assumes as :class:`~ncdynamics.theories.confrontation.
Assumption` s; the facts those are about (which loss, which optimiser, whether the rate is
constant) are read here, once, so that every theory reads the same settings under the same
names and accepts the same spellings:

- **loss**: :func:`canonical_loss` maps what a user typed (``"CE"``, ``"cross_entropy"``,
  ``"MSELoss"``, ``"half_mse"``) to one of :data:`LOSSES`; runs record the canonical name.
  :func:`loss_is` builds the check.
- **optimiser**: :func:`plain_gradient_descent` builds the check that the run used gradient
  descent without momentum, Nesterov, an adaptive method (Adam, RMSprop, ...) or weight decay
  (each theory says which of these it needs and why), read from the settings ``optimizer``,
  ``momentum``, ``nesterov``, ``weight_decay``.
- **learning rate**: :func:`constant_learning_rate`, from the recorded ``lr`` metric first and
  the schedule settings (``milestones``/``lr_drops`` with ``gamma``) second.

Each check returns ``None`` both when the stream is inside the regime and when the run does not
record the setting; every assumption built here names the settings it reads
(``Assumption.settings``), so the engine can tell the two apart and say ``not recorded``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from .._losses import LOSSES, canonical_loss
from .confrontation import Assumption, Stream

__all__ = [
    "ADAPTIVE",
    "LOSSES",
    "canonical_loss",
    "LR_SETTINGS",
    "PLAIN_GD_SETTINGS",
    "constant_learning_rate",
    "constant_learning_rate_assumption",
    "learning_rate_change",
    "loss_is",
    "plain_gradient_descent",
    "recorded",
]

#: The settings of plain gradient descent, in the vocabulary the checks read: what a run (or
#: a calibration stream) states to be inside every theory's optimiser assumption.
PLAIN_GD_SETTINGS: dict[str, Any] = {
    "optimizer": "sgd",
    "momentum": 0.0,
    "nesterov": False,
    "weight_decay": 0.0,
}
#: Optimisers that rescale the gradient per coordinate: never plain gradient descent.
ADAPTIVE = ("adam", "adamw", "adagrad", "adadelta", "adamax", "nadam", "radam", "rmsprop")
_GRADIENT_DESCENT = ("sgd", "gd", "gradient-descent")


def _spelling(value: Any) -> str:
    return str(value).strip().lower().replace("_", "-").replace(" ", "-")


def recorded(stream: Stream, *keys: str) -> bool:
    """Whether the run records any of the settings ``keys`` for ``stream``."""
    return any(stream.setting(k) is not None for k in keys)


def loss_is(allowed: tuple[str, ...], statement: str, why: str) -> Assumption:
    """An assumption that the stream's ``loss`` setting is one of ``allowed`` (canonical
    names); the reason it fails quotes the recorded name and ``why``."""
    unknown = [a for a in allowed if a not in LOSSES]
    if unknown:
        raise ValueError(f"`allowed` must hold names from {LOSSES}; got {unknown}.")

    def check(stream: Stream) -> str | None:
        loss = stream.setting("loss")
        if loss is None or canonical_loss(loss) in allowed:
            return None
        return f"loss {loss!r}; {why}"

    return Assumption("loss", statement, check, settings=("loss",))


def _number(value: Any) -> float | None:
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return out if math.isfinite(out) else None


def plain_gradient_descent(
    why: str,
    *,
    momentum: bool = True,
    weight_decay: bool = True,
    statement: str = "plain gradient descent: no momentum, no Nesterov, no Adam",
) -> Assumption:
    """An assumption that the stream was trained by plain gradient descent: not an adaptive
    optimiser (:data:`ADAPTIVE`), and, unless switched off, no momentum or Nesterov
    (``momentum``) and no weight decay (``weight_decay``). ``why`` is the theory's reason
    (with its equation), added to every failure."""

    def check(stream: Stream) -> str | None:
        name = stream.setting("optimizer")
        if name is not None and _spelling(name) in ADAPTIVE:
            return f"optimizer {name!r}; {why}"
        if name is not None and _spelling(name) not in _GRADIENT_DESCENT:
            return f"optimizer {name!r} is not gradient descent; {why}"
        if momentum:
            mu = _number(stream.setting("momentum"))
            if mu:
                return f"momentum {mu:g}; {why}"
            if stream.setting("nesterov") is True:
                return f"Nesterov momentum; {why}"
        decay = _number(stream.setting("weight_decay"))
        if weight_decay and decay:
            return f"weight decay {decay:g}; {why}"
        return None

    keys = ("optimizer", "momentum", "nesterov") + (("weight_decay",) if weight_decay else ())
    return Assumption("optimizer", statement, check, settings=keys)


def learning_rate_change(stream: Stream) -> str | None:
    """Where ``stream``'s learning rate is not constant, in a few words, or ``None``.

    The recorded ``lr`` metric decides when the stream has one (``"recorded lr changes from
    0.05 to 0.005 at step 100"``; within the stream's window only); else the settings
    ``milestones`` / ``lr_drops`` with a ``gamma`` other than 1 (``"configured
    learning-rate drops at [100, 150] (factor 0.1)"``). ``None`` when the rate is constant or
    the run records neither.
    """
    try:
        steps, lr = stream.scalar("lr")
    except KeyError:
        steps, lr = np.empty(0), np.empty(0)
    if lr.size:
        changed = np.flatnonzero(np.abs(lr - lr[0]) > 1e-9 * abs(lr[0]))
        if changed.size:
            k = int(changed[0])
            return f"recorded lr changes from {lr[0]:.4g} to {lr[k]:.4g} at step {steps[k]:.0f}"
        return None
    drops = stream.setting("milestones") or stream.setting("lr_drops")
    gamma = stream.setting("gamma", 0.1)
    if drops and gamma not in (None, 1, 1.0):
        return f"configured learning-rate drops at {list(drops)} (factor {gamma})"
    return None


def constant_learning_rate(why: str) -> Callable[[Stream], str | None]:
    """An :class:`~ncdynamics.theories.confrontation.Assumption` check: ``None`` while the
    stream's learning rate is constant, else where it changes followed by ``why`` (the
    theory's reason for needing a constant rate, with its equation)."""

    def check(stream: Stream) -> str | None:
        change = learning_rate_change(stream)
        return None if change is None else f"{change}; {why}"

    return check


#: Settings a learning-rate check reads (beside the recorded ``lr`` metric).
LR_SETTINGS = ("lr", "milestones", "lr_drops", "scheduler")


def constant_learning_rate_assumption(statement: str, why: str) -> Assumption:
    """:func:`constant_learning_rate` as an assumption named ``"learning rate"``."""
    return Assumption("learning rate", statement, constant_learning_rate(why), LR_SETTINGS)
