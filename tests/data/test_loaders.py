import gzip

import numpy as np
import pytest

from cifar_format import py2_pickle
from ncdynamics import data


def _write_idx(path, array, *, gz=False, truncate=0):
    arr = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    raw = header + arr.tobytes()
    raw = raw[: len(raw) - truncate] if truncate else raw
    if gz:
        with gzip.open(path, "wb") as fh:
            fh.write(raw)
    else:
        path.write_bytes(raw)


def _mnist_files(root, rng, *, gz=False, n_train=30, n_test=10, truncate_labels=0):
    root.mkdir(parents=True, exist_ok=True)
    sfx = ".gz" if gz else ""
    imgs = {p: rng.integers(0, 256, (n, 28, 28)) for p, n in (("train", n_train), ("t10k", n_test))}
    labs = {p: rng.integers(0, 10, n) for p, n in (("train", n_train), ("t10k", n_test))}
    for p in ("train", "t10k"):
        _write_idx(root / f"{p}-images-idx3-ubyte{sfx}", imgs[p], gz=gz)
        _write_idx(
            root / f"{p}-labels-idx1-ubyte{sfx}",
            labs[p],
            gz=gz,
            truncate=truncate_labels if p == "train" else 0,
        )
    return imgs, labs


def test_digits_is_the_default_and_scaled():
    ds = data.load()
    assert ds.name == "digits" and ds.num_classes == 10
    assert ds.x_train.shape[1:] == (1, 8, 8) and ds.x_train.dtype == np.float32
    assert 0.0 <= ds.x_train.min() and ds.x_train.max() <= 1.0
    assert len(ds.x_train) + len(ds.x_test) == 1797


def test_digits_split_is_seeded_and_classes_subset():
    a, b = data.load("digits", seed=3), data.load("digits", seed=3)
    np.testing.assert_array_equal(a.y_train, b.y_train)
    sub = data.load("digits", classes=[3, 8], flatten=True)
    assert sub.num_classes == 2 and set(np.unique(sub.y_train)) == {0, 1}
    assert sub.x_train.shape[1] == 64


def test_gaussian_clusters_have_requested_means_and_spread(rng):
    means = np.eye(3, 5) * 10
    ds = data.load(
        "gaussian-clusters",
        num_classes=3,
        dim=5,
        means=means,
        spread=0.5,
        n_train_per_class=4000,
        seed=1,
    )
    for c in range(3):
        x = ds.x_train[ds.y_train == c]
        np.testing.assert_allclose(x.mean(0), means[c], atol=0.05)
        np.testing.assert_allclose(x.std(0), 0.5, rtol=0.05)


@pytest.mark.parametrize("gz", [False, True])
def test_mnist_reader_reads_idx_files(tmp_path, rng, gz):
    imgs, labs = _mnist_files(tmp_path / "MNIST" / "raw", rng, gz=gz)
    ds = data.load("mnist", root=tmp_path)
    assert ds.x_train.shape == (30, 1, 28, 28) and ds.x_test.shape == (10, 1, 28, 28)
    np.testing.assert_allclose(ds.x_train[:, 0] * 255, imgs["train"], atol=1e-4)
    np.testing.assert_array_equal(ds.y_test, labs["t10k"])


def test_fashion_mnist_reader_uses_its_own_folder(tmp_path, rng):
    _mnist_files(tmp_path / "FashionMNIST" / "raw", rng)
    assert data.load("fashion-mnist", root=tmp_path, flatten=True).x_train.shape == (30, 784)


def test_cifar10_reader_reads_pickle_batches(tmp_path, rng):
    base = tmp_path / "cifar-10-batches-py"
    base.mkdir()
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {
            b"data": rng.integers(0, 256, (6, 3072)).astype(np.uint8),
            b"labels": [int(v) for v in rng.integers(0, 10, 6)],
        }
        (base / name).write_bytes(py2_pickle(entry))
    ds = data.load("cifar10", root=tmp_path)
    assert ds.x_train.shape == (30, 3, 32, 32) and ds.x_test.shape == (6, 3, 32, 32)
    sub = data.load("cifar10", root=tmp_path, classes=[1, 2, 3])
    assert sub.num_classes == 3 and (sub.y_train < 3).all()


@pytest.mark.parametrize(
    ("make", "exc", "match"),
    [
        (lambda p, r: data.load("imagenet"), ValueError, "must be one of .*digits"),
        (
            lambda p, r: data.load("digits", colour=True),
            ValueError,
            "unknown option.*colour.*known",
        ),
        (lambda p, r: data.load("mnist"), ValueError, "`root` is required"),
        (
            lambda p, r: data.load("mnist", root=p / "nowhere"),
            FileNotFoundError,
            "existing directory",
        ),
        (lambda p, r: data.load("mnist", root=p), FileNotFoundError, "train-images-idx3-ubyte"),
        (
            lambda p, r: (_mnist_files(p, r, truncate_labels=3), data.load("mnist", root=p)),
            ValueError,
            "truncated or damaged",
        ),
        (lambda p, r: data.load("cifar10", root=p), FileNotFoundError, "data_batch_1"),
    ],
)
def test_bad_dataset_requests_name_the_problem(tmp_path, rng, make, exc, match):
    with pytest.raises(exc, match=match):
        make(tmp_path, rng)


def test_damaged_idx_header_is_reported(tmp_path):
    bad = tmp_path / "x-idx"
    bad.write_bytes(b"\x01\x02\x03")
    with pytest.raises(ValueError, match="not an IDX file"):
        data.read_idx(bad)


def test_damaged_cifar_batch_is_reported(tmp_path):
    (tmp_path / "data_batch_1").write_bytes(b"not a pickle")
    with pytest.raises(ValueError, match="cannot read CIFAR-10 batch"):
        data.load("cifar10", root=tmp_path)
