"""ResNet20 of the NTK-collapse paper's code: parameter count, layout, features, BN, bad input."""

import pytest
import torch
from torch import nn

from ncdynamics.models import ResNet20, find_classifier


def count(m):
    return sum(p.numel() for p in m.parameters())


def expected_count(c_in, w, n_cls):
    """Hand count: stem, 9 blocks (two 3x3 convs + two BN each), 2 projections, head."""
    total = c_in * w * 9 + 2 * w
    c = w
    for stage, c_out in enumerate((w, 2 * w, 4 * w)):
        for k in range(3):
            total += c * c_out * 9 + 2 * c_out + c_out * c_out * 9 + 2 * c_out
            if stage > 0 and k == 0:
                total += c * c_out + c_out  # 1x1 projection with bias
            c = c_out
    return total + c * n_cls + n_cls


def test_parameter_count_matches_spec():
    assert count(ResNet20(1, 10)) == 272_090  # the authors' count on MNIST (docs/ntk.md)
    for c_in, w, k in [(3, 16, 10), (1, 8, 10), (3, 4, 5)]:
        assert count(ResNet20(c_in, k, width=w, input_size=32)) == expected_count(c_in, w, k)


@pytest.mark.parametrize(("c_in", "size", "width"), [(1, 28, 4), (3, 32, 2), (1, 8, 2)])
def test_features_and_classifier(c_in, size, width):
    net = ResNet20(
        c_in, 7, width=width, input_size=size, generator=torch.Generator().manual_seed(0)
    ).eval()
    x = torch.randn(3, c_in, size, size)
    h = net.features(x)
    assert h.shape == (3, 4 * width)
    assert isinstance(net.classifier, nn.Linear) and net.classifier.bias is not None
    assert find_classifier(net) is net.classifier
    torch.testing.assert_close(net(x), net.classifier(h))


def test_downsampling_uses_projection_conv_with_bias():
    net = ResNet20(1, 10, width=4)
    projections = [b.shortcut for b in net.blocks if isinstance(b.shortcut, nn.Conv2d)]
    assert len(projections) == 2
    assert all(
        p.kernel_size == (1, 1) and p.stride == (2, 2) and p.bias is not None for p in projections
    )
    convs3 = [m for m in net.modules() if isinstance(m, nn.Conv2d) and m.kernel_size == (3, 3)]
    assert len(convs3) == 19 and all(c.bias is None for c in convs3)
    bns = [m for m in net.modules() if isinstance(m, nn.BatchNorm2d)]
    assert len(bns) == 19 and all(b.momentum == 0.01 for b in bns)
    # spatial size: 28 -> 14 -> 7 before pooling
    feats = net.blocks(net.stem(torch.randn(1, 1, 28, 28)))
    assert feats.shape == (1, 16, 7, 7)


def test_same_generator_same_weights():
    a = ResNet20(1, 3, width=2, init="lecun-normal", generator=torch.Generator().manual_seed(5))
    b = ResNet20(1, 3, width=2, init="lecun-normal", generator=torch.Generator().manual_seed(5))
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"width": 0}, "width"),
        ({"in_channels": 0}, "in_channels"),
        ({"input_size": 2}, "input_size"),
        ({"bn_momentum": 1.5}, "bn_momentum"),
        ({"init": "zeros"}, "scheme"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        ResNet20(**kwargs)


def test_wrong_input_shape_is_rejected():
    net = ResNet20(1, 10, width=2)
    with pytest.raises(ValueError, match=r"\(n, 1, 28, 28\)"):
        net(torch.randn(2, 3, 28, 28))
