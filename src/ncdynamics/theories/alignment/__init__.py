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
"""

from .closed_form import a_high as a_high
from .closed_form import a_low as a_low
from .closed_form import b_of_a as b_of_a
from .closed_form import conserved_q as conserved_q
from .closed_form import exponential_weighting as exponential_weighting
from .closed_form import final_distance as final_distance
from .closed_form import final_distance_cdf as final_distance_cdf
from .closed_form import final_distance_pdf as final_distance_pdf
from .closed_form import fixed_point_stability as fixed_point_stability
from .closed_form import identical_outputs_solution as identical_outputs_solution
from .closed_form import lazy_params as lazy_params
from .closed_form import lazy_rescale as lazy_rescale
from .closed_form import loss_curve as loss_curve
from .closed_form import origin_jacobian as origin_jacobian
from .closed_form import origin_saddle as origin_saddle
from .closed_form import pairwise_theory as pairwise_theory
from .closed_form import sample_final_distance as sample_final_distance
from .estimate import fit_loss as fit_loss
from .estimate import fit_output_rate as fit_output_rate
from .estimate import fit_rates as fit_rates
from .estimate import simulate as simulate
from .model import VARIANTS as VARIANTS
from .model import AlignmentParams as AlignmentParams
from .model import VectorParams as VectorParams
from .model import drift as drift
from .model import drift_reduced as drift_reduced
from .model import drift_vector as drift_vector
from .model import jacobian as jacobian
from .model import simulate_matrix as simulate_matrix

__all__ = [
    "THEORY",
    "VARIANTS",
    "AlignmentParams",
    "VectorParams",
    "a_high",
    "a_low",
    "b_of_a",
    "conserved_q",
    "drift",
    "drift_reduced",
    "drift_vector",
    "exponential_weighting",
    "final_distance",
    "final_distance_cdf",
    "final_distance_pdf",
    "fit_loss",
    "fit_output_rate",
    "fit_rates",
    "fixed_point_stability",
    "identical_outputs_solution",
    "jacobian",
    "lazy_params",
    "lazy_rescale",
    "loss_curve",
    "origin_jacobian",
    "origin_saddle",
    "pairwise_theory",
    "sample_final_distance",
    "simulate",
    "simulate_matrix",
]

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
