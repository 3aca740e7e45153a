"""The checked claim: the record every experiment writes into its ``summary.json``.

A paper's claim is rarely one inequality. "The trend is present after training and absent at
initialisation" is two checks; "the contexts merge when the weight is low, *and* the collapse
index stays below 0.2" is two more. A claim that checks only one half and reports "held" is
the defect this module exists to prevent, so a claim is made of :class:`Part` s, one per
condition of the paper's statement, and it holds only when every part does.

Fields of the record (all JSON-ready):

``claim``
    The paper's whole statement, every condition included, restated in our words (the
    project copies no sentences from the papers; the restatement keeps every qualifier).
``source``
    Where the paper makes it: figure, equation, section (``"Fig. 14, App. C"``).
``parts``
    One entry per condition: ``{"part", "criterion", "ours", "held"}``; ``criterion`` is the
    test we apply with its threshold (``"Spearman rho < -0.5"``), ``ours`` what we measured.
    A part may also carry ``noise``: the size below which its measurement is floating-point
    rounding rather than a result (a finite-difference error at ``h = 1e-6`` is ~1e-10 on one
    machine and ~1e-9 on another). Tables print such a value as the bound ``< noise``, so
    that they do not change from one machine or BLAS to the next.
``held``
    ``all(part.held)``.
``ours``
    The measured value of a one-part claim, or ``{part: ours}`` for several.

Graded criteria belong in the parts: where a statement is about a proportion ("the classes
separate"), ``ours`` is the fraction of draws that separate and the criterion a threshold on
it, so a run reports how far from the threshold it was instead of all-or-nothing.
:mod:`ncdynamics.experiments.claims` counts each part over seeds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["Part", "claim"]


@dataclass(frozen=True)
class Part:
    """One condition of a paper's claim, the test we apply to it and what we measured."""

    part: str
    criterion: str
    ours: Any
    held: bool
    noise: float | None = None

    def __post_init__(self) -> None:
        for name in ("part", "criterion"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ValueError(f"`{name}` must be a non-empty string; got {value!r}.")
        if self.noise is not None and not (
            isinstance(self.noise, int | float)
            and not isinstance(self.noise, bool)
            and math.isfinite(self.noise)
            and self.noise > 0
        ):
            raise ValueError(
                f"`noise` must be a positive finite number or None; got {self.noise!r}."
            )
        ours = _plain(self.ours, self.part)
        held = bool(self.held)
        if held and not _all_finite(ours):
            raise ValueError(
                f"part {self.part!r} cannot hold on a non-finite measurement; got ours={ours!r}."
            )
        object.__setattr__(self, "ours", ours)
        object.__setattr__(self, "held", held)

    def record(self) -> dict[str, Any]:
        out = {
            "part": self.part,
            "criterion": self.criterion,
            "ours": self.ours,
            "held": self.held,
        }
        if self.noise is not None:
            out["noise"] = float(self.noise)
        return out


def claim(statement: str, source: str, parts: Sequence[Part]) -> dict[str, Any]:
    """The ``summary.json`` record of one claim (module docstring): held only if every part is.

    >>> rec = claim("A rises and B falls", "Fig. 1", [
    ...     Part("A rises", "last > first", 0.3, True),
    ...     Part("B falls", "last < first", 0.1, False)])
    >>> rec["held"], rec["ours"]
    (False, {'A rises': 0.3, 'B falls': 0.1})
    """
    for name, value in (("statement", statement), ("source", source)):
        if not isinstance(value, str) or not value.strip():
            raise ValueError(f"`{name}` must be a non-empty string; got {value!r}.")
    parts = list(parts)
    if not parts or not all(isinstance(p, Part) for p in parts):
        raise ValueError(f"`parts` must be a non-empty sequence of Part; got {parts!r}.")
    names = [p.part for p in parts]
    if len(set(names)) != len(names):
        raise ValueError(f"`parts` must have distinct names; got {names!r}.")
    ours = parts[0].ours if len(parts) == 1 else {p.part: p.ours for p in parts}
    return {
        "claim": statement,
        "source": source,
        "parts": [p.record() for p in parts],
        "held": all(p.held for p in parts),
        "ours": ours,
    }


def _plain(value: Any, part: str) -> Any:
    """``value`` with NumPy scalars and arrays as Python numbers and lists; ``TypeError`` for
    what JSON cannot carry."""
    if hasattr(value, "tolist") and not isinstance(value, str | bytes):
        value = value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v, part) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, part) for v in value]
    if value is None or isinstance(value, str | bool | int | float):
        return value
    raise TypeError(
        f"`ours` of part {part!r} must be JSON-ready (numbers, strings, lists, dicts); "
        f"got {type(value).__name__}."
    )


def _all_finite(value: Any) -> bool:
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, dict):
        return all(_all_finite(v) for v in value.values())
    if isinstance(value, list):
        return all(_all_finite(v) for v in value)
    return True
