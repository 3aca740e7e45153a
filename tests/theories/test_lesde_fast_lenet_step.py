"""The fast hand-written LeNet SGD step (``fast_lenet_step``) against its references.

Two references: the autograd step of ``reference_lenet_step`` (``vmap`` of ``grad`` over
the stacked nets) on random, asymmetric inputs, comparing gradients, updated parameters,
logits and losses; and a loop over ``nn.Module`` copies trained by ``torch.optim.SGD`` on
images built to produce max-pool ties.
"""

import copy

import pytest
import torch

from ncdynamics.models.lenet import LeNet
from ncdynamics.theories.lesde.fast_lenet_step import LeNetSGD
from ncdynamics.theories.lesde.reference_lenet_step import sgd_step, stacked_gradients

# (rtol, atol) by dtype: float64 to rounding; float32 after a few steps of SGD
TOLERANCES = {torch.float64: (1e-9, 1e-11), torch.float32: (2e-4, 2e-5)}


def _random_nets(r, channels, k, size, dtype, gen):
    """R LeNets with PyTorch-default random weights and random non-zero biases (stacked)."""
    nets = [LeNet(channels, k, input_size=size, generator=gen).to(dtype) for _ in range(r)]
    params = {
        name: torch.stack([dict(n.named_parameters())[name].detach() for n in nets]).clone()
        for name, _ in nets[0].named_parameters()
    }
    for name, value in params.items():
        if name.endswith("bias"):
            value.add_(0.1 * torch.randn(value.shape, generator=gen, dtype=dtype))
    return copy.deepcopy(nets[0]).to("meta"), params


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize("r, channels, k, size", [(4, 1, 3, 32), (3, 3, 5, 21)])
def test_fast_step_gradients_match_autograd_reference(r, channels, k, size, dtype):
    """One step from random nets on random (signed, non-symmetric) images and labels: the
    gradient the fast step applies, (w_before - w_after) / lr, equals autograd's."""
    rtol, atol = TOLERANCES[dtype]
    gen = torch.Generator().manual_seed(11)
    template, params = _random_nets(r, channels, k, size, dtype, gen)
    before = {name: v.clone() for name, v in params.items()}
    x = torch.randn(r, channels, size, size, generator=gen, dtype=dtype)
    y = torch.randint(0, k, (r,), generator=gen)
    assert len(set(y.tolist())) > 1  # different labels across the nets
    lr = 0.05
    grads, (loss_ref, logits_ref) = stacked_gradients(template)(before, x, y)
    stepper = LeNetSGD(params, lr=lr, delay=4)
    logits, loss = stepper.step(x, y)
    stepper.flush()
    torch.testing.assert_close(logits, logits_ref, rtol=rtol, atol=atol)
    torch.testing.assert_close(loss, loss_ref, rtol=rtol, atol=atol)
    for name, g in grads.items():
        assert g.abs().max() > 0, name  # every layer gets a non-trivial gradient
        implied = (before[name] - params[name]) / lr
        # the division by lr turns the rounding of w_after into a gradient error
        torch.testing.assert_close(implied, g, rtol=rtol, atol=atol / lr, msg=name)


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_fast_steps_follow_autograd_reference_across_delayed_updates(dtype):
    """Seven steps (delay 3: two flushes of the delayed linear updates and a pending
    remainder), nets in groups of 2: logits and losses at every step, parameters at the
    end, against iterated reference steps."""
    rtol, atol = TOLERANCES[dtype]
    r, k, lr = 5, 3, 0.05
    gen = torch.Generator().manual_seed(12)
    template, params = _random_nets(r, 1, k, 32, dtype, gen)
    ref = {name: v.clone() for name, v in params.items()}
    stepper = LeNetSGD(params, lr=lr, delay=3, group=2)
    for _ in range(7):
        x = torch.randn(r, 1, 32, 32, generator=gen, dtype=dtype)
        y = torch.randint(0, k, (r,), generator=gen)
        logits, loss = stepper.step(x, y)
        ref, logits_ref, loss_ref = sgd_step(template, ref, x, y, lr=lr)
        torch.testing.assert_close(logits, logits_ref, rtol=rtol, atol=atol)
        torch.testing.assert_close(loss, loss_ref, rtol=rtol, atol=atol)
    stepper.flush()
    for name, value in ref.items():
        torch.testing.assert_close(params[name], value, rtol=rtol, atol=atol, msg=name)


def tie_images(gen, n, channels, size):
    """Random images with a zero band and a constant square: many 2x2 pooling windows of
    the first convolution then hold equal maxima, so tie-breaking is exercised."""
    x = torch.rand(n, channels, size, size, generator=gen, dtype=torch.float64)
    x[:, :, : size // 2] = 0.0
    x[:, :, -7:, -7:] = 1.0
    return x


@pytest.mark.parametrize(
    "size, channels, delay, n_steps, group",
    [(32, 1, 3, 8, 50), (33, 1, 16, 5, 50), (17, 3, 2, 5, 50), (32, 1, 3, 8, 2)],
)
def test_hand_written_step_matches_autograd_loop(
    size, channels, delay, n_steps, group, float64_torch
):
    """LeNetSGD (hand-written backward, delayed linear updates) against nn.Module copies
    trained by autograd + torch.optim.SGD, in float64 to 1e-10: pre-update logits and
    losses at every step, all parameters at the end (odd sizes: floor-mode pooling;
    group=2: the 5 nets in groups of 2, 1 and 2)."""
    r, lr, k = 5, 0.05, 3
    gen = torch.Generator().manual_seed(3)
    nets = [LeNet(channels, k, input_size=size, generator=gen) for _ in range(r)]
    params = {
        name: torch.stack([dict(n.named_parameters())[name].detach() for n in nets]).clone()
        for name, _ in nets[0].named_parameters()
    }
    opts = [torch.optim.SGD(n.parameters(), lr=lr) for n in nets]
    stepper = LeNetSGD(params, lr=lr, delay=delay, group=group)
    data = torch.Generator().manual_seed(4)
    with torch.no_grad():
        c1 = torch.relu(nets[0].body[0](tie_images(data, 1, channels, size)))
    windows = (
        c1[..., : c1.shape[-2] // 2 * 2, : c1.shape[-1] // 2 * 2].unfold(2, 2, 2).unfold(3, 2, 2)
    )
    top = windows.flatten(-2)
    ties = ((top == top.amax(-1, keepdim=True)).sum(-1) > 1) & (top.amax(-1) > 0)
    assert ties.any()  # the data does exercise tie-breaking
    for _ in range(n_steps):
        x = tie_images(data, r, channels, size)
        y = torch.randint(0, k, (r,), generator=data)
        logits, loss = stepper.step(x, y)
        for i, (net, opt) in enumerate(zip(nets, opts, strict=True)):
            opt.zero_grad()
            out = net(x[i : i + 1])
            ref = torch.nn.functional.cross_entropy(out, y[i : i + 1])
            torch.testing.assert_close(logits[i], out[0].detach(), rtol=1e-10, atol=1e-10)
            torch.testing.assert_close(loss[i], ref.detach(), rtol=1e-10, atol=1e-10)
            ref.backward()
            opt.step()
    stepper.flush()
    for name, value in params.items():
        expected = torch.stack([dict(n.named_parameters())[name].detach() for n in nets])
        torch.testing.assert_close(value, expected, rtol=1e-10, atol=1e-12)


def test_grouping_the_nets_changes_no_number():
    """In float32, stepping 7 nets in groups of 2, 3 and 2 gives the same bits as one group."""
    gen = torch.Generator().manual_seed(5)
    nets = [LeNet(1, 3, generator=gen) for _ in range(7)]
    state = {
        name: torch.stack([dict(n.named_parameters())[name].detach() for n in nets])
        for name, _ in nets[0].named_parameters()
    }
    one = {k: v.clone() for k, v in state.items()}
    three = {k: v.clone() for k, v in state.items()}
    whole, grouped = LeNetSGD(one, lr=0.05, delay=4), LeNetSGD(three, lr=0.05, delay=4, group=3)
    data = torch.Generator().manual_seed(6)
    for _ in range(9):
        x, y = torch.rand(7, 1, 32, 32, generator=data), torch.randint(0, 3, (7,), generator=data)
        for a, b in zip(whole.step(x, y), grouped.step(x, y), strict=True):
            assert torch.equal(a, b)
    whole.flush()
    grouped.flush()
    for name in state:
        assert torch.equal(one[name], three[name]), name
