"""Model zoo and initialisation schemes; every model exposes ``features`` and ``classifier``."""

from .features import FeatureExtractor as FeatureExtractor
from .features import find_classifier as find_classifier
from .init import INIT_SCHEMES as INIT_SCHEMES
from .init import initialize as initialize
from .mlp import ACTIVATIONS as ACTIVATIONS
from .mlp import MLP as MLP

__all__ = ["ACTIVATIONS", "INIT_SCHEMES", "MLP", "FeatureExtractor", "find_classifier", "initialize"]
