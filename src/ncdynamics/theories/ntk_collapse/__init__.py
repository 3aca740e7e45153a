"""Neural (tangent kernel) collapse: block-structured NTK gradient flow and its invariant.

Theory, measurement helpers and experiments of

[1] M. Seleznova, D. Weitzner, R. Giryes, G. Kutyniok and H.-H. Chou, "Neural (Tangent
    Kernel) Collapse", Advances in Neural Information Processing Systems 36 (NeurIPS 2023).
    arXiv:2305.16427.

Modules
-------
blocks
    Block-structured kernels (Definition 3.1, Assumption D.1), the eigendecomposition of
    Table 1 with orthonormal eigenbases and the basis Q of eq. (22).
residuals
    Residual phases (8)-(18): global, class and single components, closed-form gradient flow
    and gradient descent.
model
    Params, states and the flows (19), (20), (25), (44); the loss (4).
decomposition
    The feature decomposition (23)-(24): class means H1 and within-class part H2.
invariants
    The conserved matrices (26), (27), (45).
simulate
    Integration of the flows (ODE solver) and gradient descent (Euler), returning the shared
    :class:`~ncdynamics.theories.Trajectory`.
limits
    Limits of Theorem 5.2 and App. B.4 for E = 0 (eqs. (58), (60), (62), (63), (67)), with
    the corrected theta of eq. (66)/(68).
relaxed
    Relaxed block structure of App. D, eqs. (72), (73), (77)-(78), with corrected signs.
initial
    Initial states: random, E = 0, E negative definite, equal biases with E = 0.
measure
    Invariant metrics of a real network from recorded Gram matrices, the code
    estimator of the block values and the 99.9 % train-accuracy epoch.
estimate
    From a recorded run: block values over time and the theory's prediction of NC from the
    measured invariant (does the run collapse, and how fast).
confront
    The end-of-training Riccati flow (44) confronted with a run's within-class scatter.
training_recipe
    The network training recipe of Sec. 6 / App. C shared by Figures 1, 2 and 12.
experiments
    One module per figure or result (Figures 1, 2, 12; Theorems 5.1, 5.2; App. B.3, B.4;
    the residual phases), registered as ``ntk_collapse.<name>``.

Conventions: the theory uses the paper's layout (features ``H`` of shape (n, N), samples
class-major, ``W`` of shape (C, n)); measured features are ``(n_samples, n_features)`` and are
transposed at the boundary. Public signatures name the class count ``n_classes`` (the
paper's C) and the samples per class ``n_per_class`` (m). Simulations return the shared
:class:`~ncdynamics.theories.Trajectory`. Errata are listed in ``docs/theories/ntk_collapse.md``.

The package exports ``THEORY`` (its declaration) and the few names a user calls first:
:class:`BlockParams`, :class:`State`, :func:`simulate_flow`. Everything else is reached by
module (``from ncdynamics.theories.ntk_collapse.<module> import name``), so that importing
the theory, as ``ncdyn list`` does, imports no estimation code.
"""

from .model import BlockParams as BlockParams
from .model import State as State
from .simulate import simulate_flow as simulate_flow

__all__ = ["BlockParams", "State", "THEORY", "simulate_flow"]

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
    calibration="ncdynamics.theories.ntk_collapse.calibration:CALIBRATION",
    docs="docs/theories/ntk_collapse.md",
)
