"""Checked claims: the unit every truncation experiment writes into ``summary.json``."""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["Claim", "claim"]


class Claim(TypedDict):
    """One claim of [1] or of the spec, our number for it, and whether it held."""

    claim: str
    ours: Any  # a number, a list or a mapping of numbers: whatever the claim is about
    held: bool


def claim(text: str, ours: Any, held: bool | Any) -> Claim:
    """One checked claim for ``summary.json`` (``held`` may be a NumPy bool)."""
    return {"claim": text, "ours": ours, "held": bool(held)}
