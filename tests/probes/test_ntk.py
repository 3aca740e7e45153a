"""Oracles for the empirical NTK engine (oracle O11 and those of issue 3)."""

import numpy as np
import pytest
import torch
from ntk_helpers import METHODS, MODES, as_mode, make, slow_ntk
from torch import nn

from ncdynamics.models import SmallCNN
from ncdynamics.probes import _fast_ntk_layers
from ncdynamics.probes._ntk_output import SelectedOutput
from ncdynamics.probes._ntk_plan import SLACK
from ncdynamics.probes.kernels import logit_ntk_from_features
from ncdynamics.probes.ntk import Method, empirical_ntk


@pytest.mark.parametrize("name", ["mlp", "convbn", "shared"])
@pytest.mark.parametrize("method", METHODS)
def test_methods_match_slow_oracle_float64(float64_torch, name, method):
    model, shape = make(name)
    x, x2 = torch.randn(4, *shape), torch.randn(3, *shape)
    ref = slow_ntk(model, x, x2)
    for mode in MODES:
        k = empirical_ntk(model, x, x2, mode=mode, method=method)
        torch.testing.assert_close(k, as_mode(ref, mode), rtol=1e-10, atol=1e-10)


def test_resnet_methods_agree_float64(float64_torch):
    model, shape = make("resnet")
    x = torch.randn(3, *shape)
    ref = empirical_ntk(model, x, method="jacobian")
    for method in ("layerwise", "ntk-vp"):
        torch.testing.assert_close(
            empirical_ntk(model, x, method=method), ref, rtol=1e-10, atol=1e-10
        )
    ref_h = empirical_ntk(model, x, output="features", mode="diagonal", method="jacobian")
    k_h = empirical_ntk(model, x, output="features", mode="diagonal", method="layerwise")
    torch.testing.assert_close(k_h, ref_h, rtol=1e-10, atol=1e-10)


def test_layerwise_structures_every_resnet_layer(float64_torch):
    model, shape = make("resnet")
    model.eval()
    wrapped = SelectedOutput(model, "logits", None)
    trainable = [p for p in wrapped.parameters()]
    plan = _fast_ntk_layers.plan_layers(wrapped, wrapped, torch.randn(2, *shape), trainable)
    assert plan.param_ids == {id(p) for p in trainable}
    kinds = set(plan.modules.values())
    assert kinds == {"conv", "conv-formed", "bn", "factored"}
    # formed right away: the convs whose unfolded input has no more columns than positions
    for m, kind in plan.modules.items():
        if isinstance(m, torch.nn.Conv2d):
            k = m.in_channels * m.kernel_size[0] * m.kernel_size[1]
            assert (kind == "conv-formed") == (k <= plan_positions(m, model, shape))


def plan_positions(conv, model, shape):
    """Output positions of ``conv`` in a forward pass of ``model`` on one input."""
    seen = []
    handle = conv.register_forward_hook(lambda _m, _a, out: seen.append(out.shape[2:].numel()))
    with torch.no_grad():
        model(torch.randn(1, *shape))
    handle.remove()
    return seen[0]


@pytest.mark.parametrize("method", METHODS)
def test_float32_matches_float64(method):
    model, shape = make("convbn")
    x = torch.randn(4, *shape)
    k32 = empirical_ntk(model, x, method=method)
    ref = slow_ntk(model.double(), x.double()).float()
    model.float()
    torch.testing.assert_close(k32, ref, rtol=5e-3, atol=5e-3 * float(ref.abs().max()))


@pytest.mark.parametrize("output", ["logits", "features"])
def test_ntk_is_symmetric_psd(float64_torch, output):
    model, shape = make("convbn")
    x = torch.randn(5, *shape)
    k = empirical_ntk(model, x, output=output)
    n, _, o, _ = k.shape
    mat = k.permute(0, 2, 1, 3).reshape(n * o, n * o)
    torch.testing.assert_close(mat, mat.T, rtol=1e-12, atol=1e-12)
    assert float(torch.linalg.eigvalsh(mat).min()) > -1e-10 * float(mat.abs().max())


def test_single_linear_layer_feature_kernel_is_exact(float64_torch):
    d, n_feat = 6, 4

    class Lin(nn.Module):
        def __init__(self):
            super().__init__()
            self.body = nn.Linear(d, n_feat)
            self.classifier = nn.Linear(n_feat, 3)

        def features(self, x):
            return self.body(x)

        def forward(self, x):
            return self.classifier(self.features(x))

    x = torch.randn(5, d)
    expected = torch.einsum("ij,pq->ijpq", x @ x.T + 1, torch.eye(n_feat))
    for method in METHODS:
        k = empirical_ntk(Lin(), x, output="features", method=method)
        torch.testing.assert_close(k, expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("mode", MODES)
def test_logit_kernel_equals_rebuilt_from_feature_kernel(float64_torch, mode):
    model, shape = make("convbn")
    x = torch.randn(4, *shape)
    k_f = empirical_ntk(model, x, mode=mode)
    k_h = empirical_ntk(model, x, output="features")
    with torch.no_grad():
        h = model.eval().features(x)
    rebuilt = logit_ntk_from_features(k_h, model.classifier.weight.detach(), h, mode=mode)
    np.testing.assert_allclose(k_f.numpy(), rebuilt, rtol=1e-8, atol=1e-10)


def test_logit_kernel_rebuilt_float32():
    model, shape = make("convbn")
    x = torch.randn(4, *shape)
    k_f = empirical_ntk(model, x)
    k_h = empirical_ntk(model, x, output="features")
    with torch.no_grad():
        h = model.eval().features(x)
    rebuilt = logit_ntk_from_features(k_h, model.classifier.weight.detach(), h)
    np.testing.assert_allclose(
        k_f.numpy(), rebuilt, rtol=1e-4, atol=1e-4 * float(np.abs(rebuilt).max())
    )


def test_batchnorm_eval_buffers_untouched_and_flag_restored(float64_torch):
    model, shape = make("resnet")
    model.train()
    before = {k: v.clone() for k, v in model.named_buffers()}
    x = torch.randn(3, *shape)
    k = empirical_ntk(model, x)
    assert model.training
    for name, buf in model.named_buffers():
        assert torch.equal(buf, before[name]), name
    # Eval mode: the kernel of a sample does not depend on the other samples of the batch.
    k_single = empirical_ntk(model, x[:1])
    torch.testing.assert_close(k[:1, :1], k_single, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_frozen_parameters_are_excluded(float64_torch, method):
    model, shape = make("convbn")
    model.conv.weight.requires_grad_(False)
    model.bn.bias.requires_grad_(False)
    model.fc.weight.requires_grad_(False)
    x = torch.randn(3, *shape)
    torch.testing.assert_close(
        empirical_ntk(model, x, method=method), slow_ntk(model, x), rtol=1e-10, atol=1e-12
    )


def test_shared_parameter_counted_once(float64_torch):
    # y = W (W x): the gradient w.r.t. the shared W sums both uses, once.
    lin = nn.Linear(3, 3, bias=False)
    model = nn.Sequential(lin, lin)
    x = torch.randn(2, 3)
    k = empirical_ntk(model, x, method="layerwise")
    w = lin.weight.detach()

    def jac(xi):  # d(W W x)_a / dW, by hand: e_a (W x)^T + W^T e_a x^T
        return torch.stack(
            [torch.outer(torch.eye(3)[a], w @ xi) + torch.outer(w.T[:, a], xi) for a in range(3)]
        )

    j = torch.stack([jac(xi) for xi in x])  # (n, O, 3, 3)
    torch.testing.assert_close(k, torch.einsum("iapq,jbpq->ijab", j, j), rtol=1e-12, atol=1e-12)


def test_cross_kernel_is_block_of_joint_kernel(float64_torch):
    model, shape = make("mlp")
    x, x2 = torch.randn(4, *shape), torch.randn(3, *shape)
    joint = empirical_ntk(model, torch.cat([x, x2]))
    torch.testing.assert_close(empirical_ntk(model, x, x2), joint[:4, 4:], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("budget", [60_000, 24_000, 17_000])
@pytest.mark.parametrize("mode", MODES)
def test_chunked_under_budget_equals_unchunked(float64_torch, budget, mode):
    model, shape = make("convbn")
    x = torch.randn(7, *shape)
    ref = empirical_ntk(model, x, mode=mode)
    budget += SLACK
    k = empirical_ntk(model, x, mode=mode, memory_budget=budget, method="layerwise")
    torch.testing.assert_close(k, ref, rtol=1e-12, atol=1e-12)
    x2 = torch.randn(5, *shape)
    k2 = empirical_ntk(model, x, x2, mode=mode, memory_budget=budget, method="layerwise")
    torch.testing.assert_close(k2, empirical_ntk(model, x, x2, mode=mode), rtol=1e-12, atol=1e-12)


def test_output_chunks_when_one_sample_barely_fits(float64_torch):
    # A wide last layer: one sample with all outputs does not fit, one output does.
    model = nn.Sequential(nn.Linear(3, 200), nn.Tanh(), nn.Linear(200, 6))
    x = torch.randn(3, 3)
    ref = empirical_ntk(model, x, method="jacobian")
    k = empirical_ntk(model, x, method="jacobian", memory_budget=SLACK + 200_000)
    torch.testing.assert_close(k, ref, rtol=1e-12, atol=1e-12)


def test_plan_splits_outputs_for_large_jacobians():
    from ncdynamics.probes._ntk_plan import Sizes, plan_jacobian_chunks

    s = Sizes(p_mat=10_000, p_generic=10_000, d_out=0, d_in=0, act=10, unfold=0, p_total=10_000)
    budget = SLACK + 8 * 150_000
    plan = plan_jacobian_chunks(s, mode="full", n1=4, n2=None, n_out=8, budget=budget, itemsize=8)
    assert plan is not None and plan.o_block < 8 and plan.peak_bytes <= budget


def test_auto_falls_back_to_ntk_vp_when_jacobian_does_not_fit(float64_torch):
    model = nn.Sequential(nn.Linear(3, 400), nn.Tanh(), nn.Linear(400, 4))
    model[2].weight.requires_grad_(False)  # keep the generic (un-factored) path honest
    x = torch.randn(3, 3)
    ref = empirical_ntk(model, x, method="jacobian")
    budget = SLACK + 60_000
    with pytest.raises(ValueError, match="memory_budget"):
        empirical_ntk(model, x, method="jacobian", memory_budget=budget)
    k = empirical_ntk(model, x, method="auto", memory_budget=budget)
    torch.testing.assert_close(k, ref, rtol=1e-12, atol=1e-12)


def test_trace_average_divides_by_outputs(float64_torch):
    model, shape = make("mlp")
    x = torch.randn(4, *shape)
    tr = empirical_ntk(model, x, mode="trace")
    torch.testing.assert_close(empirical_ntk(model, x, mode="trace", average=True), tr / 3)


def test_output_callable_and_features_by_layer_name(float64_torch):
    model = nn.Sequential(nn.Linear(4, 5), nn.Tanh(), nn.Linear(5, 3))
    x = torch.randn(3, 4)
    full = empirical_ntk(model, x)
    k = empirical_ntk(model, x, output=lambda y: y[:, :2])
    torch.testing.assert_close(k, full[:, :, :2, :2], rtol=1e-12, atol=1e-12)
    kh = empirical_ntk(model, x, output="features", layer="2")
    ref = slow_ntk(model, x, output=lambda m, xx: m[1](m[0](xx)))
    torch.testing.assert_close(kh, ref, rtol=1e-10, atol=1e-12)


def test_method_enum_and_strings_are_equivalent(float64_torch):
    model, shape = make("mlp")
    x = torch.randn(2, *shape)
    torch.testing.assert_close(
        empirical_ntk(model, x, method=Method.NTK_VP), empirical_ntk(model, x, method="ntk-vp")
    )


class NoClassAxis(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 1)

    def forward(self, x):
        return self.lin(x)[:, 0]  # (n,)


def _frozen():
    m = nn.Linear(3, 2)
    for p in m.parameters():
        p.requires_grad_(False)
    return m


BAD = [
    (lambda: ("not a model", torch.randn(2, 3), {}), TypeError, "torch.nn.Module"),
    (lambda: (_frozen(), torch.randn(2, 3), {}), ValueError, "trainable"),
    (lambda: (nn.Linear(3, 2), torch.randn(2, 3).double(), {}), TypeError, "dtype"),
    (lambda: (nn.Linear(3, 2), torch.ones(2, 3, dtype=torch.int64), {}), TypeError, "dtype"),
    (lambda: (nn.Linear(3, 2), [[1.0, 2.0, 3.0]], {}), TypeError, "torch.Tensor"),
    (lambda: (nn.Linear(3, 2), torch.randn(0, 3), {}), ValueError, "n_samples >= 1"),
    (lambda: (nn.Linear(3, 2), torch.randn(2, 4), {}), ValueError, "could not be passed"),
    (
        lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"x2": torch.randn(2, 4)}),
        ValueError,
        "`x2` must have shape",
    ),
    (lambda: (nn.Linear(3, 2), torch.full((2, 3), float("nan")), {}), ValueError, "finite"),
    (lambda: (NoClassAxis(), torch.randn(2, 3), {}), ValueError, "class axis"),
    (lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"mode": "block"}), ValueError, "`mode`"),
    (lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"method": "magic"}), ValueError, "`method`"),
    (lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"output": "hidden"}), ValueError, "`output`"),
    (lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"average": True}), ValueError, "average"),
    (
        lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"memory_budget": 100}),
        ValueError,
        "memory_budget",
    ),
    (
        lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"memory_budget": 0}),
        ValueError,
        "memory_budget",
    ),
    (lambda: (nn.Sequential(nn.Tanh()), torch.randn(2, 3), {}), ValueError, "trainable"),
    # inputs on another device than the model (a "meta" model stands in for a CUDA one here)
    (lambda: (nn.Linear(3, 2, device="meta"), torch.randn(2, 3), {}), ValueError, "device"),
    (
        lambda: (nn.Linear(3, 2), torch.randn(2, 3), {"x2": torch.randn(2, 3, device="meta")}),
        ValueError,
        "`x2` must be on the model's device",
    ),
]


@pytest.mark.parametrize(("build", "exc", "match"), BAD)
def test_bad_input_is_rejected_clearly(build, exc, match):
    model, x, kw = build()
    with pytest.raises(exc, match=match):
        empirical_ntk(model, x, **kw)


def test_models_of_the_zoo_run_in_float32():
    g = torch.Generator().manual_seed(0)
    cnn = SmallCNN(1, 4, channels=(2, 3), width=5, input_size=8, generator=g)
    x = torch.randn(3, 1, 8, 8)
    k = empirical_ntk(cnn, x, mode="trace")
    ref = empirical_ntk(cnn, x, mode="trace", method="jacobian")
    torch.testing.assert_close(k, ref, rtol=5e-3, atol=5e-3 * float(ref.abs().max()))


def test_output_independent_of_parameters_gives_zero_kernel(float64_torch):
    class FeatureFree(nn.Module):
        def __init__(self):
            super().__init__()
            self.classifier = nn.Linear(3, 2)

        def features(self, x):
            return torch.tanh(x)

        def forward(self, x):
            return self.classifier(self.features(x))

    k = empirical_ntk(FeatureFree(), torch.randn(3, 3), output="features")
    assert k.shape == (3, 3, 3, 3) and not k.any()


def test_symmetric_blocked_gram_equals_plain_product(float64_torch):
    from ncdynamics.probes._fast_ntk_contract import gram

    for m in (601, 193):
        u = torch.randn(m, 37)
        torch.testing.assert_close(gram(u, u, True), u @ u.T, rtol=1e-13, atol=1e-12)
        acc = torch.randn(m, m)
        torch.testing.assert_close(
            gram(u, u, True, acc.clone()), acc + u @ u.T, rtol=1e-13, atol=1e-12
        )


def test_diagonal_and_trace_plans_split_outputs_before_samples():
    from ncdynamics.probes._ntk_plan import Sizes, plan_jacobian_chunks

    s = Sizes(p_mat=10_000, p_generic=10_000, d_out=0, d_in=0, act=10, unfold=0, p_total=10_000)
    for mode in ("diagonal", "trace"):
        plan = plan_jacobian_chunks(
            s, mode=mode, n1=8, n2=None, n_out=8, budget=SLACK + 8 * 500_000, itemsize=8
        )
        assert plan is not None and plan.n_block == 8 and plan.o_block < 8


def test_works_under_no_grad_and_with_inference_tensors(float64_torch):
    model, shape = make("convbn")
    x = torch.randn(3, *shape)
    ref = empirical_ntk(model, x, method="jacobian")
    with torch.no_grad():
        for method in METHODS:
            torch.testing.assert_close(
                empirical_ntk(model, x, method=method), ref, rtol=1e-10, atol=1e-12
            )
    with torch.inference_mode():
        xi = x.clone()
    torch.testing.assert_close(empirical_ntk(model, xi), ref, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("method", METHODS)
def test_a_submodule_registered_twice_keeps_its_parameters(float64_torch, method):
    """``model.features = model.body`` registers one module under two names; torch's
    functional_call with tied names used to leave plain tensors in place of its parameters."""
    from ncdynamics.probes.ntk_reference import reference_ntk

    model = nn.Module()
    model.body = nn.Sequential(nn.Linear(4, 5), nn.Tanh())
    model.classifier = nn.Linear(5, 3)
    model.features = model.body
    model.forward = lambda x: model.classifier(model.body(x))
    params = list(model.parameters())
    x = torch.randn(3, 4)
    k = empirical_ntk(model, x, method=method)
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
    assert all(isinstance(p, nn.Parameter) for p in model.body.parameters())
    torch.testing.assert_close(k, reference_ntk(model, x), rtol=1e-10, atol=1e-10)
    assert all(a is b for a, b in zip(params, model.parameters(), strict=True))
