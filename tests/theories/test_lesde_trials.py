"""Batched LeNet trials equal a loop over nn.Module copies trained with torch.optim.SGD."""

import numpy as np
import pytest
import torch

from ncdynamics.models.lenet import LeNet
from ncdynamics.theories.lesde._lenet_step import LeNetSGD
from ncdynamics.theories.lesde.trials import BatchedTrainer, merge_records, train_trials


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


@pytest.mark.parametrize("method", ["fused", "vmap"])
def test_batched_step_matches_module_loop(method, float64_torch):
    gen = torch.Generator().manual_seed(0)
    r, steps = 3, 4 if method == "vmap" else 20  # past one flush of the delayed updates
    trainer = BatchedTrainer(
        r, in_channels=1, num_classes=3, lr=0.05, generator=gen, method=method, dtype=torch.float64
    )
    nets = [trainer.module(i) for i in range(r)]
    opts = [torch.optim.SGD(n.parameters(), lr=0.05) for n in nets]
    data = torch.Generator().manual_seed(1)
    for _ in range(steps):
        x = torch.rand(r, 1, 32, 32, generator=data, dtype=torch.float64)
        y = torch.randint(0, 3, (r,), generator=data)
        logits, loss = trainer.step(x, y)
        for i, (net, opt) in enumerate(zip(nets, opts, strict=True)):
            opt.zero_grad()
            out = net(x[i : i + 1])
            ref = torch.nn.functional.cross_entropy(out, y[i : i + 1])
            torch.testing.assert_close(logits[i], out[0].detach())
            torch.testing.assert_close(loss[i], ref.detach())
            ref.backward()
            opt.step()
    for i, net in enumerate(nets):
        got = trainer.module(i)
        for p, q in zip(got.parameters(), net.parameters(), strict=True):
            torch.testing.assert_close(p, q)
    xv = torch.rand(7, 1, 32, 32, generator=data, dtype=torch.float64)
    yv = torch.randint(0, 3, (7,), generator=data)
    loss, acc = trainer.evaluate(xv, yv, chunk=3)
    for i, net in enumerate(nets):
        out = net(xv)
        assert abs(loss[i] - torch.nn.functional.cross_entropy(out, yv).item()) < 1e-10
        assert abs(acc[i] - (out.argmax(1) == yv).double().mean().item()) < 1e-12


def test_train_trials_records_and_reproducibility():
    rng = np.random.default_rng(0)
    x = rng.random((30, 1, 32, 32)).astype(np.float32)
    y = np.repeat(np.arange(3), 10)
    kw = dict(n_trials=2, n_iter=25, seed=5, eval_every=10, val_subset=12)
    a = train_trials(x, y, x, y, **kw)
    b = train_trials(x, y, x, y, **kw)
    np.testing.assert_array_equal(a.logits, b.logits)
    assert a.logits.shape == (25, 2, 3) and a.labels.shape == (25, 2)
    np.testing.assert_array_equal(a.labels, y[a.sample_idx])
    np.testing.assert_array_equal(a.val_iters, [0, 10, 20, 25])
    assert a.val_loss.shape == (4, 2)
    # the two trials are independent: different init, different draws
    assert not np.allclose(a.logits[:, 0], a.logits[:, 1])
    merged = merge_records([a, b])
    assert merged.n_trials == 4


def test_train_trials_rejects_bad_labels():
    x = np.zeros((4, 1, 32, 32), dtype=np.float32)
    with pytest.raises(ValueError, match="y_train"):
        train_trials(x, np.array([0, 1, 2]), x, np.zeros(4, int), n_trials=1, n_iter=1, seed=0)


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
