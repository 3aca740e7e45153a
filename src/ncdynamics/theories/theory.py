"""The declaration every theory makes: who it is, where its experiments and confrontation are.

A theory is a Python package whose ``__init__`` binds a module constant ``THEORY`` to a
:class:`Theory`. The five built-in theories live in ``ncdynamics.theories.<name>``; an
installed package adds a sixth by pointing an entry point of the group
``ncdynamics.theories`` at its declaration (see ``docs/extending.md``)::

    [project.entry-points."ncdynamics.theories"]
    toy = "toy_theory:THEORY"

The experiments and the confrontation are named by ``"module:attribute"`` references and
imported the first time they are asked for, so that importing a theory for its equations does
not import its training code. Everything else is checked when the declaration is built, and a
bad reference fails when it is first resolved; both errors name the theory's package.
"""

from __future__ import annotations

import importlib
import keyword
from dataclasses import dataclass, field
from typing import Any

from .confrontation import Confrontation
from .experiment import ExperimentSpec

__all__ = ["Theory", "TheoryDeclarationError"]


class TheoryDeclarationError(TypeError):
    """A theory's declaration is malformed: a missing field, a bad reference, a wrong type."""


def _check_reference(value: Any, what: str, where: str) -> None:
    if value is None:
        return
    if not isinstance(value, str) or value.count(":") != 1:
        raise TheoryDeclarationError(
            f"{where}: `{what}` must be a 'module:attribute' string; got {value!r}."
        )
    module, attribute = value.split(":")
    parts = [*module.split("."), attribute]
    if not all(p.isidentifier() and not keyword.iskeyword(p) for p in parts):
        raise TheoryDeclarationError(
            f"{where}: `{what}` must be a 'module:attribute' string of Python names; got {value!r}."
        )


def _resolve(reference: str, what: str, where: str) -> Any:
    module_name, attribute = reference.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TheoryDeclarationError(
            f"{where}: `{what}` names module {module_name!r}, which does not import: {exc}"
        ) from exc
    if not hasattr(module, attribute):
        raise TheoryDeclarationError(
            f"{where}: `{what}` names {reference!r}, but module {module_name!r} has no "
            f"attribute {attribute!r}."
        )
    return getattr(module, attribute)


@dataclass(frozen=True)
class Theory:
    """One effective theory of collapse dynamics, as the registry sees it.

    Parameters
    ----------
    name : str
        A Python identifier, unique among theories (``"lesde"``); experiment names start with
        it (``"lesde.fig4"``).
    title : str
        One line shown by ``ncdyn list --theories``.
    citation : str
        The full reference of the paper the theory implements.
    package : str
        The declaring package (``__name__`` in its ``__init__``); named in every error.
    experiments : str, optional
        ``"module:attribute"`` of a tuple of :class:`ExperimentSpec`; ``None`` for a theory
        with no experiments.
    confrontation : str, optional
        ``"module:attribute"`` of a :class:`Confrontation`; ``None`` when the theory does not
        speak about recorded network runs.
    docs : str, default=""
        The theory's documentation page (a path inside the repository or a URL).
    calibration : str, optional
        ``"module:attribute"`` of a :class:`~ncdynamics.theories.testing.Calibration`: the
        true and generic streams :func:`~ncdynamics.theories.testing.check_theory` judges
        the theory on; ``None`` when the theory declares none.

    Raises
    ------
    TheoryDeclarationError
        When a field has the wrong type or form.

    Examples
    --------
    >>> toy = Theory(
    ...     name="toy",
    ...     title="A toy theory",
    ...     citation="A. Author, 'A toy', 2026.",
    ...     package="toy_theory",
    ... )
    >>> toy.load_experiments()
    ()
    """

    name: str
    title: str
    citation: str
    package: str
    experiments: str | None = None
    confrontation: str | None = None
    docs: str = ""
    calibration: str | None = None
    _loaded: dict[str, Any] = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        package = self.package if isinstance(self.package, str) and self.package else "?"
        where = f"theory declared in package {package!r}"
        if not isinstance(self.package, str) or not self.package:
            raise TheoryDeclarationError(f"{where}: `package` must be a non-empty string.")
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise TheoryDeclarationError(
                f"{where}: `name` must be a Python identifier; got {self.name!r}."
            )
        for attr in ("title", "citation"):
            value = getattr(self, attr)
            if not isinstance(value, str) or not value.strip():
                raise TheoryDeclarationError(
                    f"{where}: `{attr}` must be a non-empty string; got {value!r}."
                )
        if not isinstance(self.docs, str):
            raise TheoryDeclarationError(f"{where}: `docs` must be a string; got {self.docs!r}.")
        _check_reference(self.experiments, "experiments", where)
        _check_reference(self.confrontation, "confrontation", where)
        _check_reference(self.calibration, "calibration", where)

    @property
    def where(self) -> str:
        """``theory 'name' (package 'pkg')``: how errors name this declaration."""
        return f"theory {self.name!r} (package {self.package!r})"

    def load_experiments(self) -> tuple[ExperimentSpec, ...]:
        """The theory's experiments, imported and checked on first use."""
        if "experiments" not in self._loaded:
            self._loaded["experiments"] = self._load_experiments()
        specs: tuple[ExperimentSpec, ...] = self._loaded["experiments"]
        return specs

    def load_confrontation(self) -> Confrontation | None:
        """The theory's confrontation with recorded runs, or ``None``."""
        if "confrontation" not in self._loaded:
            self._loaded["confrontation"] = self._load_confrontation()
        conf: Confrontation | None = self._loaded["confrontation"]
        return conf

    def load_calibration(self) -> Any:
        """The theory's calibration streams (imported on first use), or ``None``; the type is
        checked by :func:`~ncdynamics.theories.testing.check_theory`, which uses it."""
        if "calibration" not in self._loaded:
            self._loaded["calibration"] = (
                None
                if self.calibration is None
                else _resolve(self.calibration, "calibration", self.where)
            )
        return self._loaded["calibration"]

    def _load_experiments(self) -> tuple[ExperimentSpec, ...]:
        if self.experiments is None:
            return ()
        value = _resolve(self.experiments, "experiments", self.where)
        if not isinstance(value, (tuple, list)) or not all(
            isinstance(s, ExperimentSpec) for s in value
        ):
            raise TheoryDeclarationError(
                f"{self.where}: `experiments` ({self.experiments}) must be a tuple of "
                f"ExperimentSpec; got {type(value).__name__}."
            )
        for spec in value:
            if spec.theory != self.name or not spec.name.startswith(f"{self.name}."):
                raise TheoryDeclarationError(
                    f"{self.where}: experiment {spec.name!r} must have theory={self.name!r} "
                    f"and a name starting with {self.name + '.'!r}; it has "
                    f"theory={spec.theory!r}."
                )
        return tuple(value)

    def _load_confrontation(self) -> Confrontation | None:
        if self.confrontation is None:
            return None
        value = _resolve(self.confrontation, "confrontation", self.where)
        if not isinstance(value, Confrontation):
            raise TheoryDeclarationError(
                f"{self.where}: `confrontation` ({self.confrontation}) must be a "
                f"Confrontation; got {type(value).__name__}."
            )
        if value.theory != self.name:
            raise TheoryDeclarationError(
                f"{self.where}: its confrontation says theory={value.theory!r}."
            )
        return value
