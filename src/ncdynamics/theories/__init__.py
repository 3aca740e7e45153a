"""Effective theories of collapse dynamics, one subpackage each.

``lesde``, ``ntk_collapse``, ``alignment``, ``truncation``, ``hadamard``: every subpackage has
``model.py`` (the equations), ``estimate.py`` (parameters from a recorded run) and
``experiments.py`` (the paper's experiments, listed in ``EXPERIMENTS``).
"""

__all__: list[str] = []
