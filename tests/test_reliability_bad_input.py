"""Bad input is one line naming what is wrong (issue 16, items 11, 12 and 13).

Tables of (input, exception or exit code, message fragment): dataset files and options,
``--set`` / ``--config`` values (refused before any run directory is created), seeds, JSON
files of a run, ``report --out`` onto an existing file, and paths that cannot be written.
"""

from pathlib import Path

import numpy as np
import pytest

from cifar_format import py2_pickle
from ncdynamics import data


# ---------------------------------------------------------------------------- data (item 13)
def _idx(path: Path, dims: tuple[int, ...], payload: bytes = b"") -> Path:
    header = bytes([0, 0, 0x08, len(dims)]) + b"".join(int(n).to_bytes(4, "big") for n in dims)
    path.write_bytes(header + payload)
    return path


def _mnist_dir(root: Path, rng, n: int = 5) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for split in ("train", "t10k"):
        _idx(root / f"{split}-images-idx3-ubyte", (n, 28, 28), bytes(n * 28 * 28))
        _idx(root / f"{split}-labels-idx1-ubyte", (n,), bytes(rng.integers(0, 10, n).tolist()))
    return root


def _cifar_dir(root: Path, rng, batch_1: bytes | None = None) -> Path:
    base = root / "cifar-10-batches-py"
    base.mkdir(parents=True)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        entry = {
            b"labels": [int(v) for v in rng.integers(0, 10, 3)],
            b"data": rng.integers(0, 256, (3, 3072)).astype(np.uint8),
        }
        (base / name).write_bytes(py2_pickle(entry))
    if batch_1 is not None:
        (base / "data_batch_1").write_bytes(batch_1)
    return root


def _global(module: str, name: str) -> bytes:
    """A protocol-2 pickle that asks for ``module.name`` (what a damaged file may hold)."""
    return b"\x80\x02c" + f"{module}\n{name}\n".encode() + b")R."


DATA_CASES = [
    (
        "cifar label too large for int64",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(
                p,
                r,
                py2_pickle({b"data": np.zeros((1, 3072), np.uint8), b"labels": [2**70]}),
            ),
        ),
        ValueError,
        r"data_batch_1.*integer labels",
    ),
    (
        "cifar pixel out of uint8",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(p, r, py2_pickle({b"data": [[300] * 3072], b"labels": [1]})),
        ),
        ValueError,
        r"data_batch_1.*uint8 pixels",
    ),
    (
        "cifar pickle naming a missing module",
        lambda p, r: data.load("cifar10", root=_cifar_dir(p, r, _global("no_such_mod", "x"))),
        ValueError,
        r"data_batch_1.*refuses global no_such_mod\.x",
    ),
    (
        "cifar pickle cut short",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(p, r, py2_pickle({b"data": b"x" * 100, b"labels": []})[:40]),
        ),
        ValueError,
        r"cannot read CIFAR-10 batch .*data_batch_1",
    ),
    (
        "cifar labels outside 0..9",
        lambda p, r: data.load(
            "cifar10",
            root=_cifar_dir(
                p, r, py2_pickle({b"data": np.zeros((1, 3072), np.uint8), b"labels": [12]})
            ),
        ),
        ValueError,
        r"data_batch_1.*labels in 0\.\.9",
    ),
    (
        "idx header whose size wraps int64 to zero",
        lambda p, r: data.read_idx(_idx(p / "huge-idx", (65536, 65536, 65536, 65536))),
        ValueError,
        r"huge-idx.*expected 18446744073709551636 bytes",
    ),
    (
        "idx header of 2**32-1 images",
        lambda p, r: data.read_idx(_idx(p / "big-idx", (2**32 - 1, 28, 28), bytes(784))),
        ValueError,
        r"big-idx.*truncated or damaged",
    ),
    (
        "mnist limit=0",
        lambda p, r: data.load("mnist", root=_mnist_dir(p, r), limit=0),
        ValueError,
        r"`limit`.*>= 1",
    ),
    (
        "mnist limit=-1",
        lambda p, r: data.load("mnist", root=_mnist_dir(p, r), limit=-1),
        ValueError,
        r"`limit`.*>= 1",
    ),
    (
        "fashion-mnist limit=1.5",
        lambda p, r: data.load("fashion-mnist", root=_mnist_dir(p, r), limit=1.5),
        TypeError,
        r"`limit` must be an integer",
    ),
    (
        "cifar10 limit=0",
        lambda p, r: data.load("cifar10", root=_cifar_dir(p, r), limit=0),
        ValueError,
        r"`limit`.*>= 1",
    ),
]


@pytest.mark.parametrize(
    ("case", "make", "exc", "match"), DATA_CASES, ids=[c[0] for c in DATA_CASES]
)
def test_bad_dataset_file_or_option_is_one_line_naming_it(tmp_path, rng, case, make, exc, match):
    with pytest.raises(exc, match=match) as info:
        make(tmp_path, rng)
    assert "\n" not in str(info.value)


def test_limit_keeps_the_first_samples(tmp_path, rng):
    ds = data.load("mnist", root=_mnist_dir(tmp_path, rng), limit=2)
    assert len(ds.y_train) == 2 and len(ds.y_test) == 2
