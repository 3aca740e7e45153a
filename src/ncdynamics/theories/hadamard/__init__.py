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
    Sylvester matrices, the basis ``U``, ``Ψ`` and Theorem 1's eigenvalues.
fast_batched_gd
    Fast path: gradient descent on ``R`` realisations at once (CE and MSE).
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

The UFM itself (losses, descent directions, the state ``[W; H^T]``, gradient flow, logit
descent, the plain one-realisation gradient descent) and the loop of discrete-time
trajectories live in the shared floor, :mod:`ncdynamics.theories.ufm` and
:mod:`ncdynamics.theories.iterate`, for every theory on the UFM.

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

The package exports ``THEORY`` (its declaration) and the few names a user calls first:
:class:`ReducedParams`, :func:`solve_reduced`, :func:`hadamard_init`, :func:`random_init`.
Everything else is reached by module (``from ncdynamics.theories.hadamard.<module> import
name``), so that importing the theory, as ``ncdyn list`` does, imports no estimation code.
"""

from .init import hadamard_init as hadamard_init
from .init import random_init as random_init
from .model import ReducedParams as ReducedParams
from .model import solve_reduced as solve_reduced

__all__ = ["ReducedParams", "THEORY", "hadamard_init", "random_init", "solve_reduced"]

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
