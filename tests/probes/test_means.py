import numpy as np
import pytest
import torch

from ncdynamics.models import MLP
from ncdynamics.probes import ClassMeansProbe, ProbeInput, class_means, make_probe


def test_class_means_match_a_loop_over_classes(rng):
    x = rng.standard_normal((30, 5))
    y = rng.integers(0, 3, 30)
    y[:3] = [0, 1, 2]
    want = np.stack([x[y == c].mean(0) for c in range(3)])
    np.testing.assert_allclose(class_means(x, y, 3), want, rtol=1e-13)


def test_class_means_reject_an_absent_class(rng):
    with pytest.raises(ValueError, match="labels"):
        class_means(rng.standard_normal((4, 2)), np.array([0, 0, 1, 1]), 3)


def test_probe_records_logit_and_feature_means():
    gen = torch.Generator().manual_seed(0)
    net = MLP(4, 3, depth=2, width=6, generator=gen)
    x = torch.randn(12, 4, generator=gen)
    y = torch.arange(12) % 3
    with torch.no_grad():
        h, logits = net.features(x), net(x)
    out = make_probe("class_means")(ProbeInput(net, x, y, h, logits, net.classifier, 3))
    np.testing.assert_allclose(
        out.arrays["class_means_logits"], class_means(logits.double(), y.numpy(), 3), rtol=1e-12
    )
    assert out.arrays["class_means_features"].shape == (3, 6)
    only = ClassMeansProbe(features=False)(ProbeInput(net, x, y, h, logits, net.classifier, 3))
    assert set(only.arrays) == {"class_means_logits"}
