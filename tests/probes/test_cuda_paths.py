"""The probes on CUDA give what they give on the CPU (run where CUDA is present; ``make
test-gpu``). Each path here once returned CUDA tensors to NumPy without ``.cpu()``."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from ncdynamics.models import MLP
from ncdynamics.probes import empirical_ntk
from ncdynamics.probes.elasticity import measure_elasticity
from ncdynamics.probes.geometry import taylor_terms

pytestmark = pytest.mark.gpu


def _mlp() -> MLP:
    return MLP(12, 4, depth=2, width=16, generator=torch.Generator().manual_seed(0)).double()


@pytest.mark.parametrize("mode", ["full", "trace", "diagonal"])
def test_empirical_ntk_on_cuda_equals_the_cpu_kernel(mode):
    model = _mlp()
    x = torch.randn(6, 12, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    on_cpu = empirical_ntk(model, x, mode=mode)
    on_cuda = empirical_ntk(model.cuda(), x.cuda(), mode=mode)
    assert on_cuda.device.type == "cuda"
    torch.testing.assert_close(on_cuda.cpu(), on_cpu, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", ["difference", "autodiff"])
def test_taylor_terms_of_a_cuda_network_come_back_as_numpy(method):
    model = _mlp()
    g = torch.Generator().manual_seed(2)
    xi, xj = torch.randn(5, 12, generator=g).double(), torch.randn(5, 12, generator=g).double()
    on_cpu = taylor_terms(lambda z: model(z[None])[0], xi, xj, method=method)
    cuda_model = _mlp().cuda()
    on_cuda = taylor_terms(lambda z: cuda_model(z[None])[0], xi.cuda(), xj.cuda(), method=method)
    np.testing.assert_allclose(on_cuda.first, on_cpu.first, rtol=1e-10)
    np.testing.assert_allclose(on_cuda.second, on_cpu.second, rtol=1e-10, atol=1e-12)


def test_elasticity_of_a_cuda_network_equals_the_cpu_measure():
    # the labels once stayed on the CPU beside CUDA logits (cross-entropy refused them)
    model = _mlp()
    g = torch.Generator().manual_seed(3)
    x = torch.randn(12, 12, generator=g).double()
    y = torch.arange(12) % 4
    on_cpu = measure_elasticity(model, x, y, n_sources_per_class=2, num_classes=4)
    on_cuda = measure_elasticity(
        _mlp().cuda(), x.cuda(), y.cuda(), n_sources_per_class=2, num_classes=4
    )
    np.testing.assert_array_equal(on_cuda.sources, on_cpu.sources)
    np.testing.assert_allclose(on_cuda.impacts, on_cpu.impacts, rtol=1e-8, atol=1e-10)
