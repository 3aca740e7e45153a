"""The two-point representation-alignment theory and its measurement on real networks.

Two inputs with nearby representations interact through a local linearisation of the
network; with separate effective rates for the encoder (``1/tau_h``) and the decoder
(``1/tau_y``) the squared representational distance ``a``, the squared output distance
``b`` and the output alignment ``w`` follow a closed three-variable system whose only
stable fixed point gives the final representational distance (rich regime at small
initial weights, lazy regime at large ones).

Modules: :mod:`.model` (the ODE systems, the reference right-hand sides), :mod:`.closed_form`
(invariant, fixed points, exact solutions, final distance and its distribution, multi-point
use), :mod:`.fast_drift` (the fast path of :func:`.model.drift` and its Jacobian used by the
fit), :mod:`.estimate` (rates fitted to a recorded run), :mod:`.training` (full-batch
training that records the pair observables), :mod:`.numerics` (floating-point settings of
that training), :mod:`.confront` (the confrontation with a recorded run) and
:mod:`.experiments` (one module per paper figure, ``alignment.*``).

References
----------
.. [1] L. van Rossem and A. M. Saxe, "When Representations Align: Universality in
   Representation Learning Dynamics", Proceedings of the 41st International Conference on
   Machine Learning (ICML), PMLR 235, 2024. arXiv:2402.09142.

The package exports ``THEORY`` (its declaration) and the few names a user calls first:
:class:`AlignmentParams`, :func:`drift`, :func:`simulate_matrix`, :func:`final_distance`.
Everything else is reached by module (``from ncdynamics.theories.alignment.<module> import
name``), so that importing the theory, as ``ncdyn list`` does, imports no estimation code.
"""

from .closed_form import final_distance as final_distance
from .model import AlignmentParams as AlignmentParams
from .model import drift as drift
from .model import simulate_matrix as simulate_matrix

__all__ = ["AlignmentParams", "THEORY", "drift", "final_distance", "simulate_matrix"]

from ..theory import Theory as _Theory

THEORY = _Theory(
    name="alignment",
    title="Two-point representation alignment: universality of representation dynamics",
    citation=(
        'L. van Rossem and A. M. Saxe, "When Representations Align: Universality in '
        'Representation Learning Dynamics", Proceedings of the 41st International Conference '
        "on Machine Learning (ICML), PMLR 235, 2024. arXiv:2402.09142."
    ),
    package=__name__,
    experiments="ncdynamics.theories.alignment.experiments:EXPERIMENTS",
    confrontation="ncdynamics.theories.alignment.confront:CONFRONTATION",
    calibration="ncdynamics.theories.alignment.calibration:CALIBRATION",
    docs="docs/theories/alignment.md",
)
