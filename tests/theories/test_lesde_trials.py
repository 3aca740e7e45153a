"""Batched LeNet trials equal a loop over nn.Module copies trained with torch.optim.SGD."""

import numpy as np
import pytest
import torch

from ncdynamics.theories.lesde.trials import BatchedTrainer, merge_records, train_trials


@pytest.mark.parametrize("method", ["fused", "vmap"])
def test_batched_step_matches_module_loop(method, float64_torch):
    gen = torch.Generator().manual_seed(0)
    r, steps = 3, 4 if method == "vmap" else 20  # past one flush of the delayed updates
    trainer = BatchedTrainer(
        r, in_channels=1, n_classes=3, lr=0.05, generator=gen, method=method, dtype=torch.float64
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


def _trained(method, device):
    gen = torch.Generator().manual_seed(0)
    kw = {} if device is None else {"device": device}  # None: the default
    trainer = BatchedTrainer(3, lr=0.05, generator=gen, method=method, **kw)
    data = torch.Generator().manual_seed(1)
    for _ in range(18):  # past one flush of the fused path's delayed updates
        trainer.step(
            torch.rand(3, 1, 32, 32, generator=data), torch.randint(0, 3, (3,), generator=data)
        )
    xv = torch.rand(5, 1, 32, 32, generator=data)
    yv = torch.randint(0, 3, (5,), generator=data)
    return {k: v.cpu() for k, v in trainer.params.items()}, trainer.evaluate(xv, yv)


@pytest.mark.parametrize("method", ["fused", "vmap"])
def test_device_path_on_cpu_equals_default(method):
    # the path a CUDA run takes (explicit device, inputs moved, CPU results), on the CPU
    (p_dev, ev_dev), (p_def, ev_def) = _trained(method, "cpu"), _trained(method, None)
    for k in p_def:
        torch.testing.assert_close(p_dev[k], p_def[k], rtol=0, atol=0)
    np.testing.assert_array_equal(ev_dev[0], ev_def[0])
    assert _trained(method, torch.device("cpu"))[1][1].shape == (3,)


@pytest.mark.gpu
@pytest.mark.parametrize("method", ["fused", "vmap"])
def test_cuda_step_agrees_with_cpu(method):
    (p_gpu, ev_gpu), (p_cpu, ev_cpu) = _trained(method, "cuda"), _trained(method, "cpu")
    for k in p_cpu:
        torch.testing.assert_close(p_gpu[k], p_cpu[k], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(ev_gpu[0], ev_cpu[0], rtol=1e-4)


def test_float64_trials_keep_float64_logits_and_the_paper_presets_use_them():
    # issue 29: the authors train every LeNet in float64 (zjiayao/le_sde src/models.py:49)
    from ncdynamics.theories.lesde.experiments import EXPERIMENTS

    rng = np.random.default_rng(0)
    x = rng.random((12, 1, 32, 32)).astype(np.float32)
    y = np.repeat(np.arange(3), 4)
    kw = dict(n_trials=1, n_iter=6, seed=1, eval_every=3)
    r64 = train_trials(x, y, x, y, dtype=torch.float64, **kw)
    r32 = train_trials(x, y, x, y, **kw)
    assert r64.logits.dtype == np.float64 and r32.logits.dtype == np.float32
    np.testing.assert_allclose(r64.logits, r32.logits, rtol=1e-3, atol=1e-4)
    for spec in EXPERIMENTS:
        if "dtype" in spec.config.__dataclass_fields__:
            assert spec.make_config("paper").dtype == "float64", spec.name
            assert spec.make_config("cpu").dtype == "float32", spec.name
    fig3 = next(s for s in EXPERIMENTS if s.name == "lesde.fig3")
    assert fig3.make_config("paper").window == 151  # the authors' notebook, Fig. D.3
