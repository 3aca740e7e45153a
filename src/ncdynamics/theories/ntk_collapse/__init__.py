"""Neural (tangent kernel) collapse: block-structured NTK gradient flow and its invariant.

Theory, measurement helpers and experiments of

[1] M. Seleznova, D. Weitzner, R. Giryes, G. Kutyniok and H.-H. Chou, "Neural (Tangent
    Kernel) Collapse", Advances in Neural Information Processing Systems 36 (NeurIPS 2023).
    arXiv:2305.16427.

Modules
-------
blocks
    Block-structured kernels (Definition 3.1, Assumption D.1), the eigendecomposition of
    Table 1 with orthonormal eigenbases, label matrix and the basis Q of eq. (22).
residuals
    Residual phases (8)-(18): global, class and single components, closed-form gradient flow
    and gradient descent.
model
    Params, states, the flows (19), (20), (25), (44), the feature decomposition (23)-(24),
    the invariants (26), (27), (45), and ODE / GD integration.
limits
    Limits of Theorem 5.2 and App. B.4 for E = 0 (eqs. (58), (60), (62), (63), (67)), with
    the corrected theta of eq. (66)/(68).
relaxed
    Relaxed block structure of App. D, eqs. (72), (73), (77)-(78), with corrected signs.
initial
    Initial states: random, E = 0, E negative definite, equal biases with E = 0.
measure
    Invariant metrics of a real network (spec §2.5) from recorded Gram matrices, the code
    estimator of the block values and the 99.9 % train-accuracy epoch.
estimate
    From a recorded run: block values over time and the theory's prediction of NC from the
    measured invariant (does the run collapse, and how fast).
experiments
    Theory demos and the training experiments (Figures 1, 2, 12), registered as
    ``ntk_collapse.<name>``.

Conventions: the theory uses the paper's layout (features ``H`` of shape (n, N), samples
class-major, ``W`` of shape (C, n)); measured features are ``(n_samples, n_features)`` and are
transposed at the boundary. Errata are listed in ``docs/theories/ntk_collapse.md``.
"""

from .blocks import block_eigenvalues as block_eigenvalues
from .blocks import block_kernel as block_kernel
from .blocks import eigenspace_bases as eigenspace_bases
from .estimate import predict_collapse as predict_collapse
from .limits import equal_bias_coefficients as equal_bias_coefficients
from .limits import predict_limits as predict_limits
from .model import BlockParams as BlockParams
from .model import DecomposedState as DecomposedState
from .model import FlowTrajectory as FlowTrajectory
from .model import State as State
from .model import decompose_features as decompose_features
from .model import invariant as invariant
from .model import simulate_flow as simulate_flow
from .model import simulate_gd as simulate_gd
from .relaxed import RelaxedParams as RelaxedParams

__all__ = [
    "THEORY",
    "BlockParams",
    "DecomposedState",
    "FlowTrajectory",
    "RelaxedParams",
    "State",
    "block_eigenvalues",
    "block_kernel",
    "decompose_features",
    "eigenspace_bases",
    "equal_bias_coefficients",
    "invariant",
    "predict_collapse",
    "predict_limits",
    "simulate_flow",
    "simulate_gd",
]

from ..theory import Theory as _Theory

THEORY = _Theory(
    name="ntk_collapse",
    title="Neural (tangent kernel) collapse: block-structured NTK gradient flow",
    citation=(
        'M. Seleznova, D. Weitzner, R. Giryes, G. Kutyniok and H.-H. Chou, "Neural (Tangent '
        'Kernel) Collapse", Advances in Neural Information Processing Systems 36 (NeurIPS '
        "2023). arXiv:2305.16427."
    ),
    package=__name__,
    experiments="ncdynamics.theories.ntk_collapse.experiments:EXPERIMENTS",
    confrontation="ncdynamics.theories.ntk_collapse.confront:CONFRONTATION",
    docs="docs/theories/ntk_collapse.md",
)
