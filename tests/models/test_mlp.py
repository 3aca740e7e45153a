"""MLP: shapes, features and classifier composing to forward, seeded init, bad arguments."""

import pytest
import torch
from torch import nn

from ncdynamics.models import ACTIVATIONS, MLP


@pytest.mark.parametrize("depth", [0, 1, 3])
@pytest.mark.parametrize("activation", sorted(ACTIVATIONS))
def test_features_and_classifier_compose_to_forward(depth, activation):
    net = MLP(12, 4, depth=depth, width=7, activation=activation)
    x = torch.randn(5, 3, 4)  # any input shape is flattened
    h = net.features(x)
    assert h.shape == (5, 7 if depth else 12)
    torch.testing.assert_close(net(x), net.classifier(h))
    assert len(net.body) == 2 * depth
    assert sum(p.numel() for p in net.parameters()) == (
        (12 * 7 + 7 + (depth - 1) * (7 * 7 + 7) + 7 * 4 + 4) if depth else 12 * 4 + 4
    )


def test_same_generator_gives_same_weights():
    a = MLP(6, 3, generator=torch.Generator().manual_seed(4))
    b = MLP(6, 3, generator=torch.Generator().manual_seed(4))
    c = MLP(6, 3, generator=torch.Generator().manual_seed(5))
    for pa, pb, pc in zip(a.parameters(), b.parameters(), c.parameters(), strict=True):
        assert torch.equal(pa, pb) and not torch.equal(pa, pc)


def test_without_bias_has_no_bias_parameters():
    net = MLP(6, 3, depth=2, width=5, bias=False)
    assert all(m.bias is None for m in net.modules() if isinstance(m, nn.Linear))


@pytest.mark.parametrize(
    "kwargs, match",
    [
        ({"in_features": 0}, "in_features"),
        ({"num_outputs": 0}, "num_outputs"),
        ({"depth": -1}, "depth"),
        ({"width": 0}, "width"),
        ({"activation": "softplus"}, "activation"),
        ({"init": "orthogonal"}, "scheme"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, match):
    args = {"in_features": 6, "num_outputs": 3, **kwargs}
    with pytest.raises(ValueError, match=match):
        MLP(args.pop("in_features"), args.pop("num_outputs"), **args)
