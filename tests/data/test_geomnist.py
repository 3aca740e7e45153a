"""GEOMNIST (oracle 12, docs/theories/lesde.md) and exact per-class label corruption (oracle 11)."""

import numpy as np
import pytest

from ncdynamics.data import corrupt_labels_per_class, load
from ncdynamics.data.geomnist import make_geomnist_class


def test_shapes_counts_and_range():
    ds = load("geomnist", n_train_per_class=20, n_test_per_class=10, seed=0)
    assert ds.x_train.shape == (60, 1, 32, 32) and ds.x_test.shape == (30, 1, 32, 32)
    np.testing.assert_array_equal(np.bincount(ds.y_train), [20, 20, 20])
    np.testing.assert_array_equal(np.bincount(ds.y_test), [10, 10, 10])
    x = np.concatenate([ds.x_train, ds.x_test])
    assert x.min() >= -0.01 and x.max() <= 1.01 and x.dtype == np.float32
    assert ds.num_classes == 3


def test_seed_determines_output():
    a = load("geomnist", n_train_per_class=5, n_test_per_class=5, seed=3)
    b = load("geomnist", n_train_per_class=5, n_test_per_class=5, seed=3)
    c = load("geomnist", n_train_per_class=5, n_test_per_class=5, seed=4)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    assert not np.array_equal(a.x_train, c.x_train)


def test_classes_differ_in_mean_image():
    ds = load("geomnist", n_train_per_class=60, n_test_per_class=0, seed=0)
    means = np.stack([ds.x_train[ds.y_train == c].mean(axis=0) for c in range(3)])
    for i in range(3):
        for j in range(i + 1, 3):
            assert np.abs(means[i] - means[j]).max() > 0.2
    # mean intensities close to the reference recipe's (0.214, 0.149, 0.223), shape-ordered
    mean_int = means.reshape(3, -1).mean(axis=1)
    assert mean_int[1] < mean_int[0] and mean_int[1] < mean_int[2]


def _principal_angle(img):
    rows, cols = np.mgrid[0 : img.shape[0], 0 : img.shape[1]]
    w = np.clip(img, 0, None)
    r0, c0 = (w * rows).sum() / w.sum(), (w * cols).sum() / w.sum()
    cov = np.cov(np.stack([(rows - r0).ravel(), (cols - c0).ravel()]), aweights=w.ravel())
    vals, vecs = np.linalg.eigh(cov)
    v = vecs[:, -1]
    return -np.degrees(np.arctan2(v[0], v[1])) % 180  # rows point down: counter-clockwise


def test_rotation_angle_is_linear_in_index():
    # the ellipse's long axis starts horizontal; index i is rotated by 176 i / N degrees
    n = 8
    imgs = make_geomnist_class(2, n, rng=np.random.default_rng(0))
    for i in range(n):
        got = _principal_angle(imgs[i])
        want = 176.0 * i / n
        diff = min(abs(got - want), 180 - abs(got - want))
        assert diff < 3.0


def test_blur_sigma_range_bounds_the_edge_profile():
    # a blurred unit step has maximal slope 1/(sigma sqrt(2 pi)); sigma in [0.9, 1.1]
    imgs = make_geomnist_class(1, 40, rng=np.random.default_rng(1))
    slopes = np.abs(np.diff(imgs[0], axis=1)).max()
    assert 1 / (1.1 * np.sqrt(2 * np.pi)) * 0.9 < slopes < 1 / (0.9 * np.sqrt(2 * np.pi)) * 1.1


@pytest.mark.parametrize("p", [0.0, 0.3, 2 / 3, 0.8])
def test_corruption_flips_exact_counts(p):
    n_tr = 300
    y = np.repeat(np.arange(3), n_tr)
    y2 = corrupt_labels_per_class(y, p, 3, np.random.default_rng(0))
    m = int(np.floor(p * n_tr))
    for c in range(3):
        new = y2[y == c]
        assert np.sum(new != c) == m
        others = [j for j in range(3) if j != c]
        assert np.sum(new == others[0]) == m // 2
        assert np.sum(new == others[1]) == m - m // 2
        if abs(p - 2 / 3) < 1e-12:
            np.testing.assert_allclose(np.bincount(new, minlength=3) / n_tr, 1 / 3, atol=1 / n_tr)


def test_loader_label_noise_keeps_test_labels_clean():
    ds = load("geomnist", n_train_per_class=30, n_test_per_class=6, seed=0, label_noise=0.5)
    assert np.sum(ds.y_train != np.repeat(np.arange(3), 30)) == 3 * 15
    np.testing.assert_array_equal(ds.y_test, np.repeat(np.arange(3), 6))


@pytest.mark.parametrize(
    "kw, match",
    [
        ({"n_train_per_class": 0}, "n_train_per_class"),
        ({"label_noise": 1.5}, "label_noise"),
        ({"size": 4}, "size"),
    ],
)
def test_bad_options_rejected(kw, match):
    with pytest.raises(ValueError, match=match):
        load("geomnist", **kw)
