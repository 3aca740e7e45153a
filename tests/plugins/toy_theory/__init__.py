"""A toy theory installed from outside ncdynamics: the training loss decays exponentially.

It is the minimal example of ``docs/extending.md`` and the test of the
``ncdynamics.theories`` entry-point group: the tests install it into a temporary directory
with an entry point and check that ``ncdyn list`` and ``ncdyn compare`` see it.
"""

from ncdynamics.theories import Theory

THEORY = Theory(
    name="toy",
    title="Toy: the training loss decays exponentially, L(t) = L0 exp(-r t)",
    citation="A. Author, 'A toy theory of loss decay', 2026.",
    package=__name__,
    experiments="toy_theory.experiments:EXPERIMENTS",
    confrontation="toy_theory.confront:CONFRONTATION",
    calibration="toy_theory.calibration:CALIBRATION",
    docs="https://example.invalid/toy",
)
