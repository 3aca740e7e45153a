"""DenseNet40-BC: parameter counts of the authors' code, shapes, width, errors."""

import pytest
import torch

from ncdynamics.models import DenseNetBC


def _n_params(m):
    return sum(p.numel() for p in m.parameters())


def test_parameter_counts_and_feature_size_match_the_spec():
    model = DenseNetBC(1, 10)
    assert _n_params(model) == 96_202
    assert model.classifier.in_features == 132
    assert _n_params(DenseNetBC(1, 10, bn_size=4)) == 175_690


def test_features_and_classifier_compose_to_forward():
    gen = torch.Generator().manual_seed(0)
    model = DenseNetBC(
        1, 10, blocks=(2, 2, 2), width_multiplier=0.5, input_size=8, generator=gen
    ).eval()
    x = torch.randn(4, 1, 8, 8, generator=gen)
    h = model.features(x)
    # growth 6: stem 12, +12 -> 24 -> 12, +12 -> 24 -> 12, +12 -> 24
    assert h.shape == (4, 24)
    torch.testing.assert_close(model(x), model.classifier(h))
    assert torch.all(h >= 0)  # after the final ReLU


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        (dict(blocks=()), "blocks"),
        (dict(growth=0), "growth"),
        (dict(input_size=2), "input_size"),
        (dict(init="glorot"), "scheme"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, match):
    with pytest.raises(ValueError, match=match):
        DenseNetBC(**kwargs)


def test_wrong_input_shape_is_rejected():
    with pytest.raises(ValueError, match="`x` must have shape"):
        DenseNetBC(1, 10, blocks=(1, 1, 1), input_size=8).features(torch.zeros(2, 1, 9, 9))
