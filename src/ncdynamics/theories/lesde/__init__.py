"""Locally elastic stochastic differential equations (LE-SDE) and their measurement.

Theory, simulation, separation tests and estimators of

[1] J. Zhang, H. Wang and W. J. Su, "Imitating Deep Learning Dynamics via Locally Elastic
    Stochastic Differential Equations", Advances in Neural Information Processing Systems 34
    (NeurIPS 2021). arXiv:2110.05960.

Modules
-------
model
    Drift matrix for any K and p (l-model and L-model H), closed forms (3), (7), (9), the
    exact s-reduction of the L-model, time-varying rates. The neural-collapse ETF (10) is
    the shared floor's :func:`ncdynamics.theories.geometry.simplex_etf`.
simulate
    Euler--Maruyama on particles (empirical-mean or mean-field drift), the exact class-mean
    representation, the LE-ODE (6) and the discrete dynamics (1)/(4); each returns a
    :class:`ncdynamics.theories.Trajectory`.
separation
    Binary and linear (LP) separability and their graded forms (fraction of points
    separated), pairwise separability, the projection direction,
    Monte-Carlo checks of Theorems 2.1 and 3.1, Prop. 3.4 Gram error.
trials
    R LeNets trained at once, batch size 1, recording the logits the LE-SDE models.
fast_lenet_step, reference_lenet_step
    The SGD step of R stacked LeNets: the hand-written fast path and its autograd
    reference.
estimate
    Class-mean logits, A/B estimators (l-model, L-model, exact projection), rates by
    Savitzky--Golay, tail indices, LE-ODE imitation and its relative distance, and the direct
    drift-matrix estimate from the elasticity probe.
confront
    The L-model LE-ODE confronted with a run's class-mean logits: constant or
    power-law-decaying elasticities, chosen by AICc and held-out error, with intervals, signs
    and the declared regime.
experiments
    One module per figure or theorem of [1], and ``EXPERIMENTS``.

Conventions (see ``docs/theories/lesde.md``): K (``n_classes`` in signatures) classes; a
stack of K per-class p-vectors has shape ``(..., K, p)`` (class-major when flattened); time
is the SGD iteration index in estimators.
"""

from .estimate import ABEstimate as ABEstimate
from .estimate import DirectEstimate as DirectEstimate
from .estimate import LEODEImitation as LEODEImitation
from .estimate import class_means_from_records as class_means_from_records
from .estimate import drift_from_impacts as drift_from_impacts
from .estimate import estimate_ab_L as estimate_ab_L
from .estimate import estimate_ab_l as estimate_ab_l
from .estimate import estimate_ab_projection as estimate_ab_projection
from .estimate import leode_imitation as leode_imitation
from .estimate import norm_adjust as norm_adjust
from .estimate import rates_savgol as rates_savgol
from .estimate import relative_distance as relative_distance
from .estimate import rescale_to_real as rescale_to_real
from .estimate import tail_index as tail_index
from .model import L_model_means as L_model_means
from .model import L_model_s as L_model_s
from .model import LEParams as LEParams
from .model import Rate as Rate
from .model import as_rate as as_rate
from .model import binary_means as binary_means
from .model import d_vectors as d_vectors
from .model import drift as drift
from .model import drift_matrix as drift_matrix
from .model import h_isotropic as h_isotropic
from .model import h_logits as h_logits
from .model import hbar as hbar
from .model import l_model_decompose as l_model_decompose
from .model import l_model_means as l_model_means
from .model import le_matrix as le_matrix
from .model import v1_v2_k3 as v1_v2_k3
from .separation import SeparationEstimate as SeparationEstimate
from .separation import binary_separable as binary_separable
from .separation import etf_gram_error as etf_gram_error
from .separation import linearly_separable as linearly_separable
from .separation import pairwise_separable as pairwise_separable
from .separation import projection_direction as projection_direction
from .separation import separated_fraction as separated_fraction
from .separation import theorem21_probability as theorem21_probability
from .separation import theorem31_probability as theorem31_probability
from .separation import threshold_fraction as threshold_fraction
from .simulate import simulate_discrete as simulate_discrete
from .simulate import simulate_sde as simulate_sde
from .simulate import solve_leode as solve_leode

__all__ = [
    "THEORY",
    "simulate_discrete",
    "simulate_sde",
    "solve_leode",
    "SeparationEstimate",
    "binary_separable",
    "etf_gram_error",
    "linearly_separable",
    "pairwise_separable",
    "projection_direction",
    "separated_fraction",
    "theorem21_probability",
    "theorem31_probability",
    "threshold_fraction",
    "ABEstimate",
    "DirectEstimate",
    "LEODEImitation",
    "class_means_from_records",
    "drift_from_impacts",
    "estimate_ab_L",
    "estimate_ab_l",
    "estimate_ab_projection",
    "leode_imitation",
    "norm_adjust",
    "rates_savgol",
    "relative_distance",
    "rescale_to_real",
    "tail_index",
    "LEParams",
    "L_model_means",
    "L_model_s",
    "Rate",
    "as_rate",
    "binary_means",
    "d_vectors",
    "drift",
    "drift_matrix",
    "h_isotropic",
    "h_logits",
    "hbar",
    "l_model_decompose",
    "l_model_means",
    "le_matrix",
    "v1_v2_k3",
]

from ..theory import Theory as _Theory

THEORY = _Theory(
    name="lesde",
    title="Locally elastic stochastic differential equations (LE-SDE)",
    citation=(
        'J. Zhang, H. Wang and W. J. Su, "Imitating Deep Learning Dynamics via Locally '
        'Elastic Stochastic Differential Equations", Advances in Neural Information '
        "Processing Systems 34 (NeurIPS 2021). arXiv:2110.05960."
    ),
    package=__name__,
    experiments="ncdynamics.theories.lesde.experiments:EXPERIMENTS",
    confrontation="ncdynamics.theories.lesde.confront:CONFRONTATION",
    calibration="ncdynamics.theories.lesde.calibration:CALIBRATION",
    docs="docs/theories/lesde.md",
)
