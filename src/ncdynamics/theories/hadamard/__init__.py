"""Hadamard-diagonalised cross-entropy dynamics of the unconstrained features model.

With ``K = 2**m`` classes and singular vectors taken from the normalised Sylvester--Hadamard
matrix ``U = Φ/√K``, the column softmax of ``U diag(a) U^T`` stays diagonal in ``U``
(Theorem 1). Gradient flow on the summed CE loss of the UFM then keeps the singular vectors
of ``W``, ``H`` and ``Z = WH`` fixed and reduces to an ODE on the ``K - 1`` nontrivial logit
singular values (Eqs. (9)--(10)), whose KL divergence to uniform is a Lyapunov function
(Theorem 3): the flow converges to neural collapse, while other distances (M of Eq. (12),
reverse KL, Frobenius, log-ratio) can increase for ``K >= 8`` (or ``K >= 16``).

Modules
-------
structure
    Sylvester matrices, the basis ``U``, ``Ψ``, column softmax and Theorem 1's eigenvalues.
ufm
    Loss, descent directions, the state ``[W; H^T]``, gradient flow, logit descent and the
    plain one-realisation gradient descent (the reference of the fast path).
fast_batched_gd
    Fast path: gradient descent on ``R`` realisations at once (CE and MSE).
iterate
    The one loop of the discrete-time trajectories (iterate a map, record at given steps).
init
    Random, Hadamard, matched-Hadamard and Theorem 8 initialisations.
model
    Reduced dynamics: Eq. (9) and its log form, replicator form (11), logit flow (Thm 6),
    normalised flow (22)--(24), Thm 2 in (α, β), energy (8), exact GD map, unit maps, Thm 5.
metrics
    M, KL and their derivatives, Theorem 7's threshold, other distances, NC alignment,
    residual energy.
theorem8
    Theorem 8: the time ``t*``, the prediction of ``Z(t*)``, its wide limit, ETF distance.
linear_program
    The max-min normalised margin linear program of App. C (Figure 3).
counterexamples
    Points where M, the reverse KL, the Frobenius and log-ratio metrics rise; Lemma 1.
estimate
    Projection of a recorded (W, H) run onto the Hadamard modes and a fit of the reduced ODE.
confront
    The reduced ODE confronted with a run's class-mean logits (``ncdyn compare``).
experiments
    Figures 1--10 of [1] as registered experiments ``hadamard.*``, one module per recipe.

Simulations return :class:`~ncdynamics.theories.Trajectory`; the class count is
``n_classes`` in every public signature (``K`` in [1]). The simplex ``S = I - 1 1^T/K`` and
the labels ``Y = I_K ⊗ 1_n^T`` come from the shared floor
(:func:`ncdynamics.theories.geometry.centering_matrix`,
:func:`ncdynamics.theories.labels.label_matrix`).

Conventions, units and the verified errata are in ``docs/theories/hadamard.md``.

References
----------
.. [1] C. Garrod, J. P. Keating and C. Thrampoulidis, "Diagonalizing the Softmax: Hadamard
   Initialization for Tractable Cross-Entropy Dynamics", preprint, 2025.
"""

from .counterexamples import COUNTEREXAMPLES as COUNTEREXAMPLES
from .counterexamples import embed as embed
from .estimate import HadamardProjection as HadamardProjection
from .estimate import ReducedFit as ReducedFit
from .estimate import fit_reduced as fit_reduced
from .estimate import project_onto_hadamard as project_onto_hadamard
from .fast_batched_gd import run_gd as run_gd
from .init import HadamardInit as HadamardInit
from .init import Theorem8Init as Theorem8Init
from .init import haar_orthogonal as haar_orthogonal
from .init import hadamard_init as hadamard_init
from .init import matched_hadamard_init as matched_hadamard_init
from .init import random_init as random_init
from .init import theorem8_init as theorem8_init
from .linear_program import MarginLP as MarginLP
from .linear_program import max_min_margin as max_min_margin
from .metrics import dfrobenius_dt as dfrobenius_dt
from .metrics import dkl_dt as dkl_dt
from .metrics import dkl_dt_closed as dkl_dt_closed
from .metrics import dlog_ratio_dt as dlog_ratio_dt
from .metrics import dm_dt as dm_dt
from .metrics import dm_dt_logit as dm_dt_logit
from .metrics import dreverse_kl_dt as dreverse_kl_dt
from .metrics import frobenius_metric as frobenius_metric
from .metrics import frobenius_sum as frobenius_sum
from .metrics import kl_uniform as kl_uniform
from .metrics import log_ratio_metric as log_ratio_metric
from .metrics import metric_m as metric_m
from .metrics import mode_values as mode_values
from .metrics import nc_alignment as nc_alignment
from .metrics import normalize_l1 as normalize_l1
from .metrics import reduced_basis as reduced_basis
from .metrics import residual_energy as residual_energy
from .metrics import reverse_kl as reverse_kl
from .metrics import thm7_threshold as thm7_threshold
from .metrics import top_singular_values as top_singular_values
from .metrics import ufm_metrics as ufm_metrics
from .model import ReducedParams as ReducedParams
from .model import SingularValueParams as SingularValueParams
from .model import discrete_gd_map as discrete_gd_map
from .model import drift as drift
from .model import drift_alpha_beta as drift_alpha_beta
from .model import drift_log as drift_log
from .model import drift_logit as drift_logit
from .model import drift_normalized as drift_normalized
from .model import drift_normalized_naive as drift_normalized_naive
from .model import energy as energy
from .model import energy_full as energy_full
from .model import from_reduced as from_reduced
from .model import growth_rates as growth_rates
from .model import iterations_to_time as iterations_to_time
from .model import iterations_to_time_logit as iterations_to_time_logit
from .model import jacobian_log as jacobian_log
from .model import linearized_solution as linearized_solution
from .model import margins as margins
from .model import mse_singular_values as mse_singular_values
from .model import payoffs as payoffs
from .model import replicator_drift as replicator_drift
from .model import solve_reduced as solve_reduced
from .model import to_reduced as to_reduced
from .structure import check_power_of_two as check_power_of_two
from .structure import hadamard_basis as hadamard_basis
from .structure import is_power_of_two as is_power_of_two
from .structure import psi_matrix as psi_matrix
from .structure import softmax_columns as softmax_columns
from .structure import softmax_eigenvalues as softmax_eigenvalues
from .structure import sylvester as sylvester
from .structure import xor_permutation as xor_permutation
from .theorem8 import etf_distance as etf_distance
from .theorem8 import thm8_limit as thm8_limit
from .theorem8 import thm8_prediction as thm8_prediction
from .theorem8 import thm8_time as thm8_time
from .ufm import ce_descent as ce_descent
from .ufm import ce_loss as ce_loss
from .ufm import ce_loss_from_logits as ce_loss_from_logits
from .ufm import logit_descent as logit_descent
from .ufm import mse_descent as mse_descent
from .ufm import mse_loss as mse_loss
from .ufm import pack_state as pack_state
from .ufm import run_gd_reference as run_gd_reference
from .ufm import run_logit_gd as run_logit_gd
from .ufm import solve_gradient_flow as solve_gradient_flow
from .ufm import state_matrices as state_matrices
from .ufm import unpack_state as unpack_state

__all__ = [
    "THEORY",
    "COUNTEREXAMPLES",
    "HadamardInit",
    "HadamardProjection",
    "MarginLP",
    "ReducedFit",
    "ReducedParams",
    "SingularValueParams",
    "Theorem8Init",
    "ce_descent",
    "ce_loss",
    "ce_loss_from_logits",
    "check_power_of_two",
    "dfrobenius_dt",
    "discrete_gd_map",
    "dkl_dt",
    "dkl_dt_closed",
    "dlog_ratio_dt",
    "dm_dt",
    "dm_dt_logit",
    "dreverse_kl_dt",
    "drift",
    "drift_alpha_beta",
    "drift_log",
    "drift_logit",
    "drift_normalized",
    "drift_normalized_naive",
    "embed",
    "energy",
    "energy_full",
    "etf_distance",
    "fit_reduced",
    "from_reduced",
    "frobenius_metric",
    "frobenius_sum",
    "growth_rates",
    "haar_orthogonal",
    "hadamard_basis",
    "hadamard_init",
    "is_power_of_two",
    "iterations_to_time",
    "iterations_to_time_logit",
    "jacobian_log",
    "kl_uniform",
    "linearized_solution",
    "log_ratio_metric",
    "logit_descent",
    "margins",
    "matched_hadamard_init",
    "max_min_margin",
    "metric_m",
    "mode_values",
    "mse_descent",
    "mse_loss",
    "mse_singular_values",
    "pack_state",
    "nc_alignment",
    "normalize_l1",
    "payoffs",
    "project_onto_hadamard",
    "psi_matrix",
    "random_init",
    "reduced_basis",
    "replicator_drift",
    "residual_energy",
    "reverse_kl",
    "run_gd",
    "run_gd_reference",
    "run_logit_gd",
    "softmax_columns",
    "softmax_eigenvalues",
    "solve_gradient_flow",
    "solve_reduced",
    "state_matrices",
    "sylvester",
    "theorem8_init",
    "thm7_threshold",
    "thm8_limit",
    "thm8_prediction",
    "thm8_time",
    "to_reduced",
    "top_singular_values",
    "ufm_metrics",
    "unpack_state",
    "xor_permutation",
]

from ..theory import Theory as _Theory

THEORY = _Theory(
    name="hadamard",
    title="Hadamard-diagonalised cross-entropy dynamics of the unconstrained features model",
    citation=(
        'C. Garrod, J. P. Keating and C. Thrampoulidis, "Diagonalizing the Softmax: Hadamard '
        'Initialization for Tractable Cross-Entropy Dynamics", preprint, 2025.'
    ),
    package=__name__,
    experiments="ncdynamics.theories.hadamard.experiments:EXPERIMENTS",
    confrontation="ncdynamics.theories.hadamard.confront:CONFRONTATION",
    calibration="ncdynamics.theories.hadamard.calibration:CALIBRATION",
    docs="docs/theories/hadamard.md",
)
