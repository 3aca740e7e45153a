"""Initialisation schemes: the stated standard deviations, zero biases, seeding, norm layers."""

import math

import pytest
import torch
from torch import nn

from ncdynamics.models import initialize


def wide_net():
    return nn.Sequential(nn.Linear(400, 300), nn.Conv2d(8, 16, 3), nn.BatchNorm1d(5))


@pytest.mark.parametrize(
    "scheme, std",
    [
        ("lecun-normal", lambda fan_in, fan_out: 1 / math.sqrt(fan_in)),
        ("he-fan-out", lambda fan_in, fan_out: math.sqrt(2 / fan_out)),
        ("xavier", lambda fan_in, fan_out: math.sqrt(2 / (fan_in + fan_out))),
    ],
)
def test_scheme_gives_the_stated_std_and_zero_biases(scheme, std):
    net = initialize(wide_net(), scheme, generator=torch.Generator().manual_seed(0))
    lin, conv = net[0], net[1]
    for layer, fan_in, fan_out in ((lin, 400, 300), (conv, 8 * 9, 16 * 9)):
        w = layer.weight.detach()
        expected = std(fan_in, fan_out)
        # 4 standard errors of a sample std of n normal draws: std * 4 / sqrt(2 n)
        assert float(w.std()) == pytest.approx(expected, rel=4 / math.sqrt(2 * w.numel()))
        assert torch.count_nonzero(layer.bias) == 0
    if scheme == "lecun-normal":  # truncated at two (pre-correction) standard deviations
        bound = 2 * std(400, 300) / 0.8796256610342398
        assert float(lin.weight.abs().max()) <= bound


def test_xavier_gain_scales_the_std():
    g = torch.Generator().manual_seed(1)
    net = initialize(nn.Sequential(nn.Linear(400, 300)), "xavier", gain=2.0, generator=g)
    expected = 2.0 * math.sqrt(2 / 700)
    assert float(net[0].weight.std()) == pytest.approx(expected, rel=0.02)


def test_pytorch_default_with_a_generator_is_uniform_in_the_fan_in_bound_and_seeded():
    a = initialize(wide_net(), generator=torch.Generator().manual_seed(2))
    b = initialize(wide_net(), generator=torch.Generator().manual_seed(2))
    for layer, fan_in in ((a[0], 400), (a[1], 72)):
        bound = 1 / math.sqrt(fan_in)
        assert float(layer.weight.abs().max()) <= bound
        assert float(layer.weight.abs().max()) > 0.95 * bound  # uniform: reaches the bound
        assert float(layer.bias.abs().max()) <= bound
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(pa, pb)


def test_norm_layers_are_reset_to_identity():
    net = wide_net()
    with torch.no_grad():
        net[2].weight.fill_(3.0)
        net[2].bias.fill_(-1.0)
    initialize(net, "xavier")
    assert torch.equal(net[2].weight, torch.ones(5)) and torch.equal(net[2].bias, torch.zeros(5))


@pytest.mark.parametrize(
    "kwargs, match", [({"scheme": "orthogonal"}, "scheme"), ({"gain": 0.0}, "gain")]
)
def test_bad_arguments_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        initialize(wide_net(), **kwargs)
