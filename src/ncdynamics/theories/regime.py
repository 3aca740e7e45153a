"""Regime checks that several theories share: is the learning rate constant over a stream?

Each theory that assumes a constant step size (the alignment rates of eq. (6), the LE-SDE
rates per iteration, the Hadamard time scale ``c = 2 eta``) states its own reason; this
module finds the fact the reason is about, from the run's records first and its settings
second, so every theory reads a learning-rate schedule the same way.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .confrontation import Stream

__all__ = ["constant_learning_rate", "learning_rate_change"]


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
