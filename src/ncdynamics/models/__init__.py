"""Model zoo and initialisation schemes; every model exposes ``features`` and ``classifier``."""

from .cnn import SmallCNN as SmallCNN
from .densenet import DenseNetBC as DenseNetBC
from .features import FeatureExtractor as FeatureExtractor
from .features import find_classifier as find_classifier
from .init import INIT_SCHEMES as INIT_SCHEMES
from .init import initialize as initialize
from .lenet import LeNet as LeNet
from .mlp import ACTIVATIONS as ACTIVATIONS
from .mlp import MLP as MLP
from .modes import eval_mode as eval_mode
from .resnet import ResNet20 as ResNet20
from .table1 import Table1Net as Table1Net
from .vgg import VGG as VGG

__all__ = [
    "ACTIVATIONS",
    "DenseNetBC",
    "INIT_SCHEMES",
    "LeNet",
    "MLP",
    "FeatureExtractor",
    "ResNet20",
    "SmallCNN",
    "Table1Net",
    "VGG",
    "eval_mode",
    "find_classifier",
    "initialize",
]
