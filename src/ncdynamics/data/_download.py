"""Fetching the official MNIST, Fashion-MNIST and CIFAR-10 files, verified by SHA-256.

:func:`fetch` downloads one file over HTTPS with :mod:`urllib.request` (a timeout on every
socket operation, a tqdm progress bar for files over 1 MiB), streams it into a temporary file
in the destination folder while hashing it, checks its length and SHA-256 against
:data:`REMOTE`, and only then renames it into place, so a failed transfer leaves nothing
behind. A file already present whose SHA-256 matches is never fetched again: after a
successful check a stamp ``<file>.sha256`` records the digest with the file's size and
modification time, so later calls skip even the hashing; without a valid stamp the file is
hashed, and a file that does not match is downloaded afresh.

Every failure is a one-line :class:`DownloadError` naming the URL (server unreachable,
timeout, HTTP error, redirect loop, transfer cut short, wrong size, wrong checksum).

Limits: besides the per-read ``timeout``, a whole transfer must finish within a total
``deadline`` (by default ``timeout`` plus the published size at 16 KiB/s), so a server that
drips a byte at a time is given up; a body is read no further than one byte past the
published size, so a server sending far more than the file is refused at once, not after
reading it all. A process killed mid-download leaves its ``.<file>.<random>.part``; the
next call for that file removes such parts whose writer is gone (each running download holds
an exclusive ``flock`` on its part, so a live one is never touched).

Where the URLs and checksums come from (cited per entry below):

- MNIST: Yann LeCun's site serves plain HTTP only (and is often unavailable), so the files
  are fetched from the Google-hosted copy that TensorFlow Datasets uses
  (``storage.googleapis.com/cvdf-datasets/mnist``); sizes and SHA-256 from
  tensorflow/datasets ``tensorflow_datasets/url_checksums/mnist.txt``.
- Fashion-MNIST: the official host (Zalando's S3 website) serves plain HTTP only; the same
  files are served over HTTPS by the Keras datasets bucket
  (``storage.googleapis.com/tensorflow/tf-keras-datasets``). SHA-256 and sizes from
  tensorflow/datasets ``url_checksums/fashion_mnist.txt`` (which lists Zalando's URLs), and
  the same SHA-256 values are in keras-team/keras ``keras/src/datasets/fashion_mnist.py``
  for the HTTPS copy: the bytes are the same.
- CIFAR-10: the authors' site (``www.cs.toronto.edu/~kriz``), python version. SHA-256 from
  tensorflow/datasets ``url_checksums/cifar10.csv`` and keras ``datasets/cifar10.py``
  (``file_hash``), which agree; the size (170,498,071 bytes) as published alongside the
  torchvision MD5 ``c58f30108f718f92721af3b95e74349a``.
"""

from __future__ import annotations

import glob
import hashlib
import http.client
import os
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from tqdm.auto import tqdm

__all__ = ["REMOTE", "DownloadError", "Remote", "RemoteFile", "fetch", "fetch_all"]

_CHUNK = 1 << 16
_PROGRESS_FROM = 1 << 20  # show a progress bar for files larger than 1 MiB
_SLOWEST = 16 * 1024  # bytes/s: the default total deadline allows this average rate


class DownloadError(ConnectionError):
    """A download that failed: unreachable server, HTTP error, truncated or wrong file."""


@dataclass(frozen=True)
class RemoteFile:
    """One published file: its URL, local name, SHA-256, size in bytes, and where from."""

    url: str
    filename: str
    sha256: str
    size: int | None
    source: str


@dataclass(frozen=True)
class Remote:
    """A dataset's files and the sub-folder of ``root`` they are saved in."""

    subdir: str
    files: tuple[RemoteFile, ...]


_TFDS_MNIST = "tensorflow/datasets tensorflow_datasets/url_checksums/mnist.txt"
_TFDS_FASHION = (
    "tensorflow/datasets tensorflow_datasets/url_checksums/fashion_mnist.txt; "
    "keras-team/keras keras/src/datasets/fashion_mnist.py (FILE_HASHES)"
)
_TFDS_CIFAR = (
    "tensorflow/datasets tensorflow_datasets/url_checksums/cifar10.csv; "
    "keras-team/keras datasets/cifar10.py (file_hash)"
)
_MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
_FASHION_URL = "https://storage.googleapis.com/tensorflow/tf-keras-datasets/"

REMOTE: dict[str, Remote] = {
    "mnist": Remote(
        "MNIST/raw",
        (
            RemoteFile(
                _MNIST_URL + "train-images-idx3-ubyte.gz",
                "train-images-idx3-ubyte.gz",
                "440fcabf73cc546fa21475e81ea370265605f56be210a4024d2ca8f203523609",
                9912422,
                _TFDS_MNIST,
            ),
            RemoteFile(
                _MNIST_URL + "train-labels-idx1-ubyte.gz",
                "train-labels-idx1-ubyte.gz",
                "3552534a0a558bbed6aed32b30c495cca23d567ec52cac8be1a0730e8010255c",
                28881,
                _TFDS_MNIST,
            ),
            RemoteFile(
                _MNIST_URL + "t10k-images-idx3-ubyte.gz",
                "t10k-images-idx3-ubyte.gz",
                "8d422c7b0a1c1c79245a5bcf07fe86e33eeafee792b84584aec276f5a2dbc4e6",
                1648877,
                _TFDS_MNIST,
            ),
            RemoteFile(
                _MNIST_URL + "t10k-labels-idx1-ubyte.gz",
                "t10k-labels-idx1-ubyte.gz",
                "f7ae60f92e00ec6debd23a6088c31dbd2371eca3ffa0defaefb259924204aec6",
                4542,
                _TFDS_MNIST,
            ),
        ),
    ),
    "fashion-mnist": Remote(
        "FashionMNIST/raw",
        (
            RemoteFile(
                _FASHION_URL + "train-images-idx3-ubyte.gz",
                "train-images-idx3-ubyte.gz",
                "3aede38d61863908ad78613f6a32ed271626dd12800ba2636569512369268a84",
                26421880,
                _TFDS_FASHION,
            ),
            RemoteFile(
                _FASHION_URL + "train-labels-idx1-ubyte.gz",
                "train-labels-idx1-ubyte.gz",
                "a04f17134ac03560a47e3764e11b92fc97de4d1bfaf8ba1a3aa29af54cc90845",
                29515,
                _TFDS_FASHION,
            ),
            RemoteFile(
                _FASHION_URL + "t10k-images-idx3-ubyte.gz",
                "t10k-images-idx3-ubyte.gz",
                "346e55b948d973a97e58d2351dde16a484bd415d4595297633bb08f03db6a073",
                4422102,
                _TFDS_FASHION,
            ),
            RemoteFile(
                _FASHION_URL + "t10k-labels-idx1-ubyte.gz",
                "t10k-labels-idx1-ubyte.gz",
                "67da17c76eaffca5446c3361aaab5c3cd6d1c2608764d35dfb1850b086bf8dd5",
                5148,
                _TFDS_FASHION,
            ),
        ),
    ),
    "cifar10": Remote(
        "",
        (
            RemoteFile(
                "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",
                "cifar-10-python.tar.gz",
                "6d958be074577803d12ecdefd02955f39262c83c16fe9348329d7fe0b5c001ce",
                170498071,
                _TFDS_CIFAR,
            ),
        ),
    ),
}


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".sha256")


def _stamp_text(path: Path, sha256: str) -> str:
    st = path.stat()
    return f"{sha256} {st.st_size} {st.st_mtime_ns}\n"


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _write_stamp(path: Path, sha256: str) -> None:
    """Record that ``path`` matched ``sha256`` (best effort: a stamp only saves hashing)."""
    stamp = _stamp_path(path)
    tmp: str | None = None
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{stamp.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w") as fh:
            fh.write(_stamp_text(path, sha256))
        os.replace(tmp, stamp)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


def is_verified(path: Path, remote: RemoteFile) -> bool:
    """Whether ``path`` holds exactly the published file (by stamp, else by hashing it)."""
    if not path.is_file():
        return False
    stamp = _stamp_path(path)
    try:
        if stamp.read_text() == _stamp_text(path, remote.sha256):
            return True
    except OSError:
        pass
    if remote.size is not None and path.stat().st_size != remote.size:
        return False
    if _sha256_of(path) != remote.sha256:
        return False
    _write_stamp(path, remote.sha256)
    return True


def _reason(exc: BaseException | str) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _stream(remote: RemoteFile, fh: IO[bytes], timeout: float, deadline: float) -> tuple[int, str]:
    """Copy the response body of ``remote.url`` into ``fh``; ``(n_bytes, sha256)``.

    Gives up after ``deadline`` seconds in all, and one byte past the published size."""
    url = remote.url
    start = time.monotonic()
    request = urllib.request.Request(url, headers={"User-Agent": "ncdynamics"})
    digest = hashlib.sha256()
    n = 0
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            header = response.headers.get("Content-Length")
            announced = int(header) if header and header.isdigit() else None
            total = remote.size if remote.size is not None else announced
            with tqdm(
                total=total,
                unit="B",
                unit_scale=True,
                unit_divisor=1024,
                desc=remote.filename,
                leave=False,
                disable=total is None or total < _PROGRESS_FROM,
            ) as bar:
                # read1: what one socket read gives, so the deadline is checked between
                # reads even when the server drips a byte at a time
                while chunk := response.read1(_CHUNK):
                    fh.write(chunk)
                    digest.update(chunk)
                    n += len(chunk)
                    bar.update(len(chunk))
                    if remote.size is not None and n > remote.size:
                        raise DownloadError(
                            f"download of {url} is longer than published: got at least "
                            f"{remote.size + 1} bytes, the published file has {remote.size}; "
                            "stopped reading."
                        )
                    if time.monotonic() - start > deadline:
                        raise DownloadError(
                            f"download of {url} did not finish within {deadline:g} s (the "
                            f"total deadline; {n} bytes received)."
                        )
    except urllib.error.HTTPError as exc:
        if 300 <= exc.code < 400:
            raise DownloadError(
                f"cannot download {url}: the server's redirects (HTTP {exc.code}) lead in a "
                "loop or nowhere."
            ) from exc
        raise DownloadError(
            f"cannot download {url}: HTTP {exc.code} {_reason(str(exc.reason))}."
        ) from exc
    except http.client.IncompleteRead as exc:
        got = n + len(exc.partial)
        raise DownloadError(
            f"download of {url} was truncated: the connection closed after {got} bytes."
        ) from exc
    except TimeoutError as exc:
        raise DownloadError(f"download of {url} timed out after {timeout} s.") from exc
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise DownloadError(f"download of {url} timed out after {timeout} s.") from exc
        raise DownloadError(f"cannot reach {url}: {_reason(exc.reason)}.") from exc
    except (http.client.HTTPException, ConnectionError) as exc:
        raise DownloadError(f"download of {url} failed: {_reason(exc)}.") from exc
    if announced is not None and n < announced:
        raise DownloadError(
            f"download of {url} was truncated: got {n} of {announced} announced bytes."
        )
    return n, digest.hexdigest()


def _lock_part(fd: int) -> None:
    """Hold an exclusive lock on a part being written (released when the process ends)."""
    if sys.platform != "win32":
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)


def _remove_stale_parts(folder: Path, filename: str) -> None:
    """Remove ``.<filename>.<random>.part`` files whose download is no longer running.

    A running download holds an exclusive lock on its part; a part that can be locked was
    left by a process that died. Only regular files of exactly that name pattern are touched.
    """
    if sys.platform == "win32":  # pragma: no cover - no flock: parts stay
        return
    import fcntl

    prefix = f".{filename}."
    for part in folder.glob(f".{glob.escape(filename)}.*.part"):
        rest = part.name[len(prefix) : -len(".part")]
        if not rest or "." in rest or part.is_symlink() or not part.is_file():
            continue
        try:
            fd = os.open(part, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0))
        except OSError:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            continue  # a live download holds it
        else:
            part.unlink(missing_ok=True)
        finally:
            os.close(fd)


def fetch(
    remote: RemoteFile,
    folder: str | Path,
    *,
    timeout: float = 60.0,
    deadline: float | None = None,
) -> Path:
    """Download ``remote`` into ``folder`` unless a verified copy is already there.

    Parameters
    ----------
    remote : RemoteFile
    folder : path
        Created if missing; the file is saved as ``folder / remote.filename``.
    timeout : float, default=60
        Seconds allowed for connecting and for each read.
    deadline : float, optional
        Seconds allowed for the whole transfer; by default ``timeout`` plus the published
        size at 16 KiB/s (``10 * timeout`` when the size is not published).

    Returns
    -------
    Path of the verified file.

    Raises
    ------
    DownloadError
        One line naming the URL: server unreachable, timeout, HTTP error, truncated
        transfer, wrong size or wrong SHA-256. Nothing is left behind.
    """
    folder = Path(folder)
    dest = folder / remote.filename
    if is_verified(dest, remote):
        return dest
    if deadline is None:
        deadline = timeout + (remote.size / _SLOWEST if remote.size else 9 * timeout)
    folder.mkdir(parents=True, exist_ok=True)
    _remove_stale_parts(folder, remote.filename)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{remote.filename}.", suffix=".part", dir=folder)
    tmp = Path(tmp_name)
    try:
        _lock_part(fd)
        with os.fdopen(fd, "wb") as fh:
            n, sha256 = _stream(remote, fh, timeout, deadline)
            fh.flush()
            os.fsync(fh.fileno())
        if remote.size is not None and n != remote.size:
            kind = "truncated" if n < remote.size else "longer than published"
            raise DownloadError(
                f"download of {remote.url} is {kind}: got {n} bytes, the published file has "
                f"{remote.size}."
            )
        if sha256 != remote.sha256:
            raise DownloadError(
                f"download of {remote.url} has the wrong SHA-256: expected {remote.sha256}, "
                f"got {sha256}; the file was not saved."
            )
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; a dataset file is readable by all
        os.replace(tmp, dest)
    finally:
        tmp.unlink(missing_ok=True)
    _write_stamp(dest, remote.sha256)
    return dest


def fetch_all(name: str, root: Path, *, timeout: float = 60.0) -> list[Path]:
    """Fetch every file of dataset ``name`` into ``root / REMOTE[name].subdir``."""
    remote = REMOTE[name]
    folder = root / remote.subdir if remote.subdir else root
    return [fetch(f, folder, timeout=timeout) for f in remote.files]
