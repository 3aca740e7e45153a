"""Pair observables, distance matrices, Taylor terms and the pair probe (O9, O10)."""

import numpy as np
import pytest
import torch

from ncdynamics.models import MLP
from ncdynamics.models.table1 import Table1Net
from ncdynamics.probes import ProbeInput, make_probe
from ncdynamics.probes import geometry as geo


def _net(seed=0, out=1, **kw):
    gen = torch.Generator().manual_seed(seed)
    return Table1Net(3, out, depth=4, width=32, gain=1.3, generator=gen, **kw)


def test_loss_identity_is_exact_on_a_real_network(rng):
    # O9: L = |ybar - m|^2 / 2 + (w + (Y - b)/2) / 4 for any net and two points
    net = _net(out=3)
    x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
    t = rng.normal(size=(2, 3))
    obs = geo.pair_observables(net, x, t)
    m, Y = 0.5 * (t[0] + t[1]), float(np.sum((t[1] - t[0]) ** 2))
    rhs = 0.5 * np.sum((obs.ybar - m) ** 2) + 0.25 * (obs.w + 0.5 * (Y - obs.b))
    assert obs.loss == pytest.approx(rhs, rel=1e-5)


def test_one_d_output_records_lie_on_manifold(rng):
    # O10 on measured records: (b - w)^2 = b Y
    net = _net(out=1)
    for _ in range(3):
        x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
        t = rng.normal(size=(2, 1))
        obs = geo.pair_observables(net, x, t)
        Y = float((t[1, 0] - t[0, 0]) ** 2)
        assert (obs.b - obs.w) ** 2 == pytest.approx(obs.b * Y, rel=1e-5)


def test_default_layer_is_the_middle_post_activation(rng):
    net = _net()
    x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
    hidden, _ = net.hidden_layers(x)
    obs = geo.pair_observables(net, x, np.zeros((2, 1)))
    assert obs.a == pytest.approx(float(((hidden[1][1] - hidden[1][0]) ** 2).sum()), rel=1e-6)


def test_mlp_of_the_zoo_is_supported(rng):
    net = MLP(3, 2, depth=4, width=8)
    x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
    h, out = geo.hidden_and_output(net, x, layer=4)
    torch.testing.assert_close(h, net.features(x))
    torch.testing.assert_close(out, net(x))
    with pytest.raises(ValueError, match="layer"):
        geo.hidden_and_output(net, x, layer=5)


def test_pair_observables_are_measured_in_eval_mode(rng):
    net = _net(dropout=0.5)
    net.train()
    x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
    a1 = geo.pair_observables(net, x, np.zeros((2, 1))).a
    a2 = geo.pair_observables(net, x, np.zeros((2, 1))).a
    assert a1 == a2 and net.training


def test_squared_distances_match_loop(rng):
    z = rng.normal(size=(6, 4))
    d = geo.squared_distances(z)
    loop = np.array([[np.sum((z[i] - z[j]) ** 2) for j in range(6)] for i in range(6)])
    np.testing.assert_allclose(d, loop, rtol=1e-10, atol=1e-12)
    assert np.all(np.diag(d) == 0)


@pytest.mark.parametrize("method", ["difference", "autodiff"])
def test_taylor_terms_on_quadratic_map(float64_torch, method):
    # f(x) = A x + (x.x) c: first term |A v + 2 (m.v) c|, second |(v.v) c|
    A = torch.randn(3, 2, dtype=torch.float64)
    c = torch.tensor([1.0, -2.0, 0.5], dtype=torch.float64)

    def f(x):
        return A @ x + (x @ x) * c

    xi, xj = torch.randn(4, 2, dtype=torch.float64), torch.randn(4, 2, dtype=torch.float64)
    tt = geo.taylor_terms(f, xi, xj, method=method)
    m, v = 0.5 * (xi + xj), 0.5 * (xj - xi)
    first = torch.linalg.vector_norm(v @ A.T + 2 * (m * v).sum(1, keepdim=True) * c, dim=1)
    second = (v * v).sum(1) * torch.linalg.vector_norm(c)
    np.testing.assert_allclose(tt.first, first.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tt.second, second.numpy(), rtol=1e-12)
    np.testing.assert_allclose(tt.ratio, (first / second).numpy(), rtol=1e-12)


def test_pair_alignment_probe_records_scalars(rng):
    net = _net(out=2)
    x = torch.tensor(rng.normal(size=(5, 3)), dtype=torch.float32)
    y = torch.tensor([0, 1, 1, 0, 1])
    probe = make_probe("pair_alignment", pair=(0, 2))
    out = probe(ProbeInput(net, x, y, None, None, None, 2))
    direct = geo.pair_observables(net, x[[0, 2]], np.eye(2)[[0, 1]])
    assert out.scalars["pair_a"] == pytest.approx(float(direct.a))
    assert out.scalars["pair_w"] == pytest.approx(direct.w)
    np.testing.assert_allclose(out.arrays["pair_ybar"], direct.ybar)
    dx = (x[2] - x[0]).double()
    assert out.scalars["pair_X"] == pytest.approx(float(dx @ dx))
    assert out.scalars["pair_Y"] == pytest.approx(2.0)  # one-hot targets of classes 0 and 1


def test_bad_inputs_are_rejected():
    net = _net()
    with pytest.raises(ValueError, match="x_pair"):
        geo.pair_observables(net, torch.zeros(3, 3), np.zeros((3, 1)))
    with pytest.raises(ValueError, match="targets"):
        geo.pair_observables(net, torch.zeros(2, 3), np.zeros((2, 2)))
    with pytest.raises(TypeError, match=r"hidden_layers\(x, pre_activation=False\).*among 0\."):
        geo.hidden_and_output(
            torch.nn.Sequential(torch.nn.Linear(3, 1)), torch.zeros(2, 3), layer=1
        )


def _sequential():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Linear(3, 8),
        torch.nn.ReLU(),
        torch.nn.Linear(8, 8),
        torch.nn.Tanh(),
        torch.nn.Linear(8, 2),
    )


def test_a_layer_name_takes_that_modules_output_on_any_module(rng):
    net = _sequential()
    x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
    h, out = geo.hidden_and_output(net, x, layer="1")
    torch.testing.assert_close(h, net[1](net[0](x)))
    torch.testing.assert_close(out, net(x))
    obs = geo.pair_observables(net, x, np.eye(2), layer="3")
    h3 = net[3](net[2](net[1](net[0](x))))
    assert obs.a == pytest.approx(float(((h3[1] - h3[0]) ** 2).sum()), rel=1e-6)


def test_the_default_layer_of_a_plain_module_is_the_classifiers_input(rng):
    net = _sequential()
    x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
    h, _ = geo.hidden_and_output(net, x)
    torch.testing.assert_close(h, net[:4](x))


def test_a_table1_net_takes_module_names_too(rng):
    net = _net()
    x = torch.tensor(rng.normal(size=(2, 3)), dtype=torch.float32)
    h, _ = geo.hidden_and_output(net, x, layer="layers.1")  # pre-activation of layer 2
    hidden, _ = net.hidden_layers(x, pre_activation=True)
    torch.testing.assert_close(h, hidden[1])


def test_pair_alignment_probe_works_on_a_plain_sequential(rng):
    net = _sequential()
    x = torch.tensor(rng.normal(size=(5, 3)), dtype=torch.float32)
    y = torch.tensor([0, 1, 1, 0, 1])
    out = make_probe("pair_alignment", pair=(0, 2), layer="3")(
        ProbeInput(net, x, y, None, None, None, 2)
    )
    direct = geo.pair_observables(net, x[[0, 2]], np.eye(2)[[0, 1]], layer="3")
    assert out.scalars["pair_a"] == pytest.approx(float(direct.a))


@pytest.mark.parametrize(
    ("layer", "options", "error", "match"),
    [
        ("fc", {}, ValueError, r"`layer` must name a module.*got 'fc'.*0, 1, 2, 3, 4"),
        ("3", {"pre_activation": True}, ValueError, "pre_activation"),
        (1.5, {}, TypeError, "`layer` must be a module name"),
    ],
)
def test_bad_layer_names_are_refused_with_the_valid_names(layer, options, error, match):
    with pytest.raises(error, match=match):
        geo.hidden_and_output(_sequential(), torch.zeros(2, 3), layer=layer, **options)


def test_a_module_not_called_in_forward_is_named():
    class WithSpare(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.unused = _sequential(), torch.nn.ReLU()

        def forward(self, x):
            return self.body(x)

    net = WithSpare()
    with pytest.raises(ValueError, match="'unused' was not called"):
        geo.hidden_and_output(net, torch.zeros(2, 3), layer="unused")


def test_taylor_difference_sees_kinks_that_autodiff_misses(float64_torch):
    def f(x):
        return torch.nn.functional.leaky_relu(x, 0.01)

    xi, xj = -torch.ones(1, 3, dtype=torch.float64), 2 * torch.ones(1, 3, dtype=torch.float64)
    assert geo.taylor_terms(f, xi, xj, method="autodiff").second[0] == 0.0
    assert geo.taylor_terms(f, xi, xj).second[0] > 0.1
