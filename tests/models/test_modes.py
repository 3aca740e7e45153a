"""eval_mode gives every submodule its own mode back (a frozen BatchNorm stays frozen)."""

import pytest
import torch
from torch import nn

from ncdynamics import runs
from ncdynamics.models import eval_mode
from ncdynamics.training import Recorder, loop


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.ReLU())
        self.head = nn.Linear(8, 3)

    def forward(self, x):
        return self.head(self.body(x))


def frozen_bn_net():
    net = Net().train()
    net.body[1].eval()  # the user keeps its running statistics fixed
    return net


def modes(net):
    return [m.training for m in net.modules()]


def test_eval_mode_restores_mixed_modes_even_after_an_error():
    net = frozen_bn_net()
    before = modes(net)
    with eval_mode(net):
        assert not any(modes(net))
    assert modes(net) == before
    with pytest.raises(RuntimeError), eval_mode(net):
        raise RuntimeError("inside")
    assert modes(net) == before


def test_recorder_and_evaluation_leave_a_frozen_batchnorm_frozen(tmp_path):
    net = frozen_bn_net()
    before = modes(net)
    x = torch.randn(30, 4, generator=torch.Generator().manual_seed(0))
    y = torch.arange(30) % 3
    rec = Recorder(runs.create(tmp_path / "r"), x, y, probes=["collapse"], layer="head")
    rec.record(net, 0)
    assert modes(net) == before
    loop._evaluate(net, x, y, "cross-entropy")
    assert modes(net) == before
    stats = net.body[1].running_mean.clone()
    net(x)  # a training-mode forward must leave the frozen statistics alone
    assert before[0] and torch.equal(net.body[1].running_mean, stats)
