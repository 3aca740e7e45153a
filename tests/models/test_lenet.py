"""The LeNet of the LE-SDE experiments: shapes, parameter count, default init bounds, features."""

import math

import pytest
import torch

from ncdynamics.models.lenet import LeNet


@pytest.mark.parametrize("c, size, k", [(1, 32, 3), (3, 32, 10), (1, 16, 2)])
def test_shapes_and_features(c, size, k):
    net = LeNet(c, k, input_size=size, generator=torch.Generator().manual_seed(0))
    x = torch.randn(4, c, size, size)
    feats = net.features(x)
    assert feats.shape == (4, 84)
    torch.testing.assert_close(net.classifier(feats), net(x))
    assert net(x).shape == (4, k)


def test_parameter_count_matches_layer_list():
    net = LeNet(1, 3)
    want = (6 * 25 + 6) + (16 * 6 * 25 + 16) + (400 * 120 + 120) + (120 * 84 + 84) + (84 * 3 + 3)
    assert sum(p.numel() for p in net.parameters()) == want


def test_default_init_is_uniform_in_fan_in_bound_and_seeded():
    a = LeNet(1, 3, generator=torch.Generator().manual_seed(1))
    b = LeNet(1, 3, generator=torch.Generator().manual_seed(1))
    for (name, p), q in zip(a.named_parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(p, q)
        fan_in = {"body.0": 25, "body.3": 150, "body.7": 400, "body.9": 120, "classifier": 84}[
            name.rsplit(".", 1)[0]
        ]
        assert p.abs().max() <= 1 / math.sqrt(fan_in) + 1e-7


def test_rejects_small_input():
    with pytest.raises(ValueError, match="input_size"):
        LeNet(1, 3, input_size=8)
