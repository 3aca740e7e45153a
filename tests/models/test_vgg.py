"""VGG11-BN / VGG16-BN: parameter counts of the authors' code, shapes, width, errors."""

import pytest
import torch

from ncdynamics.models import VGG, initialize


def _n_params(m):
    return sum(p.numel() for p in m.parameters())


def test_parameter_counts_match_the_paper_architectures():
    assert _n_params(VGG("vgg11", 1)) == 9_622_922
    assert _n_params(VGG("vgg16", 3)) == 15_121_226


def test_features_and_classifier_compose_to_forward():
    gen = torch.Generator().manual_seed(0)
    model = VGG("vgg11", 1, 10, width_multiplier=0.125, generator=gen).eval()
    x = torch.randn(5, 1, 32, 32, generator=gen)
    h = model.features(x)
    assert h.shape == (5, 32)
    assert model.classifier.in_features == 32
    torch.testing.assert_close(model(x), model.classifier(h))


def test_same_generator_gives_same_weights_and_schemes_apply():
    a = VGG(
        "vgg11",
        1,
        width_multiplier=0.125,
        init="lecun-normal",
        generator=torch.Generator().manual_seed(3),
    )
    b = VGG(
        "vgg11",
        1,
        width_multiplier=0.125,
        init="lecun-normal",
        generator=torch.Generator().manual_seed(3),
    )
    for pa, pb in zip(a.parameters(), b.parameters(), strict=True):
        torch.testing.assert_close(pa, pb)
    initialize(a, "he-fan-out", generator=torch.Generator().manual_seed(1))
    conv = a.convs[0]
    assert torch.all(conv.bias == 0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(config="vgg13"), "config"),
        (dict(input_size=28), "divisible by 32"),
        (dict(width_multiplier=0.0), "width_multiplier"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        VGG(**kwargs)


def test_wrong_input_shape_is_rejected():
    model = VGG("vgg11", 1, width_multiplier=0.125)
    with pytest.raises(ValueError, match="`x` must have shape"):
        model.features(torch.zeros(2, 3, 32, 32))
