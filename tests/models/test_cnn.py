"""SmallCNN: shapes, parameter count, features/classifier split, bad input."""

import pytest
import torch
from torch import nn

from ncdynamics.models import SmallCNN


def test_parameter_count_and_shapes():
    net = SmallCNN(1, 10)
    want = (16 * 9 + 16) + (32 * 16 * 9 + 32) + (32 * 49 * 32 + 32) + (32 * 10 + 10)
    assert sum(p.numel() for p in net.parameters()) == want == 55_338
    x = torch.randn(4, 1, 28, 28)
    h = net.features(x)
    assert h.shape == (4, 32)
    assert isinstance(net.classifier, nn.Linear)
    torch.testing.assert_close(net(x), net.classifier(h))


@pytest.mark.parametrize(
    ("c", "size", "channels", "width"), [(3, 32, (4, 8), 12), (1, 9, (2, 3), 5)]
)
def test_other_sizes(c, size, channels, width):
    net = SmallCNN(c, 4, channels=channels, width=width, input_size=size)
    assert net(torch.randn(2, c, size, size)).shape == (2, 4)
    assert net.features(torch.randn(2, c, size, size)).shape == (2, width)


def test_seeded_init():
    a = SmallCNN(generator=torch.Generator().manual_seed(2))
    b = SmallCNN(generator=torch.Generator().manual_seed(2))
    assert all(torch.equal(p, q) for p, q in zip(a.parameters(), b.parameters(), strict=True))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"channels": (4,)}, "channels"),
        ({"width": 0}, "width"),
        ({"input_size": 3}, "input_size"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        SmallCNN(**kwargs)


def test_wrong_input_shape_is_rejected():
    with pytest.raises(ValueError, match=r"\(n, 1, 28, 28\)"):
        SmallCNN()(torch.randn(2, 1, 32, 32))
