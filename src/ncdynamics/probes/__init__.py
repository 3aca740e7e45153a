"""Measurements of a network: pure functions plus streaming accumulators and Recorder probes.

No training and no files here: probes turn features, labels, kernels and models into numbers.
"""

from ._base import Probe as Probe
from ._base import ProbeInput as ProbeInput
from ._base import ProbeOutput as ProbeOutput
from ._base import available_probes as available_probes
from ._base import make_probe as make_probe
from ._base import register_probe as register_probe

__all__ = [
    "Probe",
    "ProbeInput",
    "ProbeOutput",
    "available_probes",
    "make_probe",
    "register_probe",
]
