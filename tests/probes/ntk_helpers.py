"""Shared by the NTK tests: an independent slow oracle, mode views and test models."""

import torch
from torch import nn

from ncdynamics.models import MLP, ResNet20

MODES = ("full", "diagonal", "trace")
METHODS = ("layerwise", "jacobian", "ntk-vp")


def slow_ntk(model, x, x2=None, *, output=lambda m, xx: m(xx)):
    """Independent oracle: per-sample, per-output autograd.grad and explicit dot products."""
    x2 = x if x2 is None else x2
    was = model.training
    model.eval()
    params = []
    for p in model.parameters():  # parameters() lists a shared parameter once
        if p.requires_grad:
            params.append(p)

    def grads(xs):
        rows = []
        for i in range(len(xs)):
            out = output(model, xs[i : i + 1])[0]
            row = []
            for a in range(out.shape[0]):
                g = torch.autograd.grad(out[a], params, retain_graph=True, allow_unused=True)
                row.append(
                    [
                        torch.zeros_like(p) if gi is None else gi
                        for gi, p in zip(g, params, strict=True)
                    ]
                )
            rows.append(row)
        return rows

    g1, g2 = grads(x), grads(x2)
    n1, n2, o = len(g1), len(g2), len(g1[0])
    k = torch.zeros(n1, n2, o, o, dtype=x.dtype)
    for i in range(n1):
        for j in range(n2):
            for a in range(o):
                for b in range(o):
                    k[i, j, a, b] = sum(
                        float((u * v).sum()) for u, v in zip(g1[i][a], g2[j][b], strict=True)
                    )
    model.train(was)
    return k


def as_mode(k_full, mode):
    if mode == "full":
        return k_full
    diag = torch.diagonal(k_full, dim1=2, dim2=3).permute(2, 0, 1)  # (O, n1, n2)
    return diag if mode == "diagonal" else diag.sum(0)


class ConvBN(nn.Module):
    """Conv + BN (eval, non-trivial running stats) + Linear on a 3-D input + head."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.bn = nn.BatchNorm2d(3)
        self.seq = nn.Linear(4, 4)  # applied to (n, 12, 4): a >2-D input
        self.fc = nn.Linear(48, 5)
        self.classifier = nn.Linear(5, 3)
        with torch.no_grad():
            self.bn.running_mean.uniform_(-0.5, 0.5)
            self.bn.running_var.uniform_(0.5, 2.0)
            self.bn.weight.uniform_(0.5, 1.5)
            self.bn.bias.uniform_(-0.2, 0.2)

    def features(self, x):
        h = torch.tanh(self.bn(self.conv(x)))  # (n, 3, 4, 4)
        h = self.seq(h.reshape(len(x), 12, 4))  # (n, 12, 4)
        return torch.tanh(self.fc(h.flatten(1)))

    def forward(self, x):
        return self.classifier(self.features(x))


class Shared(nn.Module):
    """One Linear applied twice, two modules with a tied weight, and a raw parameter."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4, bias=False)
        self.c = nn.Linear(4, 4, bias=False)
        self.c.weight = self.b.weight
        self.scale = nn.Parameter(torch.tensor([1.3, 0.7, 1.1]))
        self.head = nn.Linear(4, 3)

    def forward(self, x):
        h = torch.tanh(self.a(torch.tanh(self.a(x))))
        h = torch.tanh(self.c(torch.tanh(self.b(h))))
        return self.head(h) * self.scale


def make(name):
    g = torch.Generator().manual_seed(3)
    if name == "mlp":
        return MLP(5, 3, depth=2, width=6, activation="tanh", generator=g), (5,)
    if name == "convbn":
        torch.manual_seed(3)
        return ConvBN(), (2, 4, 4)
    if name == "shared":
        torch.manual_seed(3)
        return Shared(), (4,)
    if name == "resnet":
        m = ResNet20(1, 3, width=2, input_size=8, generator=g)
        with torch.no_grad():
            for mod in m.modules():
                if isinstance(mod, nn.BatchNorm2d):
                    mod.running_var.uniform_(0.5, 2.0, generator=g)
        return m, (1, 8, 8)
    raise KeyError(name)
