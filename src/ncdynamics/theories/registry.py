"""The registry of theories: the built-in subpackages and those installed packages declare.

Discovery happens here and nowhere else. A theory is found

- as a subpackage of ``ncdynamics.theories`` whose ``__init__`` binds ``THEORY`` to a
  :class:`~ncdynamics.theories.Theory`, or
- through an entry point of the group ``ncdynamics.theories`` whose value loads such a
  declaration (``"toy_theory:THEORY"``); the entry point's name must be the theory's name.

A subpackage without ``THEORY``, an entry point that does not load a ``Theory``, or two
theories with one name fail loudly, naming the package.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from importlib.metadata import entry_points

from .theory import Theory, TheoryDeclarationError

__all__ = ["ENTRY_POINT_GROUP", "available", "get", "refresh"]

ENTRY_POINT_GROUP = "ncdynamics.theories"

_FOUND: dict[str, Theory] | None = None


def _builtin() -> list[Theory]:
    # The subpackages of the package this module belongs to (imported before any submodule).
    here = sys.modules[__name__.rpartition(".")[0]]
    found = []
    for info in sorted(pkgutil.iter_modules(here.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        package = f"{here.__name__}.{info.name}"
        theory = getattr(importlib.import_module(package), "THEORY", None)
        if not isinstance(theory, Theory):
            raise TheoryDeclarationError(
                f"package {package!r} is a theory subpackage but binds no `THEORY = "
                f"Theory(...)` in its __init__ (found {type(theory).__name__})."
            )
        if theory.name != info.name:
            raise TheoryDeclarationError(
                f"package {package!r} declares theory name {theory.name!r}; a built-in "
                f"theory's name must be its subpackage name {info.name!r}."
            )
        found.append(theory)
    return found


def _installed() -> list[Theory]:
    found = []
    for ep in sorted(entry_points(group=ENTRY_POINT_GROUP), key=lambda e: e.name):
        try:
            theory = ep.load()
        except Exception as exc:
            raise TheoryDeclarationError(
                f"entry point {ep.name!r} = {ep.value!r} of group {ENTRY_POINT_GROUP!r} "
                f"does not load: {type(exc).__name__}: {exc}"
            ) from exc
        if not isinstance(theory, Theory):
            raise TheoryDeclarationError(
                f"entry point {ep.name!r} = {ep.value!r} of group {ENTRY_POINT_GROUP!r} must "
                f"load a ncdynamics.theories.Theory; got {type(theory).__name__}."
            )
        if theory.name != ep.name:
            raise TheoryDeclarationError(
                f"entry point {ep.name!r} loads {theory.where}; the entry point's name must "
                "be the theory's name."
            )
        found.append(theory)
    return found


def _discover() -> dict[str, Theory]:
    found: dict[str, Theory] = {}
    for theory in [*_builtin(), *_installed()]:
        if theory.name in found:
            raise TheoryDeclarationError(
                f"two theories are named {theory.name!r}: {found[theory.name].where} and "
                f"{theory.where}."
            )
        found[theory.name] = theory
    return found


def _registry() -> dict[str, Theory]:
    global _FOUND
    if _FOUND is None:
        _FOUND = _discover()
    return _FOUND


def available() -> list[str]:
    """The names of every theory, built-in and installed, sorted.

    Examples
    --------
    >>> from ncdynamics import theories
    >>> theories.available()[:3]
    ['alignment', 'hadamard', 'lesde']
    """
    return sorted(_registry())


def get(name: str) -> Theory:
    """The theory called ``name``; an unknown name lists the known ones.

    Examples
    --------
    >>> from ncdynamics import theories
    >>> theories.get("hadamard").confrontation
    'ncdynamics.theories.hadamard.confront:CONFRONTATION'
    """
    found = _registry()
    if name not in found:
        raise ValueError(f"`theory` must be one of {', '.join(sorted(found))}; got {name!r}.")
    return found[name]


def refresh() -> None:
    """Forget what was discovered, so that the next call looks again (after an install)."""
    global _FOUND
    _FOUND = None
