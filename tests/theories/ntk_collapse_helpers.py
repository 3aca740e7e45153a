"""Shared by the ntk_collapse tests: a small block-structured problem and a random start."""

import numpy as np

from ncdynamics.theories.ntk_collapse.initial import init_random
from ncdynamics.theories.ntk_collapse.model import BlockParams

P = BlockParams(n_classes=4, n_per_class=5, n_features=12, kappa_d=3.0, kappa_c=1.0, kappa_n=0.2)


def _rel(a, b):
    return np.linalg.norm(a - b) / np.linalg.norm(b)


def _random_state(rng, p=P, bias=0.3):
    return init_random(p, rng=rng, feature_scale=0.7, weight_scale=1.0, bias_scale=bias)
