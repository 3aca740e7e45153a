"""Effective theories of collapse dynamics: the contract, the registry and the shared floor.

Each theory is a subpackage (``lesde``, ``ntk_collapse``, ``alignment``, ``truncation``,
``hadamard``) or an installed package, and declares itself with a :class:`Theory` bound to
``THEORY`` in its ``__init__``. This package holds what they share:

- the contract: :class:`Theory`, :class:`ExperimentSpec` (with the :class:`RunWriter` an
  experiment writes to) and :class:`Confrontation` (with :class:`Stream`, :class:`Need`,
  :class:`TheoryFit` and its parts :class:`Param`, :class:`Curves`, :class:`Uncertainty`,
  :class:`Shown`);
- the registry: :func:`available` and :func:`get`;
- the floor: :mod:`~ncdynamics.theories.geometry` (simplex ETF),
  :mod:`~ncdynamics.theories.labels` (label matrices, class-major layout) and
  :mod:`~ncdynamics.theories.integrate` (the one :class:`Trajectory` type, ODE and SDE
  integrators, :class:`FitResult`).

How to add a theory is in ``docs/extending.md``.
"""

from .confrontation import Assumption as Assumption
from .confrontation import Confrontation as Confrontation
from .confrontation import Curves as Curves
from .confrontation import Need as Need
from .confrontation import NotApplicable as NotApplicable
from .confrontation import Param as Param
from .confrontation import Shown as Shown
from .confrontation import Stream as Stream
from .confrontation import TheoryFit as TheoryFit
from .confrontation import Uncertainty as Uncertainty
from .experiment import PRESETS as PRESETS
from .experiment import ExperimentSpec as ExperimentSpec
from .experiment import RunWriter as RunWriter
from .integrate import ConvergenceWarning as ConvergenceWarning
from .integrate import FitResult as FitResult
from .integrate import Trajectory as Trajectory
from .registry import ENTRY_POINT_GROUP as ENTRY_POINT_GROUP
from .registry import available as available
from .registry import get as get
from .registry import refresh as refresh
from .theory import Theory as Theory
from .theory import TheoryDeclarationError as TheoryDeclarationError

__all__ = [
    "ENTRY_POINT_GROUP",
    "PRESETS",
    "Assumption",
    "Confrontation",
    "ConvergenceWarning",
    "Curves",
    "ExperimentSpec",
    "FitResult",
    "Need",
    "NotApplicable",
    "Param",
    "RunWriter",
    "Shown",
    "Stream",
    "Theory",
    "TheoryDeclarationError",
    "TheoryFit",
    "Trajectory",
    "Uncertainty",
    "available",
    "get",
    "refresh",
]
