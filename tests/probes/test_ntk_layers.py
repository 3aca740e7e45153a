"""Oracles for the layer-structured NTK path: deferred conv Jacobians, pieces formed per
output, chunks written in place (issue 3, performance round)."""

import pytest
import torch
from ntk_helpers import MODES, as_mode, make, slow_ntk
from torch import nn

from ncdynamics.models import MLP
from ncdynamics.probes import _fast_ntk_layers
from ncdynamics.probes._fast_ntk_contract import contract
from ncdynamics.probes._ntk_output import SelectedOutput
from ncdynamics.probes._ntk_plan import SLACK
from ncdynamics.probes.ntk import _Engine, empirical_ntk
from ncdynamics.probes.ntk_reference import reference_ntk


class ConvVariety(nn.Module):
    """Strided and dilated conv with bias, a conv whose weight is frozen but bias trainable,
    a bias-free conv, BatchNorm2d and BatchNorm1d in eval mode, a residual sum, a head."""

    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 3, 3, stride=2, padding=2, dilation=2)  # 7x7 -> 4x4
        self.bn = nn.BatchNorm2d(3)
        self.c2 = nn.Conv2d(3, 3, 3, padding=1, bias=False)
        self.c3 = nn.Conv2d(3, 3, 1)
        self.c3.weight.requires_grad_(False)
        self.fc = nn.Linear(48, 6)
        self.bn1 = nn.BatchNorm1d(6)
        self.classifier = nn.Linear(6, 4)
        with torch.no_grad():
            for bn in (self.bn, self.bn1):
                bn.running_mean.uniform_(-0.5, 0.5)
                bn.running_var.uniform_(0.5, 2.0)
                bn.weight.uniform_(0.5, 1.5)
                bn.bias.uniform_(-0.2, 0.2)

    def forward(self, x):
        h = torch.tanh(self.bn(self.c1(x)))  # (n, 3, 4, 4)
        h = torch.tanh(self.c3(h + self.c2(h)))  # residual sum
        h = torch.tanh(self.bn1(self.fc(h.flatten(1))))  # (n, 6)
        return self.classifier(h)


def _plan(model, x):
    model.eval()
    wrapped = SelectedOutput(model, "logits", None)
    trainable = [p for p in wrapped.parameters() if p.requires_grad]
    return wrapped, _fast_ntk_layers.plan_layers(wrapped, wrapped, x[:2], trainable)


def test_every_conv_variety_is_structured_and_split_as_documented(float64_torch):
    torch.manual_seed(1)
    model = ConvVariety()
    _, plan = _plan(model, torch.randn(2, 2, 7, 7))
    kinds = {name: plan.modules.get(m) for name, m in model.named_children()}
    assert kinds == {
        "c1": "conv",
        "bn": "bn",
        "c2": "conv",
        "c3": "conv",
        "fc": "factored",
        "bn1": "bn",
        "classifier": "factored",
    }
    # deferred: the weights of c1 and c2 (c3's weight is frozen); formed per output: the
    # biases of c1 and c3 and both BNs' weight and bias
    assert plan.g_deferred == 3 * 16 + 3 * 16
    assert plan.p_deferred_max == max(3 * 2 * 9, 3 * 3 * 9)
    assert plan.n_small == 3 + 3 + 2 * 3 + 2 * 6


@pytest.mark.parametrize("cross", [False, True])
def test_conv_variety_matches_slow_oracle_float64(float64_torch, cross):
    torch.manual_seed(1)
    model = ConvVariety()
    x = torch.randn(4, 2, 7, 7)
    x2 = torch.randn(3, 2, 7, 7) if cross else None
    ref = slow_ntk(model, x, x2)
    for mode in MODES:
        for method in ("layerwise", "jacobian"):
            k = empirical_ntk(model, x, x2, mode=mode, method=method)
            torch.testing.assert_close(k, as_mode(ref, mode), rtol=1e-10, atol=1e-10)


def test_deferred_weight_jacobian_equals_per_sample_autograd(float64_torch):
    torch.manual_seed(1)
    model = ConvVariety().eval()
    x = torch.randn(3, 2, 7, 7)
    wrapped, plan = _plan(model, x)
    chunk = _fast_ntk_layers.structured_chunk(plan, wrapped, x, torch.arange(4))
    by_module = {d.module: d.materialise() for d in chunk.deferred}  # (n, o, p)
    assert set(by_module) == {model.c1, model.c2}
    for m, jac in by_module.items():
        for i in range(3):
            out = model(x[i : i + 1])[0]
            for a in range(4):
                (g,) = torch.autograd.grad(out[a], m.weight, retain_graph=True)
                torch.testing.assert_close(jac[i, a], g.reshape(-1), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("n_chunk", "o_chunk"), [(1, 3), (2, 1), (3, 2)])
def test_chunked_blocks_equal_one_chunk_on_resnet(float64_torch, n_chunk, o_chunk):
    # Stitching chunks of samples and outputs into one block (deferred gradients and inputs,
    # per-output columns, factors) gives the same kernel as one chunk, in every mode.
    model, shape = make("resnet")
    x = torch.randn(5, *shape)
    wrapped, plan = _plan(model, x)
    eng = _Engine(wrapped, plan, 3)
    idx = torch.arange(3)
    whole = eng.block(x, idx, 5, 3)
    parts = eng.block(x, idx, n_chunk, o_chunk)
    assert len(whole.deferred) == len(parts.deferred) > 0
    for mode in MODES:
        torch.testing.assert_close(
            contract(parts, parts, mode), contract(whole, whole, mode), rtol=1e-12, atol=1e-12
        )


def test_resnet_float32_agrees_with_float64_oracle():
    model, shape = make("resnet")
    x = torch.randn(4, *shape)
    for mode in MODES:
        k32 = empirical_ntk(model, x, mode=mode)
        ref = empirical_ntk(model.double(), x.double(), mode=mode, method="jacobian").float()
        model.float()
        torch.testing.assert_close(k32, ref, rtol=5e-3, atol=5e-3 * float(ref.abs().max()))


@pytest.mark.parametrize("extra", [10**9, 1_000_000, 600_000, 400_000, 250_000])
def test_resnet_budget_chunks_equal_unchunked_float64(float64_torch, extra):
    # From one block in one chunk down to blocks of one sample and two outputs (the plans
    # these budgets give on this model, checked by hand), cross and symmetric kernels.
    model, shape = make("resnet")
    x, x2 = torch.randn(6, *shape), torch.randn(4, *shape)
    for mode in MODES:
        for second in (x2, None):
            ref = empirical_ntk(model, x, second, mode=mode, method="jacobian")
            k = empirical_ntk(
                model, x, second, mode=mode, method="layerwise", memory_budget=SLACK + extra
            )
            torch.testing.assert_close(k, ref, rtol=1e-10, atol=1e-10)


class Branches(nn.Module):
    """Parallel branches: the layers of the second branch are not upstream of the first
    layer called, so the backward pass must ask for them explicitly; a third branch feeds
    nothing into the output and a BN layer is never called (zero contributions)."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 3)
        self.unused = nn.Linear(4, 2)
        self.b = nn.Conv2d(1, 2, 2)  # on the input viewed as (n, 1, 2, 2)
        self.bn = nn.BatchNorm1d(8)
        self.head = nn.Linear(5, 3)

    def forward(self, x):
        ha = torch.tanh(self.a(x))  # called first
        self.unused(x)
        hb = torch.tanh(self.b(x.reshape(len(x), 1, 2, 2))).flatten(1)  # (n, 2)
        return self.head(torch.cat([ha, hb], 1))


def test_branches_not_upstream_of_the_first_layer_are_reached(float64_torch):
    torch.manual_seed(2)
    model = Branches()
    x, x2 = torch.randn(4, 4), torch.randn(3, 4)
    ref = slow_ntk(model, x, x2)
    for mode in MODES:
        k = empirical_ntk(model, x, x2, mode=mode, method="layerwise")
        torch.testing.assert_close(k, as_mode(ref, mode), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(
    ("kernel", "dilation", "padding", "stride"),
    [(3, 1, 1, 1), ((3, 2), (2, 1), (2, 0), (2, 3)), (1, 1, 0, 2), (5, (1, 2), (0, 3), (1, 2))],
)
def test_unfold_into_workspace_equals_f_unfold(float64_torch, kernel, dilation, padding, stride):
    conv = nn.Conv2d(2, 3, kernel, stride=stride, padding=padding, dilation=dilation)
    u = torch.randn(3, 2, 10, 11)
    ref = torch.nn.functional.unfold(u, kernel, dilation=dilation, padding=padding, stride=stride)
    work = torch.full((ref.numel() + 7,), float("nan"))  # larger than needed, stale content
    cols = _fast_ntk_layers._unfold(conv, u, work)  # (n, S, K)
    assert torch.equal(cols, ref.transpose(1, 2))


class FormedConvs(nn.Module):
    """Convs whose unfolded input is narrower than their output positions (K <= S): strided
    and dilated with bias, bias-free, and one with a frozen bias; then a deferred conv."""

    def __init__(self):
        super().__init__()
        self.a = nn.Conv2d(1, 3, 3, stride=2, padding=2, dilation=2)  # 12x12 -> 6x6, K=9
        self.b = nn.Conv2d(3, 2, 2, bias=False)  # 6x6 -> 5x5, K=12 <= 25
        self.c = nn.Conv2d(2, 2, 1)  # 5x5, K=2
        self.c.bias.requires_grad_(False)
        self.d = nn.Conv2d(2, 4, 3)  # 5x5 -> 3x3, K=18 > 9: deferred
        self.head = nn.Linear(36, 3)

    def forward(self, x):
        h = torch.tanh(self.c(torch.tanh(self.b(torch.tanh(self.a(x))))))
        return self.head(torch.tanh(self.d(h)).flatten(1))


@pytest.mark.parametrize("mode", ["full", "diagonal", "trace"])
def test_convs_formed_during_the_passes_match_the_reference(float64_torch, mode):
    torch.manual_seed(3)
    model = FormedConvs()
    x, x2 = torch.randn(4, 1, 12, 12), torch.randn(3, 1, 12, 12)
    _, plan = _plan(model, x)
    kinds = {name: plan.modules.get(m) for name, m in model.named_children()}
    assert kinds == {
        "a": "conv-formed",
        "b": "conv-formed",
        "c": "conv-formed",
        "d": "conv",
        "head": "factored",
    }
    assert plan.n_small == (27 + 3) + 24 + 4 + 4  # a: weight + bias; b; c: weight; d: bias
    for other in (None, x2):
        torch.testing.assert_close(
            empirical_ntk(model, x, other, mode=mode, method="layerwise"),
            reference_ntk(model, x, other, mode=mode),
            rtol=1e-10,
            atol=1e-12,
        )


# --- the chain of factored Linear layers (one pass of the whole block through the chain) --


class _Residual(nn.Module):
    """Linear layers whose first output also reaches the head by a skip connection."""

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.head = nn.Linear(6, 5), nn.Linear(5, 5), nn.Linear(5, 3)

    def forward(self, x):
        h1 = torch.tanh(self.fc1(x))
        return self.head(torch.tanh(self.fc2(h1)) + h1)


class _Softmaxed(nn.Module):
    """Linear layers joined by a softmax: same shapes as a chain, not elementwise."""

    def __init__(self):
        super().__init__()
        self.fc1, self.head = nn.Linear(6, 5), nn.Linear(5, 3)

    def forward(self, x):
        return self.head(torch.softmax(self.fc1(x), dim=1))


class _Dropped(nn.Module):
    """Linear layers joined by dropout in training mode (elementwise, random mask)."""

    def __init__(self):
        super().__init__()
        self.fc1, self.drop, self.head = nn.Linear(6, 5), nn.Dropout(0.3), nn.Linear(5, 3)

    def forward(self, x):
        return self.head(self.drop(torch.relu(self.fc1(x))))


@pytest.mark.parametrize("activation", ["relu", "tanh", "gelu", "linear"])
def test_an_mlp_is_planned_as_a_chain_and_gives_the_reference_kernel(float64_torch, activation):
    """Linear layers joined by elementwise activations take the chain path (the gradients
    of all outputs pushed through the layers by one GEMM each), with kernels equal to the
    Jacobian-contraction reference in every mode and on two different inputs."""
    torch.manual_seed(7)
    model = MLP(6, 4, depth=3, width=5, activation=activation)
    x, x2 = torch.randn(9, 6), torch.randn(4, 6)
    _, plan = _plan(model, x)
    assert plan.chain
    assert set(plan.modules.values()) == {"factored"}
    for mode in MODES:
        for second in (None, x2):
            k = empirical_ntk(model, x, second, mode=mode)
            ref = reference_ntk(model, x, second, mode=mode)
            torch.testing.assert_close(k, ref, rtol=1e-10, atol=1e-12, msg=mode)


@pytest.mark.parametrize("model_cls", [_Residual, _Softmaxed])
def test_a_skip_connection_or_a_non_elementwise_link_is_not_a_chain(float64_torch, model_cls):
    """The pilot check rejects the chain when the output also depends on a layer's output
    by another path (skip connection) or when the link between two layers is not
    elementwise (softmax); the per-output passes then give the reference kernel."""
    torch.manual_seed(8)
    model = model_cls()
    x = torch.randn(7, 6)
    _, plan = _plan(model, x)
    assert set(plan.modules.values()) == {"factored"} and not plan.chain
    for mode in MODES:
        k = empirical_ntk(model, x, mode=mode)
        torch.testing.assert_close(k, reference_ntk(model, x, mode=mode), rtol=1e-10, atol=1e-12)


def test_the_chain_reads_the_activation_derivative_of_this_call(float64_torch):
    """Dropout in training mode: the chain takes each call's own mask (the derivative of
    the link is read from this call's graph), so one call of the chain path equals the
    per-output passes on the same forward pass (same seed)."""
    torch.manual_seed(9)
    model = _Dropped().train()
    x = torch.randn(8, 6)
    wrapped = SelectedOutput(model, "logits", None)
    trainable = [p for p in wrapped.parameters() if p.requires_grad]
    plan = _fast_ntk_layers.plan_layers(wrapped, wrapped, x[:2], trainable)
    assert plan.chain
    idx = torch.arange(3)
    torch.manual_seed(10)
    chained = _fast_ntk_layers.structured_chunk(plan, wrapped, x, idx)
    plan.chain = False
    torch.manual_seed(10)
    passes = _fast_ntk_layers.structured_chunk(plan, wrapped, x, idx)
    for a, b in zip(chained.factors, passes.factors, strict=True):
        torch.testing.assert_close(a.g, b.g, rtol=1e-12, atol=1e-14)
        assert float(a.g.abs().sum()) > 0


@pytest.mark.parametrize(
    "mode, budget", [("trace", 80_000), ("trace", 240_000), ("diagonal", 240_000)]
)
def test_the_chain_under_a_memory_budget_gives_the_reference_kernel(
    float64_torch, monkeypatch, mode, budget
):
    """Chunks of samples and of outputs (fewer outputs than the net has) each go through
    the chain; the assembled kernel equals the reference."""
    shapes = []
    real = _fast_ntk_layers._chain_gradients

    def spy(mods, ins, outs, f, cots):
        shapes.append(tuple(f.shape))
        return real(mods, ins, outs, f, cots)

    monkeypatch.setattr(_fast_ntk_layers, "_chain_gradients", spy)
    torch.manual_seed(11)
    model = MLP(10, 6, depth=2, width=40)
    x = torch.randn(30, 10)
    k = empirical_ntk(model, x, mode=mode, memory_budget=SLACK + budget)
    torch.testing.assert_close(k, reference_ntk(model, x, mode=mode), rtol=1e-10, atol=1e-12)
    # (the first call is the plan's pilot check, 2 samples and all outputs)
    assert shapes[1:] and all(o < 6 and n < 30 for n, o in shapes[1:])


class _SequenceNet(nn.Module):
    """A Linear applied along a sequence (n, T, d_in) with T, d_in and d_out all different,
    so that the token and feature axes cannot be exchanged unnoticed; then a head."""

    def __init__(self):
        super().__init__()
        self.seq = nn.Linear(3, 4)  # on (n, T=5, 3)
        self.head = nn.Linear(20, 2)

    def forward(self, x):
        return self.head(torch.tanh(self.seq(x)).flatten(1))


def test_a_sequence_linear_layer_gets_the_seq_linear_plan_and_the_reference_kernel(
    float64_torch,
):
    """The plan is asserted, not only the kernel: a wrong weight-Jacobian formula (a
    transpose dropped) is rejected by the plan's self-check and the layer silently leaves the
    fast path, which leaves the kernel right. Here the layer must stay on it."""
    torch.manual_seed(4)
    model = _SequenceNet()
    x = torch.randn(6, 5, 3)
    _, plan = _plan(model, x)
    assert plan.modules.get(model.seq) == "seq-linear"
    assert plan.modules.get(model.head) == "factored"
    # and the formula itself: the per-sample weight Jacobian equals autograd's
    u = x[:2]
    out = model.seq(u)
    g = torch.randn(2, 3, *out.shape[1:])  # three outputs' gradients w.r.t. the layer output
    jac = _fast_ntk_layers.weight_jacobian(model.seq, "seq-linear", u, g)
    for i in range(2):
        for o in range(3):
            want = torch.einsum("td,te->de", g[i, o], u[i]).reshape(-1)
            torch.testing.assert_close(jac[i, o], want, rtol=1e-12, atol=1e-14)
    for mode in MODES:
        torch.testing.assert_close(
            empirical_ntk(model, x, mode=mode),
            reference_ntk(model, x, mode=mode),
            rtol=1e-10,
            atol=1e-12,
        )
