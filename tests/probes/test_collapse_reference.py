"""The fast collapse metrics (dense and streamed paths) against the readable reference."""

import numpy as np
import pytest

from ncdynamics.probes import CollapseAccumulator, collapse_metrics
from ncdynamics.probes import collapse as collapse_module
from ncdynamics.probes.collapse_reference import reference_collapse_metrics

# per dtype: (rtol, atol) on the metrics, and the largest NC4 difference in samples
TOLERANCES = {np.float64: (1e-9, 1e-12, 0), np.float32: (2e-4, 1e-6, 1)}


def asymmetric_problem(rng, n_classes, dim, dtype):
    """Unequal classes, anisotropic spread, a common offset and a random classifier."""
    counts = rng.integers(3, 40, n_classes)  # unequal class sizes
    y = rng.permutation(np.repeat(np.arange(n_classes), counts))
    means = 3.0 * rng.standard_normal((n_classes, dim)) + 2.0
    scale = rng.uniform(0.2, 1.5, dim)  # a different spread per feature
    h = (means[y] + scale * rng.standard_normal((y.size, dim))).astype(dtype)
    w = means + 0.8 * rng.standard_normal(means.shape)
    b = rng.standard_normal(n_classes)
    return h, y, w, b


def assert_metrics_close(fast, ref, dtype, n_samples):
    rtol, atol, nc4_samples = TOLERANCES[dtype]
    assert set(fast) == set(ref)
    for key in ref:
        if key == "nc4":
            assert abs(fast[key] - ref[key]) * n_samples <= nc4_samples + 1e-9, key
        else:
            assert fast[key] == pytest.approx(ref[key], rel=rtol, abs=atol), key


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("n_classes, dim", [(5, 17), (9, 4)])  # d > C and d < C
@pytest.mark.parametrize("classifier", ["none", "weight", "weight+bias"])
@pytest.mark.parametrize("path", ["dense", "stream"])
def test_fast_paths_match_the_reference(rng, monkeypatch, dtype, n_classes, dim, classifier, path):
    if path == "stream":  # force the streaming path even on small input
        monkeypatch.setattr(collapse_module, "_DENSE_MAX", 0)
    h, y, w, b = asymmetric_problem(rng, n_classes, dim, dtype)
    weight = None if classifier == "none" else w
    bias = b if classifier == "weight+bias" else None
    fast = collapse_metrics(h, y, weight, bias, num_classes=n_classes)
    ref = reference_collapse_metrics(h, y, weight, bias, num_classes=n_classes)
    assert_metrics_close(fast, ref, dtype, y.size)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("nc1_divide_by_classes", [True, False])
@pytest.mark.parametrize("etf_normalize_means", [False, True])
def test_conventions_match_the_reference(rng, dtype, nc1_divide_by_classes, etf_normalize_means):
    h, y, w, b = asymmetric_problem(rng, 6, 11, dtype)
    options = {
        "nc1_divide_by_classes": nc1_divide_by_classes,
        "etf_normalize_means": etf_normalize_means,
    }
    fast = collapse_metrics(h, y, w, b, **options)
    ref = reference_collapse_metrics(h, y, w, b, **options)
    assert_metrics_close(fast, ref, dtype, y.size)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_accumulator_over_uneven_batches_matches_the_reference(rng, dtype):
    h, y, w, b = asymmetric_problem(rng, 7, 13, dtype)
    acc = CollapseAccumulator(7, weight=w, bias=b)
    cuts = [1, 5, 60, 61, y.size]
    for lo, hi in zip([0, *cuts[:-1]], cuts, strict=True):
        acc.update(h[lo:hi], y[lo:hi])
    for lo, hi in zip([0, *cuts[:-1]], cuts, strict=True):
        acc.update_nc4(h[lo:hi], y[lo:hi])
    assert_metrics_close(acc.compute(), reference_collapse_metrics(h, y, w, b), dtype, y.size)


def test_reference_is_zero_at_exact_collapse():
    means = np.eye(4) - 1 / 4  # a simplex ETF in R^4, no spread, W = M^T
    h = np.repeat(means, 3, axis=0)
    y = np.repeat(np.arange(4), 3)
    for key, value in reference_collapse_metrics(h, y, means).items():
        if key not in ("within_trace", "between_trace"):
            assert value == pytest.approx(0.0, abs=1e-12), key
