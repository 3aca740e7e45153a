"""O15: the synthetic datasets of the alignment experiments."""

import numpy as np
import pytest

from ncdynamics.data import load


def test_two_point_values():
    ds = load("two-point", dx=0.5, dy=1.0)
    np.testing.assert_array_equal(ds.x_train, np.array([[-1.0], [-0.5]], np.float32))
    np.testing.assert_allclose(ds.info["targets_train"], [[0.6], [1.6]], rtol=1e-6)
    assert ds.x_train.dtype == np.float32 and ds.x_train.shape == (2, 1)
    assert ds.y_train.tolist() == [0, 1] and len(ds.x_test) == 0


def test_xor_shapes_and_targets():
    ds = load("xor")
    assert ds.x_train.shape == (4, 2) and ds.info["targets_train"].shape == (4, 1)
    t = ds.info["targets_train"][:, 0]
    np.testing.assert_array_equal(t, np.logical_xor(ds.x_train[:, 0], ds.x_train[:, 1]))


def test_orthogonal_blobs_layout():
    ds = load("orthogonal-blobs")
    x, t, info = ds.x_train, ds.info["targets_train"][:, 0], ds.info
    assert x.shape == (1800, 27)
    np.testing.assert_array_equal(x[:, 25:].sum(1), 1.0)
    np.testing.assert_array_equal(x[:, 25:].argmax(1), info["context"])
    c0 = info["context"] == 0
    np.testing.assert_allclose(t[c0], (info["mu_x"][c0] - 2.0) / 2.0, atol=1e-6)
    np.testing.assert_allclose(t[~c0], (info["mu_y"][~c0] - 2.0) / 2.0, atol=1e-6)
    # the blob peaks where it is centred: a grid corner blob is brightest at that pixel
    corner = np.flatnonzero((info["mu_x"] == 0) & (info["mu_y"] == 0))[0]
    assert x[corner, :25].argmax() == 0


@pytest.mark.parametrize(
    ("name", "opts", "match"),
    [
        ("two-point", {"dx": 0.0}, "dx"),
        ("two-point", {"dy": float("nan")}, "dy"),
        ("orthogonal-blobs", {"sigma": 0.0}, "sigma"),
        ("orthogonal-blobs", {"position_range": (4.0, 0.0)}, "position_range"),
        ("orthogonal-blobs", {"n_positions": 1}, "n_positions"),
        ("xor", {"noise": 1.0}, "noise"),
    ],
)
def test_loaders_reject_bad_options(name, opts, match):
    with pytest.raises(ValueError, match=match):
        load(name, **opts)


def test_orthogonal_blobs_authors_normalisation():
    # loekvanrossem/universality orthogonal.ipynb cell 1: exp(-d^2/2) on linspace(-1, 1, 5)
    # pixels (sigma 1 there = 2 pixel spacings), centres linspace(-1, 1, n), each blob / sum
    ds = load("orthogonal-blobs", n_positions=4, sigma=2.0, normalize=True)
    img = ds.x_train[:, :25].astype(np.float64)
    np.testing.assert_allclose(img.sum(1), 1.0, rtol=1e-6)
    pix = np.linspace(-1, 1, 5)
    mu = np.linspace(-1, 1, 4)
    px, py = np.meshgrid(pix, pix, indexing="ij")
    k = 1 * 4 + 2  # mu_x = mu[1], mu_y = mu[2], context 0
    g = np.exp(-((px - mu[1]) ** 2 + (py - mu[2]) ** 2) / 2)
    np.testing.assert_allclose(img[k], (g / g.sum()).ravel(), rtol=1e-5)
    assert ds.info["targets_train"][k, 0] == np.float32(mu[1])
