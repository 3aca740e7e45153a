"""Oracles for kernel statistics (NTK-collapse paper §2.2, Fig. 1e;
oracle O12) and the NTK Recorder probes."""

import numpy as np
import pytest
import torch
from torch import nn

from ncdynamics.models import MLP
from ncdynamics.probes import ProbeInput, available_probes, make_probe
from ncdynamics.probes.kernels import (
    block_kernel_fit,
    block_norms,
    block_values,
    kernel_alignment,
    kernel_block_stats,
    logit_ntk_from_features,
    trace_kernel,
)
from ncdynamics.probes.ntk import empirical_ntk
from ncdynamics.probes.ntk_probes import class_ordered_subset
from ncdynamics.probes.ntk_reference import reference_ntk


def block_kernel(y, d, c, n):
    same = y[:, None] == y[None, :]
    k = np.where(same, c, n).astype(float)
    np.fill_diagonal(k, d)
    return k


def labels(n_cls, m):
    return np.repeat(np.arange(n_cls), m)


@pytest.mark.parametrize("estimator", ["exact", "half-split"])
def test_block_values_recover_synthetic_block_kernel(estimator, rng):
    y = rng.permutation(labels(4, 6))  # masks do not need class order
    k = block_kernel(y, 3.0, 1.25, 0.2)
    v = block_values(k, y, estimator=estimator)
    assert (v.diagonal, v.same_class, v.different_class) == pytest.approx(
        (3.0, 1.25, 0.2), abs=1e-14
    )


def test_block_values_average_over_outputs_of_full_kernel():
    y = labels(3, 4)
    vals = [(3.0, 1.0, 0.5), (5.0, 2.0, -0.5)]
    full = np.zeros((12, 12, 2, 2))
    for a, (d, c, n) in enumerate(vals):
        full[:, :, a, a] = block_kernel(y, d, c, n)
    full[:, :, 0, 1] = 7.0  # off-diagonal output blocks are ignored by the values
    v = block_values(full, y)
    assert (v.diagonal, v.same_class, v.different_class) == pytest.approx((4.0, 1.5, 0.0))
    diag = np.moveaxis(np.diagonal(full, axis1=2, axis2=3), -1, 0)
    assert block_values(diag, y) == v


def test_exact_block_values_are_least_squares_fit(rng):
    y = labels(3, 5)
    k = rng.normal(size=(15, 15))
    k = k + k.T
    fit = block_kernel_fit(k, y)
    same = (y[:, None] == y[None, :]).astype(float)
    basis = np.stack([np.eye(15).ravel(), (same - np.eye(15)).ravel(), (1 - same).ravel()], 1)
    coef = np.linalg.lstsq(basis, k.ravel(), rcond=None)[0]
    np.testing.assert_allclose(fit.ravel(), basis @ coef, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(("n_cls", "m"), [(10, 12), (4, 3), (3, 7)])
def test_alignment_sanity_values(n_cls, m):
    y = labels(n_cls, m)
    yy = (y[:, None] == y[None, :]).astype(float)
    n = n_cls * m
    assert kernel_alignment(yy, y) == pytest.approx(1.0, abs=1e-14)
    assert kernel_alignment(np.eye(n), y) == pytest.approx(1 / np.sqrt(m), rel=1e-12)
    assert kernel_alignment(np.ones((n, n)), y) == pytest.approx(1 / np.sqrt(n_cls), rel=1e-12)
    assert kernel_alignment(yy, y, centered=True) == pytest.approx(1.0, abs=1e-14)
    assert kernel_alignment(3.0 * yy + 2.0, y, centered=True) == pytest.approx(1.0, abs=1e-12)


def test_half_split_alignment_is_exact_alignment_on_half_classes():
    y = labels(5, 8)
    k = block_kernel(y, 4.0, 1.5, 0.3)
    y_half = labels(5, 4)
    expected = kernel_alignment(block_kernel(y_half, 4.0, 1.5, 0.3), y_half)
    assert kernel_alignment(k, y, estimator="half-split") == pytest.approx(expected, rel=1e-12)


def test_trace_and_block_norms_of_kronecker_kernel(rng):
    a = rng.normal(size=(6, 6))
    k_s = a @ a.T
    m = rng.normal(size=(3, 3))
    full = np.einsum("ij,ab->ijab", k_s, m)
    np.testing.assert_allclose(block_norms(full), np.abs(m) * np.linalg.norm(k_s), rtol=1e-12)
    np.testing.assert_allclose(trace_kernel(full), k_s * np.trace(m), rtol=1e-12)
    np.testing.assert_allclose(trace_kernel(full, average=True), k_s * np.trace(m) / 3, rtol=1e-12)


def test_block_stats_of_block_kernel_and_residual(rng):
    y = labels(3, 4)
    k = block_kernel(y, 2.0, 1.0, 0.25)
    full = np.einsum("ij,ab->ijab", k, np.eye(4))
    st = kernel_block_stats(full, y)
    assert st.block_residual == pytest.approx(0.0, abs=1e-14)
    assert st.n_outputs == 4
    np.testing.assert_allclose(st.traced, 4 * k)
    np.testing.assert_allclose(st.block_norms, np.eye(4) * np.linalg.norm(k))
    assert st.alignment == pytest.approx(kernel_alignment(k, y))
    noisy = kernel_block_stats(k + 0.1 * rng.normal(size=k.shape), y)
    assert noisy.block_norms is None and 0.0 < noisy.block_residual < 0.2


def test_logit_kernel_from_features_matches_explicit_sum(rng):
    n1, n2, n, c = 3, 4, 5, 2
    kh = rng.normal(size=(n1, n2, n, n))
    w = rng.normal(size=(c, n))
    h1, h2 = rng.normal(size=(n1, n)), rng.normal(size=(n2, n))
    full = logit_ntk_from_features(kh, w, h1, h2)
    for i in range(n1):
        for j in range(n2):
            for k in range(c):
                for s in range(c):
                    want = sum(
                        w[k, p] * w[s, q] * kh[i, j, p, q] for p in range(n) for q in range(n)
                    ) + (k == s) * (h1[i] @ h2[j] + 1)
                    assert full[i, j, k, s] == pytest.approx(want, rel=1e-12, abs=1e-12)
    diag = np.moveaxis(np.diagonal(full, axis1=2, axis2=3), -1, 0)
    np.testing.assert_allclose(
        logit_ntk_from_features(kh, w, h1, h2, mode="diagonal"), diag, rtol=1e-12
    )
    np.testing.assert_allclose(
        logit_ntk_from_features(kh, w, h1, h2, mode="trace"), diag.sum(0), rtol=1e-12
    )
    no_bias = logit_ntk_from_features(kh, w, h1, h2, bias=False)
    np.testing.assert_allclose(
        full - no_bias, np.einsum("ij,ks->ijks", np.ones((n1, n2)), np.eye(c)), atol=1e-12
    )


y10 = labels(2, 5)
BAD = [
    (lambda: block_values(np.eye(10), labels(2, 4)), ValueError, "length 10"),
    (lambda: block_values(np.ones((10, 9)), y10), ValueError, "square"),
    (lambda: block_values(np.eye(10), np.zeros(10, dtype=int)), ValueError, "2 classes"),
    (lambda: block_values(np.eye(10), y10, estimator="median"), ValueError, "estimator"),
    (lambda: kernel_alignment(np.ones(10), y10), ValueError, "shape"),
    (lambda: kernel_alignment(np.full((10, 10), np.nan), y10), ValueError, "finite"),
    (lambda: kernel_alignment(np.zeros((10, 10)), y10), ValueError, "zero"),
    (lambda: kernel_alignment(np.eye(10), y10 + 0.5), TypeError, "integer"),
    (
        lambda: kernel_alignment(np.eye(10), y10, centered=True, estimator="half-split"),
        ValueError,
        "centered",
    ),
    (lambda: block_norms(np.eye(10)), ValueError, "4 dimension"),
    (
        lambda: logit_ntk_from_features(np.ones((2, 2, 3, 3)), np.ones((2, 4)), np.ones((2, 3))),
        ValueError,
        "weight",
    ),
    (
        lambda: logit_ntk_from_features(np.ones((2, 2, 3, 3)), np.ones((2, 3)), np.ones((3, 3))),
        ValueError,
        "features",
    ),
]


@pytest.mark.parametrize(("call", "exc", "match"), BAD)
def test_bad_input_is_rejected_clearly(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def _probe_input(model, n_cls=3, per=5):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(n_cls * per, 6, generator=g)
    y = torch.arange(n_cls).repeat(per)  # interleaved classes
    with torch.no_grad():
        h = model.features(x)
    return ProbeInput(
        model=model,
        x=x,
        y=y,
        features=h,
        logits=model.classifier(h),
        classifier=model.classifier,
        num_classes=n_cls,
        step=4,
    )


def test_class_ordered_subset_takes_first_samples_of_each_class():
    y = np.array([2, 0, 1, 0, 2, 1, 0, 1, 2])
    np.testing.assert_array_equal(class_ordered_subset(y, 2, 3), [1, 3, 2, 5, 0, 4])
    with pytest.raises(ValueError, match="at least 4"):
        class_ordered_subset(y, 4, 3)


def test_ntk_probes_are_registered_and_consistent():
    assert {"ntk_alignment", "ntk_blocks"} <= set(available_probes())
    model = MLP(6, 3, depth=1, width=7, generator=torch.Generator().manual_seed(0))
    inp = _probe_input(model)
    out = make_probe("ntk_alignment", per_class=4)(inp)
    y = out.arrays["ntk_labels"]
    np.testing.assert_array_equal(y, labels(3, 4))
    idx = class_ordered_subset(inp.y.numpy(), 4, 3)
    k = empirical_ntk(model, inp.x[idx], mode="trace").numpy()
    np.testing.assert_allclose(out.arrays["ntk_traced_logits"], k, rtol=1e-6)
    assert out.scalars["ntk_alignment_logits"] == pytest.approx(kernel_alignment(k, y))
    assert out.arrays["ntk_traced_features"].shape == (12, 12)
    blocks = make_probe("ntk_blocks", per_class=4, feature_block_norms=True)(inp)
    assert blocks.arrays["ntk_block_norms_logits"].shape == (3, 3)
    assert blocks.arrays["ntk_block_norms_features"].shape == (7, 7)
    full = empirical_ntk(model, inp.x[idx]).numpy()
    v = block_values(full, y)
    assert blocks.scalars["ntk_gamma_d"] == pytest.approx(v.diagonal, rel=1e-5)
    assert blocks.scalars["ntk_gamma_n"] == pytest.approx(v.different_class, rel=1e-4, abs=1e-6)
    assert all(np.isfinite(list(blocks.scalars.values())))
    assert model.training


def test_probe_rejects_bad_options():
    with pytest.raises(ValueError, match="per_class"):
        make_probe("ntk_blocks", per_class=1)
    with pytest.raises(ValueError, match="outputs"):
        make_probe("ntk_alignment", outputs=("hidden",))
    with pytest.raises(ValueError, match="method"):
        make_probe("ntk_alignment", method="fast")


def _batchnorm_model():
    """Linear - BatchNorm1d (non-trivial running statistics and affine) - ReLU - head."""
    g = torch.Generator().manual_seed(5)
    model = nn.Module()
    model.body = nn.Sequential(nn.Linear(6, 5), nn.BatchNorm1d(5), nn.ReLU())
    model.classifier = nn.Linear(5, 3)
    model.features = model.body
    model.forward = lambda x: model.classifier(model.body(x))
    with torch.no_grad():
        bn = model.body[1]
        bn.running_mean.uniform_(-0.5, 0.5, generator=g)
        bn.running_var.uniform_(0.5, 2.0, generator=g)
        bn.weight.uniform_(0.5, 1.5, generator=g)
        bn.bias.uniform_(-0.3, 0.3, generator=g)
    return model


def test_probe_on_model_with_batchnorm_matches_the_reference_kernel_and_keeps_buffers():
    model = _batchnorm_model()
    inp = _probe_input(model)
    before = [b.clone() for b in model.buffers()]
    out = make_probe("ntk_blocks", per_class=3)(inp)
    assert all(torch.equal(a, b) for a, b in zip(before, model.buffers(), strict=True))
    assert model.training  # the probe ran in eval mode and gave the flag back
    idx = class_ordered_subset(inp.y.numpy(), 3, 3)
    y = out.arrays["ntk_labels"]
    x = inp.x[idx]
    k_f = reference_ntk(model.double(), x.double()).numpy()  # eval-mode BN, float64
    k_h = reference_ntk(model, x.double(), output="features", mode="diagonal").numpy()
    model.float()
    gamma, kappa = block_values(k_f, y), block_values(k_h, y)
    for sym, v in (("gamma", gamma), ("kappa", kappa)):
        assert out.scalars[f"ntk_{sym}_d"] == pytest.approx(v.diagonal, rel=1e-5)
        assert out.scalars[f"ntk_{sym}_c"] == pytest.approx(v.same_class, rel=1e-4, abs=1e-6)
        assert out.scalars[f"ntk_{sym}_n"] == pytest.approx(v.different_class, rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("method", ["auto", "layerwise", "jacobian", "ntk-vp"])
def test_batchnorm_model_kernel_matches_the_reference_and_is_symmetric_psd(float64_torch, method):
    model = _batchnorm_model().double()
    model.train()
    x = torch.randn(7, 6, generator=torch.Generator().manual_seed(2))
    ref = reference_ntk(model, x)  # (n, n, O, O), eval-mode BN
    k = empirical_ntk(model, x, method=method)
    torch.testing.assert_close(k, ref, rtol=1e-10, atol=1e-10)
    mat = k.permute(0, 2, 1, 3).reshape(7 * 3, 7 * 3)
    torch.testing.assert_close(mat, mat.T, rtol=1e-12, atol=1e-12)
    assert float(torch.linalg.eigvalsh(mat).min()) >= -1e-10 * float(mat.abs().max())
    # eval mode: a sample's kernel does not depend on the rest of the batch
    torch.testing.assert_close(empirical_ntk(model, x[:1], method=method), k[:1, :1])


def test_statistics_are_invariant_to_sample_permutation(rng):
    y = labels(3, 6)
    a = rng.normal(size=(18, 18))
    k = a @ a.T + 5.0 * (y[:, None] == y[None, :])
    perm = rng.permutation(18)
    kp, yp = k[np.ix_(perm, perm)], y[perm]
    v, vp = block_values(k, y), block_values(kp, yp)
    assert (vp.diagonal, vp.same_class, vp.different_class) == pytest.approx(
        (v.diagonal, v.same_class, v.different_class), rel=1e-12
    )
    for centered in (False, True):
        assert kernel_alignment(kp, yp, centered=centered) == pytest.approx(
            kernel_alignment(k, y, centered=centered), rel=1e-12
        )


def test_kernel_block_stats_has_a_short_repr():
    from ncdynamics.probes import kernel_block_stats

    rng = np.random.default_rng(0)
    feats = rng.normal(size=(100, 5))
    stats = kernel_block_stats(feats @ feats.T, np.arange(100) % 10)
    text = repr(stats)
    assert len(text) < 400 and "\n" not in text
    assert text.startswith("KernelBlockStats(n=100, n_outputs=1")
    assert f"alignment={stats.alignment:.4g}" in text and "traced=(100, 100)" in text
    assert str(stats) == text
