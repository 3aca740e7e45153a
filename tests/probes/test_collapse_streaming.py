"""The fast streaming path of the collapse metrics against a slow, independent reference."""

import numpy as np
import pytest
import torch

from ncdynamics.probes import (
    CollapseAccumulator,
    _fast_collapse_stream,
    _fast_syrk,
    collapse_metrics,
)


def reference_metrics(h, y, w, b):
    """Straightforward float64 implementation: a loop over classes, np.cov, direct distances."""
    h = np.asarray(h, dtype=np.float64)
    C = w.shape[0]
    n, d = h.shape
    mu = np.array([h[y == c].mean(0) for c in range(C)])  # (C, d)
    mu_g = h.mean(0)
    sw = sum(np.cov(h[y == c], rowvar=False, bias=True) * (y == c).sum() for c in range(C)) / n
    m = (mu - mu_g).T  # (d, C)
    u, s, vh = np.linalg.svd(m, full_matrices=False)
    pinv_sb = C * (u[:, : C - 1] / s[: C - 1] ** 2) @ u[:, : C - 1].T  # pinv(M M^T / C)
    std = np.array([h[y == c].std(0) for c in range(C)])  # (C, d)
    v = np.array([((h[y == c] - mu[c]) ** 2).sum(1).mean() for c in range(C)])
    pairs = [(i, j) for i in range(C) for j in range(i + 1, C)]
    cdnv = np.mean([(v[i] + v[j]) / (2 * np.sum((mu[i] - mu[j]) ** 2)) for i, j in pairs])
    norms = np.linalg.norm(m, axis=0)
    dist = ((h[:, None, :] - mu[None]) ** 2).sum(-1)  # (n, C)
    nc4 = np.mean((h @ w.T + b).argmax(1) != dist.argmin(1))
    nc3 = np.linalg.norm(m / np.linalg.norm(m) - w.T / np.linalg.norm(w))
    return {
        "nc1": np.trace(sw @ pinv_sb) / C,
        "within_trace": np.trace(sw),
        "nc1_std": std.mean(),
        "cdnv": cdnv,
        "nc2_equinorm": norms.std() / norms.mean(),
        "nc3": nc3,
        "nc4": nc4,
    }


def features(rng, n=3000, d=24, C=5, sigma=0.7, offset=0.0):
    y = rng.integers(0, C, n)
    mu = 2.0 * rng.standard_normal((C, d)) + offset
    return mu[y] + sigma * rng.standard_normal((n, d)), y, mu


def stream(h, y, w, b, sizes, rng):
    acc = CollapseAccumulator(w.shape[0], weight=w, bias=b)
    order = rng.permutation(y.size)
    cuts = np.cumsum(sizes)[:-1]
    for idx in np.split(order, cuts):
        acc.update(h[idx], y[idx])
    for idx in np.split(order, cuts):
        acc.update_nc4(h[idx], y[idx])
    return acc.compute()


@pytest.mark.parametrize("sizes", [[3000], [1, 2, 997, 2000], [600] * 5])
def test_float64_stream_matches_the_reference(rng, sizes):
    h, y, mu = features(rng)
    w, b = mu + 0.5 * rng.standard_normal(mu.shape), rng.standard_normal(5)
    ours, ref = stream(h, y, w, b, sizes, rng), reference_metrics(h, y, w, b)
    for key, value in ref.items():
        assert ours[key] == pytest.approx(value, rel=1e-10, abs=1e-14), key


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_many_small_classes_share_a_gemm_and_match_the_reference(rng, dtype):
    # 60 classes of ~70 rows: groups of classes go through one syrk, per-class scatter
    # then comes from the centred rows instead of the diagonal of the update
    h, y, mu = features(rng, n=4200, d=12, C=60)
    h = h.astype(dtype)
    w, b = mu, np.zeros(60)
    ours, ref = stream(h, y, w, b, [4200], rng), reference_metrics(h, y, w, b)
    tol = 1e-10 if dtype == np.float64 else 1e-5
    for key in ("nc1", "within_trace", "nc1_std", "cdnv", "nc2_equinorm", "nc3"):
        assert ours[key] == pytest.approx(ref[key], rel=tol), key
    assert ours["nc4"] == pytest.approx(ref["nc4"], abs=2 / y.size)


def test_blocks_beyond_the_float32_flush_match_the_reference(rng, monkeypatch):
    # three flushes of the float32 scatter into float64 within one update
    monkeypatch.setattr(_fast_collapse_stream, "_FLUSH_ROWS", 1000)
    h, y, mu = features(rng, n=9000, d=16, offset=3.0)
    w, b = mu, np.zeros(5)
    ours = collapse_metrics(h.astype(np.float32), y, w, b)
    ref = reference_metrics(h.astype(np.float32), y, w, b)
    for key in ("nc1", "within_trace", "nc1_std", "cdnv", "nc2_equinorm", "nc3"):
        assert ours[key] == pytest.approx(ref[key], rel=1e-5), key
    assert ours["nc4"] == ref["nc4"]


def test_float32_stream_matches_the_float64_reference(rng):
    h, y, mu = features(rng, n=20000, d=64, C=10, sigma=1.0)
    w, b = mu + 0.5 * rng.standard_normal(mu.shape), rng.standard_normal(10)
    h32 = h.astype(np.float32)
    ours = stream(h32, y, w, b, [4096, 5000, 10904], rng)
    ref = reference_metrics(h32, y, w, b)
    for key in ("nc1", "within_trace", "nc1_std", "cdnv", "nc2_equinorm", "nc3"):
        assert ours[key] == pytest.approx(ref[key], rel=1e-5), key
    assert ours["nc4"] == pytest.approx(ref["nc4"], abs=2 / y.size)


def test_float32_nc4_is_exact_with_a_large_common_offset(rng):
    # features far from the origin (as after a ReLU): the offset dwarfs the spacing of the
    # means, so float32 scores against uncentred means flip the nearest mean
    C, d, n = 3, 256, 3000
    y = rng.integers(0, C, n)
    mu = 100.0 + 0.05 * rng.standard_normal((C, d))
    h32 = (mu[y] + 0.05 * rng.standard_normal((n, d))).astype(np.float32)
    w = rng.standard_normal((C, d))
    ref = reference_metrics(h32, y, w, np.zeros(C))
    ours = collapse_metrics(h32, y, w, np.zeros(C))
    assert ours["nc4"] == pytest.approx(ref["nc4"], abs=2 / n)
    # the uncentred float32 scores this guards against disagree on many rows
    m = np.array([h32[y == c].astype(np.float64).mean(0) for c in range(C)])
    raw = h32 @ m.T.astype(np.float32) - (0.5 * (m**2).sum(1)).astype(np.float32)
    exact = ((h32[:, None, :].astype(np.float64) - m) ** 2).sum(-1).argmin(1)
    assert np.mean(raw.argmax(1) != exact) > 0.01


def test_float32_stays_accurate_at_extreme_collapse(rng):
    # spread 1e-5 around unit ETF means shifted by 5: raw second moments exceed the
    # within-class variance ~1e11 times. The float32 class mean is itself off by more than
    # the spread, so the mean of the centred rows must be put back (without that, nc1 is
    # off by more than 100%).
    C, d, n = 4, 8, 3000
    m = np.eye(C) - 1.0 / C
    mu = (
        m
        / np.linalg.norm(m, axis=1, keepdims=True)
        @ np.linalg.qr(rng.standard_normal((d, d)))[0][:C]
    )
    y = np.repeat(np.arange(C), n)
    h32 = (mu[y] + 1e-5 * rng.standard_normal((y.size, d)) + 5.0).astype(np.float32)
    ours, ref = collapse_metrics(h32, y, mu), reference_metrics(h32, y, mu, np.zeros(C))
    for key in ("nc1", "within_trace", "nc1_std", "cdnv", "nc2_equinorm", "nc3"):
        assert ours[key] == pytest.approx(ref[key], rel=1e-4), key


def test_mixed_float32_and_float64_batches(rng):
    h, y, mu = features(rng)
    ref = reference_metrics(h, y, mu, np.zeros(5))
    acc = CollapseAccumulator(5)
    acc.update(h[:1500].astype(np.float32), y[:1500])
    acc.update(h[1500:], y[1500:])
    ours = acc.compute()
    for key in ("nc1", "within_trace", "nc1_std", "cdnv", "nc2_equinorm"):
        assert ours[key] == pytest.approx(ref[key], rel=1e-5), key


def test_strided_and_torch_inputs_give_the_same_numbers(rng):
    h, y, mu = features(rng, n=500)
    base = collapse_metrics(h, y, mu)
    wide = np.zeros((h.shape[0], 2 * h.shape[1]))
    wide[:, ::2] = h
    assert collapse_metrics(wide[:, ::2], y, mu) == pytest.approx(base, rel=1e-12)
    assert collapse_metrics(np.asfortranarray(h), y, mu) == pytest.approx(base, rel=1e-12)
    t = torch.from_numpy(wide)[:, ::2]
    assert collapse_metrics(t, torch.from_numpy(y), mu) == pytest.approx(base, rel=1e-12)


def test_a_non_finite_batch_leaves_the_accumulator_as_it_was(rng):
    h, y, mu = features(rng, n=400)
    expected = CollapseAccumulator(5, weight=mu).update(h[:300], y[:300]).update(h[300:], y[300:])
    acc = CollapseAccumulator(5, weight=mu).update(h[:300], y[:300])
    bad = h[300:].copy()
    bad[np.flatnonzero(y[300:] == 4)[0], 3] = np.nan  # the last class gathered: after 0..3
    with pytest.raises(ValueError, match="finite; rows 0..99"):
        acc.update(bad, y[300:])
    after = acc.update(h[300:], y[300:]).compute()
    for key, value in expected.compute().items():
        assert after[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_both_syrk_bindings_update_the_upper_triangle(rng, dtype):
    a = rng.standard_normal((37, 11)).astype(dtype)  # (k, d), C-contiguous
    lower = np.tril(rng.standard_normal((11, 11)), -1)
    for update in (
        _fast_syrk.syrk_update(np.dtype(dtype)),
        _fast_syrk._scipy_update(np.dtype(dtype)),
    ):
        c = np.asfortranarray((np.eye(11) + lower).astype(dtype))
        update(-0.5, a, c)
        expected = np.eye(11) - 0.5 * a.astype(np.float64).T @ a
        assert np.allclose(np.triu(c), np.triu(expected), rtol=1e-5, atol=1e-5)
        assert np.array_equal(np.tril(c, -1), lower.astype(dtype))  # left alone


def test_metrics_do_not_depend_on_which_blas_runs_the_update(rng, monkeypatch):
    h, y, mu = features(rng, n=5000, d=32)
    h32 = h.astype(np.float32)
    fast = collapse_metrics(h32, y, mu)
    monkeypatch.setattr(_fast_collapse_stream, "syrk_update", _fast_syrk._scipy_update)
    slow = collapse_metrics(h32, y, mu)
    for key, value in fast.items():
        assert slow[key] == pytest.approx(value, rel=1e-5, abs=1e-9), key


@pytest.mark.parametrize(("sigma", "dtype"), [(0.7, np.float64), (1e-5, np.float32)])
def test_dense_one_shot_path_matches_reference_and_stream(rng, sigma, dtype):
    """collapse_metrics takes one dense float64 pass on small input; the stream must agree."""
    from ncdynamics.probes import collapse as collapse_module

    h, y, mu = features(rng, n=600, sigma=sigma)
    h = h.astype(dtype)
    w, b = mu + 0.5 * rng.standard_normal(mu.shape), rng.standard_normal(5)
    assert h.size <= collapse_module._DENSE_MAX
    dense = collapse_metrics(h, y, w, b)
    ref = reference_metrics(h, y, w, b)
    streamed = stream(h, y, w, b, [600], rng)
    # float32 stays float32 in the dense pass (compensated centring): float32-level accuracy
    tol = 1e-9 if dtype == np.float64 else 1e-6
    for k in ref:
        assert dense[k] == pytest.approx(ref[k], rel=tol, abs=1e-12), k
        assert dense[k] == pytest.approx(streamed[k], rel=1e-6, abs=1e-12), k


@pytest.mark.parametrize("offset", [0.0, 50.0])
def test_dense_float32_pass_keeps_float32_accuracy_far_from_the_origin(rng, offset):
    # a Recorder-sized probe set; a large common offset (as after a ReLU) and a spread 1e-3
    # of the mean spacing: the float32 class means are off by more than the spread allows
    h, y, mu = features(rng, n=300, d=256, C=10, sigma=2e-3, offset=offset)
    h32 = h.astype(np.float32)
    w, b = mu + 0.5 * rng.standard_normal(mu.shape), rng.standard_normal(10)
    ours, ref = collapse_metrics(h32, y, w, b), reference_metrics(h32, y, w, b)
    for key in ("nc1", "within_trace", "nc1_std", "cdnv", "nc2_equinorm", "nc3"):
        assert ours[key] == pytest.approx(ref[key], rel=1e-6), key
    assert ours["nc4"] == ref["nc4"]


def test_dense_scatter_and_means_match_a_float64_reference(rng):
    h, y, _ = features(rng, n=400, d=16, offset=5.0)
    for dtype, tol in ((np.float64, 1e-12), (np.float32, 1e-6)):
        x = h.astype(dtype).astype(np.float64)
        mu = np.array([x[y == c].mean(0) for c in range(5)])
        centred = x - mu[y]
        dense = CollapseAccumulator(5)
        dense._update_dense(h.astype(dtype), y)
        scale = np.abs(centred.T @ centred).max()
        np.testing.assert_allclose(dense.scatter, centred.T @ centred, rtol=0, atol=tol * scale)
        # float32: the means are right to float32 precision of the spread, not of the means
        np.testing.assert_allclose(dense.mean, mu, rtol=0, atol=tol * np.abs(centred).max())


@pytest.mark.parametrize("second_smallest", [1.0, 1e-3, 1e-7])
def test_mean_subspace_gram_route_matches_the_svd(rng, monkeypatch, second_smallest):
    # singular values 1, ..., second_smallest and the structural zero; the Gram route is
    # taken for the first two, the SVD for the ill-conditioned third
    from ncdynamics.probes import collapse as collapse_module

    C, d = 6, 40
    q, _ = np.linalg.qr(rng.standard_normal((d, C)))
    v, _ = np.linalg.qr(np.ones((C, 1)) - np.eye(C, 1), mode="complete")  # v[:, 0] ~ ones
    s = np.geomspace(1.0, second_smallest, C - 1)
    m = q[:, : C - 1] * s @ v[:, 1:].T  # (d, C), columns sum to zero
    basis, sv = collapse_module._mean_subspace(m, m.T @ m)
    monkeypatch.setattr(collapse_module, "_GRAM_MIN_RATIO", np.inf)  # always the SVD
    basis_svd, sv_svd = collapse_module._mean_subspace(m, m.T @ m)
    np.testing.assert_allclose(sv, sv_svd, rtol=1e-9)
    a = rng.standard_normal((d, d))
    a = a @ a.T
    nc1 = np.einsum("ij,ij->j", basis, a @ basis) / sv**2
    nc1_svd = np.einsum("ij,ij->j", basis_svd, a @ basis_svd) / sv_svd**2
    assert nc1.sum() == pytest.approx(nc1_svd.sum(), rel=1e-9)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("with_bias", [True, False])
def test_dense_nc4_matches_the_streamed_scorer_and_direct_distances(rng, dtype, with_bias):
    # overlapping classes far from the origin: many rows where the classifier and the
    # nearest mean disagree. The dense pass scores through products of the residuals, the
    # stream scores the rows against the centred means; both must give the direct count.
    h, y, mu = features(rng, n=900, d=16, C=6, sigma=2.0, offset=20.0)
    h = h.astype(dtype)
    w = mu - mu.mean(0) + rng.standard_normal(mu.shape)
    b = rng.standard_normal(6) if with_bias else None
    x = h.astype(np.float64)
    means = np.array([x[y == c].mean(0) for c in range(6)])
    logits = x @ w.T + (0.0 if b is None else b)
    exact = np.mean(logits.argmax(1) != ((x[:, None] - means) ** 2).sum(-1).argmin(1))
    assert 0.05 < exact < 0.95
    dense = collapse_metrics(h, y, w, b)["nc4"]
    streamed = stream(h, y, w, b, [400, 500], rng)["nc4"]
    tol = 0 if dtype == np.float64 else 2 / y.size  # float32: a near tie may flip
    assert dense == pytest.approx(exact, abs=tol)
    assert streamed == pytest.approx(exact, abs=tol)


def test_dense_products_past_float32_range_are_redone_in_float64(rng):
    # classifier weights ~1e36 with features ~1e3: W x overflows float32, not float64.
    # NC4 does not change when W and b are scaled together.
    h, y, mu = features(rng, n=600, d=8, C=4, sigma=1.5)
    h32 = (1e3 * h).astype(np.float32)
    w, b = rng.standard_normal((4, 8)), rng.standard_normal(4)
    base = collapse_metrics(h32, y, w, b)
    huge = collapse_metrics(h32, y, 1e36 * w, 1e36 * b)
    assert 0.0 < base["nc4"] < 1.0
    assert huge["nc4"] == pytest.approx(base["nc4"], abs=2 / y.size)
    assert huge["nc1"] == pytest.approx(base["nc1"], rel=1e-6)  # redone in float64
    # float64 products past float64's range: NC4 is undefined, and says so
    assert np.isnan(collapse_metrics(1e3 * h, y, 1e306 * w, b)["nc4"])


def test_dense_path_rejects_non_finite_rows(rng):
    h, y, _ = features(rng, n=50)
    h[7, 3] = np.nan
    h[9, 0] = np.inf
    with pytest.raises(ValueError, match="finite; rows 7..9"):
        collapse_metrics(h, y)


def test_float32_features_whose_squares_overflow_are_redone_in_float64(rng):
    # a spread of 1e20 (a diverging network): float32 sums are fine, squares are not
    h, y, mu = features(rng, n=600, d=6, C=3, sigma=1.0)
    h32 = (h * 1e20).astype(np.float32)
    w, b = rng.standard_normal((3, 6)), rng.standard_normal(3)
    ref = collapse_metrics(h32.astype(np.float64), y, w, b)
    assert 0.0 < ref["nc4"] < 1.0
    dense = collapse_metrics(h32, y, w, b)
    streamed = stream(h32, y, w, b, [256, 344], rng)
    for key, value in ref.items():
        assert dense[key] == pytest.approx(value, rel=1e-6), key
        assert streamed[key] == pytest.approx(value, rel=1e-6), key


def test_float64_features_whose_squares_overflow_are_refused(rng):
    h, y, _ = features(rng, n=300, d=4, C=3)
    h *= 1e160
    with pytest.raises(ValueError, match="squares overflow"):
        collapse_metrics(h, y)
    with pytest.raises(ValueError, match="squares overflow"):
        CollapseAccumulator(3).update(h, y)


def test_cdnv_stays_accurate_when_two_class_means_nearly_coincide(rng):
    # two of five means 1e-6 apart, the others about 4 away: the pair's squared distance
    # taken as |v_i|^2 + |v_j|^2 - 2 v_i.v_j would lose four digits to cancellation
    C, d = 5, 16
    mu = rng.standard_normal((C, d))
    mu[1] = mu[0] + 1e-6 * rng.standard_normal(d)
    y = np.repeat(np.arange(C), 200)
    h = mu[y] + 1e-9 * rng.standard_normal((y.size, d))
    ref = reference_metrics(h, y, mu, np.zeros(C))["cdnv"]
    assert collapse_metrics(h, y)["cdnv"] == pytest.approx(ref, rel=1e-9)
    assert stream(h, y, mu, np.zeros(C), [300, 700], rng)["cdnv"] == pytest.approx(ref, rel=1e-9)


def _blas_threads() -> list[int]:
    info = _fast_syrk.blas_controller().info()
    return [lib["num_threads"] for lib in info if lib["user_api"] == "blas"]


def test_one_blas_thread_nests_and_the_last_one_out_restores():
    before = _blas_threads()
    with _fast_syrk.one_blas_thread():
        with _fast_syrk.one_blas_thread():
            assert set(_blas_threads()) == {1}
        assert set(_blas_threads()) == {1}  # the outer block is still inside
        assert _fast_syrk._LIMIT["depth"] == 1
    assert _blas_threads() == before and _fast_syrk._LIMIT["depth"] == 0


def test_small_collapse_metrics_run_on_one_blas_thread(rng, monkeypatch):
    from ncdynamics.probes import collapse

    threads: list[list[int]] = []
    compute = collapse.CollapseAccumulator.compute

    def spy(self):
        threads.append(_blas_threads())
        return compute(self)

    monkeypatch.setattr(collapse.CollapseAccumulator, "compute", spy)
    h = rng.standard_normal((60, 8))
    collapse.collapse_metrics(h, np.repeat(np.arange(3), 20))
    assert threads and set(threads[0]) == {1}


def test_pair_distances_from_the_gram_match_the_differences(rng, monkeypatch):
    # well-separated means: the Gram route is taken and agrees with the direct differences;
    # with the guard made impossible to pass, the differences are used (same numbers)
    from ncdynamics.probes import collapse as collapse_module

    C, d = 7, 30
    mu = 3.0 * rng.standard_normal((C, d)) + 5.0
    counts = rng.integers(5, 50, C).astype(float)
    centred = mu - counts @ mu / counts.sum()
    gram = centred @ centred.T
    i, j = np.triu_indices(C, 1)
    direct = np.square(mu[i] - mu[j]).sum(1)
    np.testing.assert_allclose(collapse_module._pair_distances(mu, gram, i, j), direct, rtol=1e-12)
    monkeypatch.setattr(collapse_module, "_PAIR_GRAM_RTOL", np.inf)
    np.testing.assert_array_equal(collapse_module._pair_distances(mu, gram, i, j), direct)
