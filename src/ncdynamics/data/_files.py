"""Readers for datasets stored as local files: MNIST-format IDX and CIFAR-10 pickles.

Put the files under ``root`` (directly, or in the usual sub-folders ``MNIST/raw``,
``FashionMNIST/raw``, ``cifar-10-batches-py``) and pass ``root=``; or pass ``download=True``
to fetch the official files into those sub-folders, verified by SHA-256 (:mod:`._download`).
With ``download=True`` the loader reads exactly the verified files it fetched (or found
already verified); the CIFAR-10 batches are then taken out of the verified archive by name,
as regular files only (never ``extractall``: no links, no paths outside ``root``).

The CIFAR-10 batches are Python pickles, and unpickling can run arbitrary code. They are read
with a restricted unpickler (:class:`_BatchUnpickler`) that builds only what the real files
hold: dicts, lists, bytes, str, int and numpy arrays (the globals ``_reconstruct`` of
``numpy.core.multiarray`` / ``numpy._core.multiarray``, ``numpy.ndarray`` and
``numpy.dtype``); any other global is refused with an error naming the file, before anything
of it runs. A damaged file of either format is a one-line ``ValueError`` naming the file.
"""

from __future__ import annotations

import gzip
import math
import os
import pickle
import tarfile
import tempfile
import zlib
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
from numpy._core.multiarray import _reconstruct

from .._validation import check_int, check_scalar
from ._dataset import Dataset, as_float32, register
from ._download import fetch_all

# The globals a CIFAR-10 batch pickle needs: a numpy array pickles as
# _reconstruct(ndarray, shape, dtype) followed by ndarray.__setstate__. The real files were
# written by numpy 1 (``numpy.core``); numpy 2 writes ``numpy._core``.
_CIFAR_GLOBALS: dict[tuple[str, str], Any] = {
    ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    ("numpy", "ndarray"): np.ndarray,
    ("numpy", "dtype"): np.dtype,
}


class _BatchUnpickler(pickle.Unpickler):
    """An unpickler that resolves only the globals of :data:`_CIFAR_GLOBALS`.

    Builtin containers and scalars (dict, list, tuple, bytes, str, int, float) need no global,
    so they load as usual; anything that would import and call something else is refused.
    """

    def __init__(self, file: BinaryIO) -> None:
        super().__init__(file, encoding="bytes")

    def find_class(self, module: str, name: str) -> Any:
        try:
            return _CIFAR_GLOBALS[(module, name)]
        except KeyError:
            raise pickle.UnpicklingError(
                f"the reader refuses global {module}.{name}: a CIFAR-10 batch holds only "
                "dicts, lists, bytes, str, int and numpy arrays"
            ) from None


_IDX_DTYPES = {0x08: np.uint8, 0x09: np.int8, 0x0B: np.int16, 0x0C: np.int32, 0x0D: np.float32}


def read_idx(path: str | Path) -> np.ndarray:
    """Read an IDX file (raw or gzip-compressed) into an array.

    Raises
    ------
    ValueError
        If the header is not IDX, or the file is shorter than its header promises.
    """
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    try:
        with opener(path, "rb") as fh:
            raw = fh.read()
    except (OSError, EOFError) as exc:
        raise ValueError(f"cannot read IDX file {str(path)!r}: {exc}.") from exc
    if len(raw) < 4 or raw[0] != 0 or raw[1] != 0 or raw[2] not in _IDX_DTYPES:
        raise ValueError(f"{str(path)!r} is not an IDX file (bad magic number).")
    ndim = raw[3]
    header = 4 + 4 * ndim
    if len(raw) < header:
        raise ValueError(f"{str(path)!r} is truncated: header needs {header} bytes.")
    dims = [int.from_bytes(raw[4 + 4 * i : 8 + 4 * i], "big") for i in range(ndim)]
    dtype = np.dtype(_IDX_DTYPES[raw[2]]).newbyteorder(">")
    expected = header + math.prod(dims) * dtype.itemsize  # Python ints: no overflow
    if len(raw) != expected:
        raise ValueError(
            f"{str(path)!r} is truncated or damaged: expected {expected} bytes for shape "
            f"{tuple(dims)}, found {len(raw)}."
        )
    return (
        np.frombuffer(raw, dtype=dtype, offset=header).reshape(dims).astype(dtype.newbyteorder("="))
    )


def _find(root: Path, stem: str, subdirs: tuple[str, ...]) -> Path:
    candidates = []
    for sub in ("", *subdirs):
        for suffix in ("", ".gz"):
            candidates.append(root / sub / f"{stem}{suffix}")
    for c in candidates:
        if c.is_file():
            return c
    raise FileNotFoundError(
        f"dataset file {stem!r} (raw or .gz) not found under {str(root)!r}; looked in "
        f"{', '.join(sorted({str(c.parent) for c in candidates}))}; or pass download=True "
        "to fetch the official files."
    )


def _check_root(root: str | Path | None, name: str, *, create: bool = False) -> Path:
    if root is None:
        raise ValueError(f"`root` is required for dataset {name!r}: the folder holding its files.")
    path = Path(root).expanduser()
    if create:
        path.mkdir(parents=True, exist_ok=True)
    if not path.is_dir():
        raise FileNotFoundError(f"`root` must be an existing directory; got {str(path)!r}.")
    return path


def _load_idx_pair(
    root: Path, prefix: str, subdirs: tuple[str, ...], fetched: dict[str, Path] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    if fetched is not None:
        img_path = fetched[f"{prefix}-images-idx3-ubyte.gz"]
        lab_path = fetched[f"{prefix}-labels-idx1-ubyte.gz"]
    else:
        img_path = _find(root, f"{prefix}-images-idx3-ubyte", subdirs)
        lab_path = _find(root, f"{prefix}-labels-idx1-ubyte", subdirs)
    images, labels = read_idx(img_path), read_idx(lab_path)
    if images.ndim != 3:
        raise ValueError(f"{str(img_path)!r} must hold images of shape (n, rows, cols).")
    if labels.ndim != 1 or labels.shape[0] != images.shape[0]:
        raise ValueError(
            f"{str(lab_path)!r} must hold one label per image ({images.shape[0]}); "
            f"got shape {labels.shape}."
        )
    return images, labels.astype(np.int64)


def _check_limit(limit: int | None) -> int | None:
    """``limit`` keeps the first ``limit`` samples of each split: ``None`` or an int >= 1."""
    return None if limit is None else check_int(limit, "limit", low=1)


def _check_timeout(timeout: float) -> float:
    return check_scalar(timeout, "timeout", low=0.0, closed="neither")


def _mnist_like(
    name: str,
    root: str | Path | None,
    subdirs: tuple[str, ...],
    flatten: bool,
    limit: int | None,
    download: bool = False,
    timeout: float = 60.0,
) -> Dataset:
    limit = _check_limit(limit)
    timeout = _check_timeout(timeout)
    path = _check_root(root, name, create=download)
    fetched = None
    if download:
        fetched = {p.name: p for p in fetch_all(name, path, timeout=timeout)}
    out = []
    for prefix in ("train", "t10k"):
        images, labels = _load_idx_pair(path, prefix, subdirs, fetched)
        if limit is not None:
            images, labels = images[:limit], labels[:limit]
        x = images.astype(np.float32)[:, None] / 255.0
        out += [x.reshape(len(x), -1) if flatten else x, labels]
    if max(out[1].max(initial=0), out[3].max(initial=0)) > 9:
        raise ValueError(f"labels of {name!r} under {str(path)!r} must be in 0..9.")
    return Dataset(
        as_float32(out[0]), out[1], as_float32(out[2]), out[3], 10, name, {"root": str(path)}
    )


@register("mnist")
def load_mnist(
    *,
    root: str | Path | None = None,
    flatten: bool = False,
    limit: int | None = None,
    download: bool = False,
    timeout: float = 60.0,
) -> Dataset:
    """MNIST from IDX files (``train-images-idx3-ubyte`` etc., raw or ``.gz``) under ``root``.

    Pixels are scaled to [0, 1]; images have shape (1, 28, 28) unless ``flatten``.
    ``limit`` keeps the first ``limit`` images of each split. ``download=True`` fetches
    the four ``.gz`` files into ``root/MNIST/raw`` (creating ``root``), verified by SHA-256,
    unless verified copies are already there; ``timeout`` is in seconds per socket operation.

    Raises
    ------
    DownloadError
        (a ``ConnectionError``) for a failed download, in one line naming the URL.
    """
    return _mnist_like("mnist", root, ("MNIST/raw", "mnist"), flatten, limit, download, timeout)


@register("fashion-mnist")
def load_fashion_mnist(
    *,
    root: str | Path | None = None,
    flatten: bool = False,
    limit: int | None = None,
    download: bool = False,
    timeout: float = 60.0,
) -> Dataset:
    """Fashion-MNIST from IDX files under ``root`` (same layout and options as ``mnist``).

    ``download=True`` fetches into ``root/FashionMNIST/raw``.
    """
    subdirs = ("FashionMNIST/raw", "fashion-mnist")
    return _mnist_like("fashion-mnist", root, subdirs, flatten, limit, download, timeout)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def _read_cifar_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(images (n, 3, 32, 32) uint8, labels (n,) int64)`` of one CIFAR-10 batch file.

    Raises
    ------
    ValueError
        Naming the file, when it cannot be read, asks for anything but the allowed types
        (module docstring), or does not hold a batch.
    """
    try:
        with open(path, "rb") as fh:
            entry = _BatchUnpickler(fh).load()
    except Exception as exc:  # a damaged or hostile pickle can raise any type
        raise ValueError(f"cannot read CIFAR-10 batch {str(path)!r}: {_first_line(exc)}.") from exc
    if not isinstance(entry, dict) or b"data" not in entry or b"labels" not in entry:
        raise ValueError(f"{str(path)!r} is not a CIFAR-10 batch (no data/labels keys).")
    try:
        data = np.asarray(entry[b"data"], dtype=np.uint8)
        labels = np.asarray(entry[b"labels"], dtype=np.int64)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ValueError(
            f"{str(path)!r} must hold uint8 pixels and integer labels: {_first_line(exc)}."
        ) from exc
    if (
        data.ndim != 2
        or data.shape[1] != 3072
        or labels.ndim != 1
        or data.shape[0] != labels.shape[0]
    ):
        raise ValueError(
            f"{str(path)!r} must hold data of shape (n, 3072) with n labels; got data "
            f"{data.shape} and labels {labels.shape}."
        )
    if labels.size and (labels.min() < 0 or labels.max() > 9):
        raise ValueError(
            f"{str(path)!r} must hold labels in 0..9; got {labels.min()}..{labels.max()}."
        )
    return data.reshape(-1, 3, 32, 32), labels


_CIFAR_BATCHES = tuple(f"data_batch_{i}" for i in range(1, 6)) + ("test_batch",)


def _extract_cifar(archive: Path, root: Path) -> Path:
    """Take the six batches out of the verified archive into ``root/cifar-10-batches-py``.

    Only the members ``cifar-10-batches-py/<batch>`` are read, and only as regular files;
    each is written to a temporary file and renamed into place. Batches already there are
    kept (the archive is not opened when all six are present).

    Raises
    ------
    ValueError
        Naming the archive, when it cannot be read, lacks a batch, or holds one that is not
        a regular file (a link, a device).
    """
    target = root / "cifar-10-batches-py"
    missing = [n for n in _CIFAR_BATCHES if not (target / n).is_file()]
    if not missing:
        return target
    target.mkdir(parents=True, exist_ok=True)
    where = str(archive)
    try:
        with tarfile.open(archive, "r:gz") as tar:
            for n in missing:
                try:
                    member = tar.getmember(f"cifar-10-batches-py/{n}")
                except KeyError:
                    raise ValueError(f"CIFAR-10 archive {where!r} has no batch {n!r}.") from None
                src = tar.extractfile(member) if member.isfile() else None
                if src is None:
                    raise ValueError(
                        f"CIFAR-10 archive {where!r}: member {member.name!r} is not a regular "
                        "file; refused."
                    )
                fd, tmp = tempfile.mkstemp(prefix=f".{n}.", suffix=".tmp", dir=target)
                try:
                    with os.fdopen(fd, "wb") as out, src:
                        while chunk := src.read(1 << 20):
                            out.write(chunk)
                    os.chmod(tmp, 0o644)  # mkstemp makes 0600
                    os.replace(tmp, target / n)
                finally:
                    Path(tmp).unlink(missing_ok=True)
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise ValueError(f"cannot extract CIFAR-10 archive {where!r}: {_first_line(exc)}.") from exc
    return target


@register("cifar10")
def load_cifar10(
    *,
    root: str | Path | None = None,
    classes: Any = None,
    flatten: bool = False,
    limit: int | None = None,
    download: bool = False,
    timeout: float = 60.0,
) -> Dataset:
    """CIFAR-10 from the python pickle batches (``data_batch_1..5``, ``test_batch``).

    Looks under ``root`` and ``root/cifar-10-batches-py``. ``classes`` keeps a subset of
    the ten classes, relabelled 0..k-1 in the given order. Pixels are scaled to [0, 1].
    The batches are unpickled by a restricted reader that builds only dicts, lists, bytes,
    str, int and numpy arrays (module docstring). ``download=True`` fetches
    ``cifar-10-python.tar.gz`` into ``root`` (verified by SHA-256, unless a verified copy is
    there) and takes the batches out into ``root/cifar-10-batches-py`` (:func:`_extract_cifar`).
    """
    limit = _check_limit(limit)
    timeout = _check_timeout(timeout)
    path = _check_root(root, "cifar10", create=download)
    if download:
        (archive,) = fetch_all("cifar10", path, timeout=timeout)
        _extract_cifar(archive, path)
    base = path / "cifar-10-batches-py" if (path / "cifar-10-batches-py").is_dir() else path
    parts = {}
    for split, names in (
        ("train", [f"data_batch_{i}" for i in range(1, 6)]),
        ("test", ["test_batch"]),
    ):
        xs, ys = [], []
        for n in names:
            f = base / n
            if not f.is_file():
                raise FileNotFoundError(
                    f"CIFAR-10 batch file {str(f)!r} not found; or pass download=True to fetch "
                    "the official archive."
                )
            x, y = _read_cifar_batch(f)
            xs.append(x)
            ys.append(y)
        parts[split] = (np.concatenate(xs), np.concatenate(ys))
    num_classes = 10
    if classes is not None:
        keep = [int(c) for c in classes]
        if len(keep) < 2 or len(set(keep)) != len(keep) or not all(0 <= c <= 9 for c in keep):
            raise ValueError(f"`classes` must be >= 2 distinct labels in 0..9; got {classes!r}.")
        remap = np.full(10, -1)
        remap[keep] = np.arange(len(keep))
        for split, (x, y) in parts.items():
            m = np.isin(y, keep)
            parts[split] = (x[m], remap[y[m]])
        num_classes = len(keep)
    out = []
    for split in ("train", "test"):
        x, y = parts[split]
        if limit is not None:
            x, y = x[:limit], y[:limit]
        x = x.astype(np.float32) / 255.0
        out += [as_float32(x.reshape(len(x), -1) if flatten else x), y.astype(np.int64)]
    x_train, y_train, x_test, y_test = out
    info = {"root": str(base), "classes": classes}
    return Dataset(x_train, y_train, x_test, y_test, num_classes, "cifar10", info)
