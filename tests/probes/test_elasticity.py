"""Elasticity probe: closed form for a linear model, locality, protocol, no side effects."""

import numpy as np
import pytest
import torch

from ncdynamics.models.lenet import LeNet
from ncdynamics.probes import ProbeInput, make_probe
from ncdynamics.probes.elasticity import measure_elasticity


def _linear_setup(float64=True):
    gen = torch.Generator().manual_seed(0)
    model = torch.nn.Linear(4, 3).double()
    x = torch.randn(9, 4, generator=gen, dtype=torch.float64)
    y = torch.tensor([0, 0, 0, 1, 1, 1, 2, 2, 2])
    return model, x, y


def test_linear_model_impact_matches_closed_form(float64_torch):
    # logits = W x + b: one step on z_j moves f(x_i) by -lr (x_i.x_j + 1)(softmax_j - e_yj)
    model, x, y = _linear_setup()
    res = measure_elasticity(model, x, y, lr=1e-3, sources=[0, 4, 8])
    with torch.no_grad():
        g = torch.softmax(model(x), 1) - torch.nn.functional.one_hot(y, 3)
    for a, j in enumerate([0, 4, 8]):
        want = -((x @ x[j] + 1)[:, None] * g[j][None]).numpy()
        np.testing.assert_allclose(res.impacts[a], want, rtol=1e-9, atol=1e-12)


def test_callers_model_is_not_modified():
    model = LeNet(1, 3, generator=torch.Generator().manual_seed(0))
    before = [p.detach().clone() for p in model.parameters()]
    x = torch.rand(6, 1, 32, 32)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    res = measure_elasticity(model, x, y, lr=0.1, n_sources_per_class=1, target="features")
    assert res.impacts.shape == (3, 6, 84)
    for p, q in zip(model.parameters(), before, strict=True):
        assert torch.equal(p, q)


def test_orthogonal_classes_are_locally_elastic(float64_torch):
    # class means along orthogonal axes: same-class inner products dominate
    gen = torch.Generator().manual_seed(1)
    mu = 3 * torch.eye(3, 6, dtype=torch.float64)
    y = torch.arange(3).repeat_interleave(8)
    x = mu[y] + 0.1 * torch.randn(24, 6, generator=gen, dtype=torch.float64)
    model = torch.nn.Linear(6, 3).double()
    res = measure_elasticity(model, x, y, lr=1e-3, n_sources_per_class=3)
    assert res.ratio > 3.0
    assert res.magnitude.shape == (9, 24)


def test_recorder_probe_protocol():
    model = LeNet(1, 3, generator=torch.Generator().manual_seed(0))
    x = torch.rand(6, 1, 32, 32)
    y = torch.tensor([0, 0, 1, 1, 2, 2])
    with torch.no_grad():
        logits = model(x)
    probe = make_probe("elasticity", lr=0.01, n_sources_per_class=2)
    out = probe(ProbeInput(model, x, y, model.features(x), logits, model.classifier, 3))
    assert set(out.scalars) == {"elasticity/same", "elasticity/other", "elasticity/ratio"}
    assert out.arrays["impacts"].shape == (6, 6, 3)
    assert np.isfinite(out.scalars["elasticity/ratio"])


@pytest.mark.parametrize(
    "kw, match",
    [({"lr": 0.0}, "lr"), ({"target": "weights"}, "target"), ({"sources": [99]}, "sources")],
)
def test_bad_input_is_rejected(kw, match):
    model, x, y = _linear_setup()
    with pytest.raises(ValueError, match=match):
        measure_elasticity(model.float(), x.float(), y, **kw)
