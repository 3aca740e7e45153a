"""find_classifier and FeatureExtractor: which layer is the classifier, what are its inputs."""

import pytest
import torch
from torch import nn

from ncdynamics.models import MLP, FeatureExtractor, find_classifier


class Plain(nn.Module):
    """No features()/classifier: the head is found as the last Linear or by name."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(6, 5), nn.Tanh())
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        return self.head(self.body(x))


def test_find_classifier_by_attribute_name_and_last_linear():
    mlp = MLP(6, 3, width=4)
    assert find_classifier(mlp) is mlp.classifier
    plain = Plain()
    assert find_classifier(plain) is plain.head
    assert find_classifier(plain, "body.0") is plain.body[0]


@pytest.mark.parametrize(
    "model, layer, match",
    [
        (Plain(), "nope", "`layer` must name a submodule"),
        (nn.Sequential(nn.Tanh()), None, "no Linear layer"),
    ],
)
def test_find_classifier_rejects_what_it_cannot_find(model, layer, match):
    with pytest.raises(ValueError, match=match):
        find_classifier(model, layer)


def test_extractor_uses_features_method_or_a_hook_with_the_same_result():
    torch.manual_seed(0)
    mlp = MLP(6, 3, width=4)
    x = torch.randn(7, 6)
    h, logits = FeatureExtractor()(mlp, x)
    h_hook, logits_hook = FeatureExtractor(layer="classifier")(mlp, x)
    torch.testing.assert_close(h, mlp.features(x))
    torch.testing.assert_close(logits, mlp(x))
    torch.testing.assert_close(h_hook, h)
    torch.testing.assert_close(logits_hook, logits)


def test_extractor_on_a_plain_module_and_an_output_map():
    plain = Plain()
    x = torch.randn(4, 6)
    h, out = FeatureExtractor(output=lambda y: 2 * y)(plain, x)
    torch.testing.assert_close(h, plain.body(x))
    torch.testing.assert_close(out, 2 * plain(x))


def test_extractor_reports_a_classifier_that_was_not_called():
    class Skips(Plain):
        def forward(self, x):
            return self.body(x)

    with pytest.raises(ValueError, match="not called"):
        FeatureExtractor(layer="head")(Skips(), torch.randn(2, 6))
