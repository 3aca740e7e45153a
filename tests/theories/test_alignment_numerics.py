"""Floating-point settings of the alignment trials."""

import subprocess
import sys

_CHECK = """
import torch
from ncdynamics.theories.alignment.numerics import flush_denormals
tiny = torch.tensor([1e-40], dtype=torch.float32)  # subnormal in float32
before = (tiny * 1.0).item()
supported = flush_denormals()
after = (tiny * 1.0).item()
print(before > 0, supported, after)
"""


def test_flush_denormals_makes_subnormal_results_zero():
    # In a fresh process: the setting is process-wide and cannot be read back to restore it.
    out = subprocess.run(
        [sys.executable, "-c", _CHECK], capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "True"  # without the setting the subnormal survives
    if out[1] == "True":
        assert float(out[2]) == 0.0
    else:  # a CPU without the feature: nothing changes
        assert float(out[2]) > 0
