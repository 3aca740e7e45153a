"""Effective gradient flow and dynamical truncation of training data in ReLU networks.

Simulates the effective equations of [1] for the cumulative biases ``beta^(l)`` and the
orthogonal parts ``R_l`` of activation-adapted cumulative weights, under the Euclidean cost in
the input layer: truncation maps, the cluster-separated flow (Thm. 3.2, with the corrected
rotation generator), the general flow (Thm. 5.1, corrected), the exact fixed-R staircase
(Sec. 4.3), the collapsed-data bilinear flow (Sec. 8) and the untruncated closed form (Sec. 9).
The paper has no experiments; the ``experiments`` subpackage registers ``truncation.e1`` ...
``truncation.e7``, designed here (docs/theories/truncation.md, Experiments), plus the
exploratory ``truncation.e8``, one module each.

Modules: ``network`` (truncation maps, costs, parameters), ``model`` (the effective flow of
``(beta, R)``, Secs. 3-7), ``output_layer`` (standard-cost flows with a trained output map,
Secs. 8-9), ``integrators`` (Lie-Euler on O(Q), the exact staircase), ``design`` (simplex
designs and monitors), ``estimate`` (the real network by autograd, finite differences, fits).
The errata implemented here are listed in ``docs/theories/truncation.md``.

References
----------
.. [1] T. Chen, "Derivation of effective gradient flow equations and dynamical truncation of
   training data in deep learning", arXiv preprint (no identifier is printed in the
   text we hold).

The package exports ``THEORY`` (its declaration) and the few names a user calls first:
:func:`simplex_design`, :func:`separated_flow`. Everything else is reached by module (``from
ncdynamics.theories.truncation.<module> import name``), so that importing the theory, as
``ncdyn list`` does, imports no estimation code.
"""

from .design import simplex_design as simplex_design
from .integrators import separated_flow as separated_flow

__all__ = ["THEORY", "separated_flow", "simplex_design"]

from ..theory import Theory as _Theory

THEORY = _Theory(
    name="truncation",
    title="Effective gradient flow and dynamical truncation of data in ReLU networks",
    citation=(
        'T. Chen, "Derivation of effective gradient flow equations and dynamical truncation '
        'of training data in deep learning", arXiv preprint (no identifier is printed in the '
        "text we hold)."
    ),
    package=__name__,
    experiments="ncdynamics.theories.truncation.experiments:EXPERIMENTS",
    confrontation=None,
    docs="docs/theories/truncation.md",
)
