"""Every NTK method against the Jacobian-contraction reference (``probes/ntk_reference.py``)."""

import pytest
import torch
from ntk_helpers import METHODS, MODES, as_mode, make, slow_ntk

from ncdynamics.models import MLP, SmallCNN
from ncdynamics.probes import empirical_ntk
from ncdynamics.probes.ntk_reference import reference_ntk


def random_model(name):
    """Small models with random, non-symmetric weights (and non-trivial BN statistics)."""
    g = torch.Generator().manual_seed(11)
    if name == "mlp":
        return MLP(6, 4, depth=2, width=7, activation="tanh", generator=g), (6,)
    if name == "cnn":
        cnn = SmallCNN(2, 3, channels=(3, 4), width=5, input_size=8, generator=g)
        return cnn, (2, 8, 8)
    return make(name)  # "convbn": conv, eval-mode BN, a sequence Linear, a head


@pytest.mark.parametrize("name", ["mlp", "convbn", "shared"])
def test_reference_matches_the_per_sample_autograd_oracle(float64_torch, name):
    model, shape = make(name)
    x, x2 = torch.randn(3, *shape), torch.randn(2, *shape)
    torch.testing.assert_close(reference_ntk(model, x, x2), slow_ntk(model, x, x2))


@pytest.mark.parametrize("name", ["mlp", "cnn", "convbn"])
@pytest.mark.parametrize("method", ["auto", *METHODS])
@pytest.mark.parametrize("cross", [False, True])
def test_every_method_matches_the_reference_float64(float64_torch, name, method, cross):
    model, shape = random_model(name)
    x = torch.randn(5, *shape)
    x2 = torch.randn(3, *shape) if cross else None
    for output in ("logits", "features"):
        full = reference_ntk(model, x, x2, output=output)
        for mode in MODES:
            k = empirical_ntk(model, x, x2, output=output, mode=mode, method=method)
            torch.testing.assert_close(k, as_mode(full, mode), rtol=1e-10, atol=1e-10)
        ref_avg = reference_ntk(model, x, x2, output=output, mode="trace", average=True)
        k_avg = empirical_ntk(model, x, x2, output=output, mode="trace", average=True)
        torch.testing.assert_close(k_avg, ref_avg, rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize("name", ["mlp", "cnn"])
@pytest.mark.parametrize("method", METHODS)
def test_every_method_matches_the_reference_float32(name, method):
    model, shape = random_model(name)
    x = torch.randn(6, *shape)
    ref = reference_ntk(model.double(), x.double()).float()
    model.float()
    for mode in ("full", "trace"):
        k = empirical_ntk(model, x, mode=mode, method=method)
        expected = as_mode(ref, mode)
        scale = float(expected.abs().max())
        torch.testing.assert_close(k, expected, rtol=5e-3, atol=5e-3 * scale)


def test_reference_restores_training_flags_and_buffers(float64_torch):
    model, shape = make("convbn")
    model.train()
    before = {k: v.clone() for k, v in model.named_buffers()}
    reference_ntk(model, torch.randn(3, *shape))
    assert model.training and model.bn.training
    for name, buf in model.named_buffers():
        assert torch.equal(buf, before[name]), name
