"""The toy theory's one equation: ``dL/dt = -r L``."""

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray


@dataclass(frozen=True)
class DecayParams:
    """``rate`` is r in ``dL/dt = -r L``."""

    rate: float


def drift(t: float, y: NDArray[np.float64], params: DecayParams) -> NDArray[np.float64]:
    """``dL/dt = -r L``."""
    return -params.rate * y
