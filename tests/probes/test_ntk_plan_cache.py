"""The layer-plan cache of ``empirical_ntk``: keyed on structure, never on weight values.

Every kernel is compared with the Jacobian-contraction reference (``probes/ntk_reference.py``)
on random, asymmetric inputs in float64; whether the plan was built again is counted by
wrapping ``plan_layers``.
"""

import gc

import pytest
import torch
from torch import nn

from ncdynamics.probes import _fast_ntk_layers, _fast_ntk_plan_cache, empirical_ntk
from ncdynamics.probes.ntk import clear_plan_cache
from ncdynamics.probes.ntk_reference import reference_ntk

MODES = ("full", "diagonal", "trace")


class UserCNN(nn.Module):
    """Two conv + BatchNorm + ReLU + max-pool blocks and a linear head, as users write them."""

    def __init__(self, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.body = nn.Sequential(
            nn.Conv2d(1, 3, 3, padding=1),
            nn.BatchNorm2d(3),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(3, 4, 3, padding=1),
            nn.BatchNorm2d(4),
            nn.ReLU(),
            nn.MaxPool2d(2),
            nn.Flatten(),
        )
        self.head = nn.Linear(4 * 2 * 2, 3)
        with torch.no_grad():
            for p in self.parameters():
                p.copy_(torch.randn(p.shape, generator=g, dtype=p.dtype) * 0.7)
            for m in self.modules():
                if isinstance(m, nn.BatchNorm2d):
                    m.running_mean.uniform_(-0.3, 0.3, generator=g)
                    m.running_var.uniform_(0.5, 2.0, generator=g)

    def forward(self, x):
        return self.head(self.body(x))


@pytest.fixture
def spy(monkeypatch):
    """Counts the calls of ``plan_layers`` (a plan built, not taken from the cache)."""
    calls = []
    real = _fast_ntk_layers.plan_layers

    def counted(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(_fast_ntk_layers, "plan_layers", counted)
    clear_plan_cache()
    yield calls
    clear_plan_cache()


def _inputs(n=5, size=8, seed=1):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, 1, size, size, generator=g), torch.randn(3, 1, size, size, generator=g)


@pytest.mark.parametrize("mode", MODES)
def test_user_cnn_matches_reference_in_every_mode(float64_torch, mode):
    model = UserCNN()
    x, x2 = _inputs()
    for other in (None, x2):
        torch.testing.assert_close(
            empirical_ntk(model, x, other, mode=mode),
            reference_ntk(model, x, other, mode=mode),
            rtol=1e-10,
            atol=1e-12,
        )


def test_cache_hit_returns_the_same_numbers(float64_torch, spy):
    model = UserCNN()
    x, _ = _inputs()
    first = empirical_ntk(model, x)
    second = empirical_ntk(model, x)
    assert len(spy) == 1
    assert torch.equal(first, second)
    torch.testing.assert_close(second, reference_ntk(model, x), rtol=1e-10, atol=1e-12)


def test_mode_budget_and_sample_count_share_one_plan(float64_torch, spy):
    model = UserCNN()
    x, x2 = _inputs()
    full = reference_ntk(model, x)
    for mode in MODES:
        budget = 2**25 + 100_000 if mode == "full" else None  # full: chunked
        got = empirical_ntk(model, x, mode=mode, memory_budget=budget)
        diag = torch.diagonal(full, dim1=2, dim2=3).permute(2, 0, 1)
        want = {"full": full, "diagonal": diag, "trace": diag.sum(0)}[mode]
        torch.testing.assert_close(got, want, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(
        empirical_ntk(model, x[:3], x2), reference_ntk(model, x[:3], x2), rtol=1e-10, atol=1e-12
    )
    assert len(spy) == 1


def test_parameters_updated_in_place_give_the_updated_kernel(float64_torch, spy):
    model = UserCNN()
    x, _ = _inputs()
    before = empirical_ntk(model, x)
    opt = torch.optim.SGD(model.parameters(), lr=0.3)
    loss = model.train()(x).square().sum()  # a training step also moves the BN statistics
    loss.backward()
    opt.step()
    model.eval()
    after = empirical_ntk(model, x)
    assert len(spy) == 1  # same structure: the plan is reused
    assert not torch.allclose(before, after)
    torch.testing.assert_close(after, reference_ntk(model, x), rtol=1e-10, atol=1e-12)


def _replace_weight(m):
    m.body[4].weight = nn.Parameter(m.body[4].weight.detach().clone() * 2)


def _freeze_weight(m):
    m.body[0].weight.requires_grad_(False)


def _add_hook(m):
    m.body[2].register_forward_hook(lambda _mod, _inp, out: out * 1.5)


def _swap_activation(m):
    m.body[2] = nn.Tanh()


CHANGES = [_replace_weight, _freeze_weight, _add_hook, _swap_activation]


@pytest.mark.parametrize("change", CHANGES)
def test_a_changed_structure_misses(float64_torch, spy, change):
    model = UserCNN()
    x, _ = _inputs()
    empirical_ntk(model, x)
    change(model)
    got = empirical_ntk(model, x)
    assert len(spy) == 2
    torch.testing.assert_close(got, reference_ntk(model, x), rtol=1e-10, atol=1e-12)


def test_a_new_backward_hook_misses(float64_torch, spy):
    model = UserCNN()
    x, _ = _inputs()
    empirical_ntk(model, x)
    model.body[2].register_full_backward_hook(lambda _mod, gin, _gout: (gin[0] * 0.5,))
    empirical_ntk(model, x)  # (torch.func, and so the reference, cannot run such a hook)
    assert len(spy) == 2


def test_a_changed_input_shape_misses(float64_torch, spy):
    model = UserCNN()
    model.head = nn.Sequential(nn.AdaptiveAvgPool1d(16), nn.Linear(16, 3))  # any input size
    x, _ = _inputs(size=8)
    y, _ = _inputs(size=12)
    empirical_ntk(model, x)
    got = empirical_ntk(model, y)
    assert len(spy) == 2
    torch.testing.assert_close(got, reference_ntk(model, y), rtol=1e-10, atol=1e-12)


def test_a_changed_dtype_misses(spy):
    model = UserCNN().double()
    x, _ = _inputs()
    k64 = empirical_ntk(model, x.double())
    model.float()  # same Parameter objects, new dtype
    k32 = empirical_ntk(model, x.float())
    assert len(spy) == 2
    assert k32.dtype == torch.float32
    torch.testing.assert_close(k32.double(), k64, rtol=5e-4, atol=1e-5)


def test_another_model_of_the_same_class_has_its_own_plan(float64_torch, spy):
    a, b = UserCNN(seed=0), UserCNN(seed=3)
    x, _ = _inputs()
    empirical_ntk(a, x)
    got = empirical_ntk(b, x)
    assert len(spy) == 2
    torch.testing.assert_close(got, reference_ntk(b, x), rtol=1e-10, atol=1e-12)


def test_output_and_method_are_part_of_the_key(float64_torch, spy):
    model = UserCNN()
    x, _ = _inputs()
    empirical_ntk(model, x)
    feats = empirical_ntk(model, x, output="features", layer="head", mode="trace")
    jac = empirical_ntk(model, x, method="jacobian")
    assert len(spy) == 3
    torch.testing.assert_close(
        feats,
        reference_ntk(model, x, output="features", layer="head", mode="trace"),
        rtol=1e-10,
        atol=1e-12,
    )
    torch.testing.assert_close(jac, reference_ntk(model, x), rtol=1e-10, atol=1e-12)


def test_a_plan_checked_on_zero_gradients_is_not_reused(float64_torch, spy):
    model = UserCNN()
    with torch.no_grad():
        model.head.weight.zero_()  # a zero-initialised head: every upstream gradient is zero
    x, _ = _inputs()
    empirical_ntk(model, x)
    with torch.no_grad():
        model.head.weight.normal_()
    got = empirical_ntk(model, x)
    assert len(spy) == 2
    torch.testing.assert_close(got, reference_ntk(model, x), rtol=1e-10, atol=1e-12)
    empirical_ntk(model, x)
    assert len(spy) == 2  # checked on non-zero gradients: now cached


def test_clear_plan_cache_and_garbage_collection(float64_torch, spy):
    model = UserCNN()
    x, _ = _inputs()
    empirical_ntk(model, x)
    clear_plan_cache(model)
    empirical_ntk(model, x)
    assert len(spy) == 2
    assert model in _fast_ntk_plan_cache._CACHE
    n = len(_fast_ntk_plan_cache._CACHE)
    del model
    gc.collect()
    assert len(_fast_ntk_plan_cache._CACHE) == n - 1  # the plans held no reference to it


def test_cache_holds_at_most_max_per_model_entries(float64_torch, spy):
    model = UserCNN()
    model.head = nn.Sequential(nn.AdaptiveAvgPool1d(16), nn.Linear(16, 3))
    sizes = range(4, 4 + _fast_ntk_plan_cache.MAX_PER_MODEL + 2)
    for s in sizes:
        empirical_ntk(model, _inputs(n=2, size=s)[0])
    assert len(_fast_ntk_plan_cache._CACHE[model]) == _fast_ntk_plan_cache.MAX_PER_MODEL
    empirical_ntk(model, _inputs(n=2, size=4)[0])  # the oldest was dropped
    assert len(spy) == len(sizes) + 1


def test_batchnorm_without_running_statistics_is_rejected(float64_torch):
    model = nn.Sequential(nn.Linear(3, 4), nn.BatchNorm1d(4, track_running_stats=False))
    with pytest.raises(ValueError, match="track_running_stats=False"):
        empirical_ntk(model, torch.randn(4, 3))


def test_train_mode_batchnorm_gives_the_eval_mode_kernel(float64_torch):
    model = UserCNN().train()
    x, _ = _inputs()
    got = empirical_ntk(model, x)
    assert model.training and model.body[1].training
    torch.testing.assert_close(got, reference_ntk(model.eval(), x), rtol=1e-10, atol=1e-12)
