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

The package exports ``THEORY`` (its declaration) and the few names a user calls first:
:class:`LEParams`, :func:`simulate_sde`, :func:`solve_leode`. Everything else is reached by
module (``from ncdynamics.theories.lesde.<module> import name``), so that importing the
theory, as ``ncdyn list`` does, imports no estimation code.
"""

from .model import LEParams as LEParams
from .simulate import simulate_sde as simulate_sde
from .simulate import solve_leode as solve_leode

__all__ = ["LEParams", "THEORY", "simulate_sde", "solve_leode"]

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
