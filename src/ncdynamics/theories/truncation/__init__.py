"""Effective gradient flow and dynamical truncation of training data in ReLU networks.

Simulates the effective equations of [1] for the cumulative biases ``beta^(l)`` and the
orthogonal parts ``R_l`` of activation-adapted cumulative weights, under the Euclidean cost in
the input layer: truncation maps, the cluster-separated flow (Thm. 3.2, with the corrected
rotation generator), the general flow (Thm. 5.1, corrected), the exact fixed-R staircase
(Sec. 4.3), the collapsed-data bilinear flow (Sec. 8) and the untruncated closed form (Sec. 9).
The paper has no experiments; the ``experiments`` subpackage registers ``truncation.e1`` ...
``truncation.e7`` designed in the project's spec, plus the exploratory ``truncation.e8``, one
module each.

Modules: ``network`` (truncation maps, costs, parameters), ``model`` (the effective flow of
``(beta, R)``, Secs. 3-7), ``output_layer`` (standard-cost flows with a trained output map,
Secs. 8-9), ``integrators`` (Lie-Euler on O(Q), the exact staircase), ``design`` (simplex
designs and monitors), ``estimate`` (the real network by autograd, finite differences, fits).
The errata implemented here are listed in ``docs/theories/truncation.md``.

References
----------
.. [1] T. Chen, "Derivation of effective gradient flow equations and dynamical truncation of
   training data in deep learning", arXiv preprint (seed 003 of this project; no
   identifier is printed in the text we hold).
"""

from .design import (
    ClusterMonitor,
    Design,
    collapse_margin,
    monitor_clusters,
    random_config,
    separation_margin,
    simplex_design,
    simplex_rotation,
    simplex_vertices,
)
from .estimate import (
    LayerDescentResult,
    NetworkGradients,
    OutputDescentResult,
    TrajectoryGap,
    finite_difference_gradients,
    fit_log_rate,
    layer_descent,
    network_descent,
    network_gradients,
    output_descent,
    trajectory_gap,
)
from .integrators import (
    FlowResult,
    Staircase,
    cayley,
    expm_antisymmetric,
    lie_euler,
    pack_state,
    polar_orthonormalize,
    separated_flow,
    staircase,
    staircase_gd,
)
from .model import (
    GeneralGradients,
    PackedClusters,
    SeparatedRates,
    general_gradients,
    omega_from_moments,
    pack_clusters,
    project_antisymmetric,
    riemannian_generator,
    sector_moments,
    separated_rates,
    theorem51_rates,
)
from .network import (
    AdaptedParams,
    ClusterData,
    cumulative_to_layers,
    euclidean_cost,
    forward_layers,
    heaviside,
    input_images,
    layers_to_cumulative,
    random_orthogonal,
    relu,
    sector_codes,
    sector_masks,
    standard_cost,
    truncate,
    truncate_general,
    truncation_path,
)
from .output_layer import (
    BilinearParams,
    LinearRegressionParams,
    bilinear_cost,
    bilinear_drift,
    bilinear_gd,
    bilinear_invariant,
    bilinear_propagator_drift,
    linreg_closed_form,
    linreg_drift,
    linreg_limit,
)

__all__ = [
    "THEORY",
    "AdaptedParams",
    "BilinearParams",
    "ClusterData",
    "ClusterMonitor",
    "Design",
    "FlowResult",
    "GeneralGradients",
    "LayerDescentResult",
    "LinearRegressionParams",
    "NetworkGradients",
    "OutputDescentResult",
    "PackedClusters",
    "SeparatedRates",
    "Staircase",
    "TrajectoryGap",
    "bilinear_cost",
    "bilinear_drift",
    "bilinear_gd",
    "bilinear_invariant",
    "bilinear_propagator_drift",
    "cayley",
    "collapse_margin",
    "cumulative_to_layers",
    "euclidean_cost",
    "expm_antisymmetric",
    "finite_difference_gradients",
    "fit_log_rate",
    "forward_layers",
    "general_gradients",
    "heaviside",
    "input_images",
    "layer_descent",
    "layers_to_cumulative",
    "lie_euler",
    "linreg_closed_form",
    "linreg_drift",
    "linreg_limit",
    "monitor_clusters",
    "network_descent",
    "network_gradients",
    "omega_from_moments",
    "output_descent",
    "pack_clusters",
    "pack_state",
    "polar_orthonormalize",
    "project_antisymmetric",
    "random_config",
    "random_orthogonal",
    "relu",
    "riemannian_generator",
    "sector_codes",
    "sector_masks",
    "sector_moments",
    "separated_flow",
    "separated_rates",
    "separation_margin",
    "simplex_design",
    "simplex_rotation",
    "simplex_vertices",
    "staircase",
    "staircase_gd",
    "standard_cost",
    "theorem51_rates",
    "trajectory_gap",
    "truncate",
    "truncate_general",
    "truncation_path",
]

from ..theory import Theory as _Theory

THEORY = _Theory(
    name="truncation",
    title="Effective gradient flow and dynamical truncation of data in ReLU networks",
    citation=(
        'T. Chen, "Derivation of effective gradient flow equations and dynamical truncation '
        'of training data in deep learning", arXiv preprint (seed 003 of this project; no '
        "identifier is printed in the text we hold)."
    ),
    package=__name__,
    experiments="ncdynamics.theories.truncation.experiments:EXPERIMENTS",
    confrontation=None,
    docs="docs/theories/truncation.md",
)
