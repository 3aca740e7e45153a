"""The Table 1 network family: layers, skips, conv variant, init, homogeneity (O13, O16)."""

import math

import numpy as np
import pytest
import torch

from ncdynamics.models.table1 import TABLE1_ACTIVATIONS, Table1Net, authors_layer, middle_layer


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("activation", TABLE1_ACTIVATIONS)
def test_hidden_layers_shapes_and_forward(activation):
    net = Table1Net(3, 2, depth=4, width=16, activation=activation, generator=_gen())
    x = torch.randn(5, 3, generator=_gen(1))
    hidden, out = net.hidden_layers(x)
    assert len(hidden) == 4 and all(h.shape == (5, 16) for h in hidden)
    torch.testing.assert_close(out, net(x))
    torch.testing.assert_close(net.features(x), hidden[-1])
    torch.testing.assert_close(net.decode_from(hidden[1], 2), out)


def test_middle_layer():
    assert [middle_layer(d) for d in (1, 2, 4, 10, 20)] == [1, 1, 2, 5, 10]


def test_xavier_init_std_and_zero_bias():
    net = Table1Net(1, 1, depth=3, width=400, gain=0.7, generator=_gen())
    w = net.layers[1].weight
    assert float(w.std()) == pytest.approx(0.7 * math.sqrt(2 / 800), rel=0.02)
    assert all(float(m.bias.abs().max()) == 0 for m in net.layers)


def test_skip_two_back_adds_layer_two_before():
    net = Table1Net(2, 1, depth=5, width=8, skip="two-back", generator=_gen())
    x = torch.randn(3, 2, generator=_gen(2))
    hidden, _ = net.hidden_layers(x)
    pre, _ = net.hidden_layers(x, pre_activation=True)
    act = torch.nn.LeakyReLU()
    torch.testing.assert_close(hidden[1], act(pre[1]))  # layer 2: no skip
    torch.testing.assert_close(hidden[2], act(pre[2]) + hidden[0])
    torch.testing.assert_close(hidden[4], act(pre[4]) + hidden[2])
    res = Table1Net(2, 1, depth=5, width=8, skip="residual", generator=_gen())
    h, _ = res.hidden_layers(x)
    p, _ = res.hidden_layers(x, pre_activation=True)
    torch.testing.assert_close(h[3], act(p[3]))  # layer 4: no skip in residual blocks
    with pytest.raises(ValueError, match="skip"):
        net.decode_from(hidden[1], 2)


def test_conv_variant_matches_explicit_convolution():
    net = Table1Net(1, 1, depth=3, width=40, conv=True, channels=4, kernel_size=3, generator=_gen())
    x = torch.randn(2, 1, generator=_gen(3))
    hidden, out = net.hidden_layers(x)
    conv = net.layers[1].conv
    z = torch.nn.functional.conv1d(hidden[0].view(2, 4, 10), conv.weight, conv.bias, padding=1)
    torch.testing.assert_close(hidden[1], torch.nn.LeakyReLU()(z.flatten(1)))
    assert out.shape == (2, 1)


def test_dropout_only_in_training_mode():
    net = Table1Net(2, 1, depth=2, width=64, dropout=0.5, generator=_gen())
    x = torch.randn(4, 2, generator=_gen(4))
    net.eval()
    torch.testing.assert_close(net(x), net(x))
    net.train()
    torch.manual_seed(0)
    assert not torch.allclose(net(x), net(x))


def test_leaky_relu_net_is_positively_homogeneous_at_init():
    # O13: zero biases -> h(-0.5) = 0.5 h(-1) exactly
    net = Table1Net(1, 1, depth=20, width=100, generator=_gen())
    hidden, out = net.hidden_layers(torch.tensor([[-1.0], [-0.5]]))
    h = hidden[middle_layer(20) - 1]
    torch.testing.assert_close(h[1], 0.5 * h[0], rtol=1e-6, atol=0)
    torch.testing.assert_close(out[1], 0.5 * out[0], rtol=1e-5, atol=0)


def test_depth_scaling_of_initial_distance():
    # O16: log a_n(0) linear in n with slope log(g^2 (1 + alpha^2) / 2), 10 seeds
    x = torch.tensor([[-1.0], [-0.5]])
    logs = []
    for seed in range(10):
        net = Table1Net(1, 1, depth=20, width=200, generator=_gen(seed))
        with torch.no_grad():
            hidden, _ = net.hidden_layers(x)
        logs.append([math.log(float(((h[1] - h[0]) ** 2).sum())) for h in hidden])
    mean = np.mean(logs, axis=0)
    n = np.arange(1, 21)
    slope, icpt = np.polyfit(n, mean, 1)
    r2 = 1 - np.sum((mean - (slope * n + icpt)) ** 2) / np.sum((mean - mean.mean()) ** 2)
    assert r2 > 0.9
    expected = math.log((1 + 0.01**2) / 2)
    assert abs(slope - expected) < 0.25 * abs(expected)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"depth": 0}, "depth"),
        ({"activation": "gelu"}, "activation"),
        ({"skip": "dense"}, "skip"),
        ({"dropout": 1.0}, "dropout"),
        ({"conv": True, "width": 30, "channels": 20}, "channels"),
        ({"gain": 0.0}, "gain"),
    ],
)
def test_bad_arguments_are_rejected(kwargs, match):
    base = {"depth": 2, "width": 40}
    with pytest.raises(ValueError, match=match):
        Table1Net(1, 1, **{**base, **kwargs})


def test_authors_conv_layout_matches_explicit_unpadded_convolutions():
    # loekvanrossem/universality source/models.py CNN: Linear, Conv1d(1->C), (L-1) Conv1d(C->C),
    # Conv1d(C->1), all unpadded, then Linear over the shrunken length
    net = Table1Net(
        1,
        1,
        depth=3,
        width=40,
        conv=True,
        channels=4,
        kernel_size=3,
        conv_layout="authors",
        generator=_gen(),
    )
    assert net.n_hidden == 5
    x = torch.randn(2, 1, generator=_gen(3))
    hidden, out = net.hidden_layers(x)
    act = torch.nn.LeakyReLU()
    h = act(net.layers[0](x)).unsqueeze(1)  # (2, 1, 40)
    for k in range(1, 5):
        c = net.layers[k].conv
        h = act(torch.nn.functional.conv1d(h, c.weight, c.bias))
        torch.testing.assert_close(hidden[k], h.flatten(1))
    assert [t.shape[1] for t in hidden] == [40, 4 * 38, 4 * 36, 4 * 34, 32]
    torch.testing.assert_close(out, net.classifier(h.flatten(1)))
    with pytest.raises(ValueError, match="width"):
        Table1Net(1, 1, depth=3, width=8, conv=True, kernel_size=3, conv_layout="authors")


def test_input_dropout_drops_the_input_in_training_only():
    net = Table1Net(3, 1, depth=1, width=8, dropout=0.5, dropout_input=True, generator=_gen())
    x = torch.ones(200, 3)
    net.train()
    torch.manual_seed(1)
    h = net.drop_input(x)
    assert float((h == 0).float().mean()) == pytest.approx(0.5, abs=0.1)
    net.eval()
    torch.testing.assert_close(net.drop_input(x), x)
    assert isinstance(Table1Net(3, 1, depth=1, width=8, dropout=0.5).drop_input, torch.nn.Identity)


def test_authors_layer_is_the_settings_files_zero_based_index():
    # experiments/model_settings/*.txt: hidden_layer = L // 2 into the list of activations
    assert [authors_layer(d) for d in (1, 2, 4, 20)] == [1, 2, 3, 11]
    # Dropout net: Dropout and Linear outputs alternate in the list; index 5 -> 3rd Linear
    assert authors_layer(10, dropout=True) == 3
