"""``download=True``: fetched from a local HTTP server on 127.0.0.1, never the internet.

The URL table (``_download.REMOTE``) is monkeypatched to point at a server that serves files
the tests make, with their own SHA-256 checksums.
"""

import gzip
import hashlib
import http.server
import io
import socket
import tarfile
import threading
import time

import numpy as np
import pytest

from cifar_format import py2_pickle
from ncdynamics import data
from ncdynamics.data import _download
from ncdynamics.data._download import DownloadError, RemoteFile


class _Server:
    """A threaded HTTP server on an ephemeral port; ``files`` maps a path to its bytes.

    ``short[path] = n`` announces the full length but sends only the first ``n`` bytes,
    then closes the connection (a transfer cut short).
    """

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.short: dict[str, int] = {}
        self.drip: dict[str, float] = {}  # path -> seconds between single bytes
        self.redirect: dict[str, str] = {}  # path -> Location (a loop when it points back)
        self.extra: dict[str, int] = {}  # path -> bytes sent beyond the body, no length
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                server.requests.append(self.path)
                if self.path in server.redirect:
                    self.send_response(302)
                    self.send_header("Location", server.redirect[self.path])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = server.files.get(self.path)
                if body is None:
                    self.send_error(404, "Not Found")
                    return
                self.send_response(200)
                if self.path in server.extra:  # no length announced: sent until closed
                    self.end_headers()
                    try:
                        self.wfile.write(body)
                        for _ in range(server.extra[self.path] // 65536):
                            self.wfile.write(b"\0" * 65536)
                    except OSError:  # the client stopped reading: what the test wants
                        pass
                    self.close_connection = True
                    return
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path in server.drip:
                    try:
                        for i in range(len(body)):
                            self.wfile.write(body[i : i + 1])
                            self.wfile.flush()
                            time.sleep(server.drip[self.path])
                    except OSError:
                        pass
                    self.close_connection = True
                    return
                n = server.short.get(self.path, len(body))
                self.wfile.write(body[:n])
                self.wfile.flush()
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    def serve(self, name: str, body: bytes) -> RemoteFile:
        self.files[f"/{name}"] = body
        return RemoteFile(
            f"{self.base}/{name}", name, hashlib.sha256(body).hexdigest(), len(body), "test"
        )

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server():
    s = _Server()
    yield s
    s.close()


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _idx_gz(array) -> bytes:
    arr = np.asarray(array, dtype=np.uint8)
    header = bytes([0, 0, 0x08, arr.ndim]) + b"".join(int(n).to_bytes(4, "big") for n in arr.shape)
    return gzip.compress(header + arr.tobytes())


def _serve_mnist(server, rng, monkeypatch, name="mnist"):
    files = []
    for prefix, n in (("train", 20), ("t10k", 8)):
        images = rng.integers(0, 256, (n, 28, 28))
        labels = rng.integers(0, 10, n)
        files.append(server.serve(f"{prefix}-images-idx3-ubyte.gz", _idx_gz(images)))
        files.append(server.serve(f"{prefix}-labels-idx1-ubyte.gz", _idx_gz(labels)))
    sub = _download.REMOTE[name].subdir
    monkeypatch.setitem(_download.REMOTE, name, _download.Remote(sub, tuple(files)))
    return files


# ----------------------------------------------------------------------------- fetch


def test_fetch_writes_the_verified_file_and_leaves_no_temporary(server, tmp_path):
    remote = server.serve("a.bin", b"x" * 5000)
    path = _download.fetch(remote, tmp_path / "dl", timeout=5)
    assert path == tmp_path / "dl" / "a.bin" and path.read_bytes() == b"x" * 5000
    assert sorted(p.name for p in path.parent.iterdir() if p.name != "a.bin") == ["a.bin.sha256"]


def test_fetch_never_downloads_a_verified_file_again(server, tmp_path):
    remote = server.serve("a.bin", b"payload")
    _download.fetch(remote, tmp_path, timeout=5)
    server.close()  # a second fetch must not need the network at all
    assert _download.fetch(remote, tmp_path, timeout=5).read_bytes() == b"payload"
    assert server.requests == ["/a.bin"]


def test_fetch_accepts_an_existing_good_file_without_a_stamp(server, tmp_path):
    remote = server.serve("a.bin", b"payload")
    (tmp_path / "a.bin").write_bytes(b"payload")
    _download.fetch(remote, tmp_path, timeout=5)
    assert server.requests == []


def test_fetch_replaces_a_damaged_local_file(server, tmp_path):
    remote = server.serve("a.bin", b"payload")
    _download.fetch(remote, tmp_path, timeout=5)
    (tmp_path / "a.bin").write_bytes(b"paylo4d")  # same size, different bytes
    _download.fetch(remote, tmp_path, timeout=5)
    assert (tmp_path / "a.bin").read_bytes() == b"payload" and len(server.requests) == 2


def _assert_one_line_and_nothing_left(exc_info, tmp_path, *fragments):
    msg = str(exc_info.value)
    assert "\n" not in msg
    for f in fragments:
        assert f in msg, (f, msg)
    assert [p.name for p in tmp_path.iterdir()] == []  # no partial or temporary file


def test_wrong_checksum_is_a_one_line_error_and_keeps_nothing(server, tmp_path):
    good = server.serve("a.bin", b"payload")
    bad = RemoteFile(good.url, good.filename, "0" * 64, good.size, "test")
    with pytest.raises(DownloadError, match="SHA-256") as info:
        _download.fetch(bad, tmp_path, timeout=5)
    _assert_one_line_and_nothing_left(info, tmp_path, good.url, "0" * 64)


def test_connection_cut_short_is_a_truncation_error(server, tmp_path):
    remote = server.serve("a.bin", b"y" * 100_000)
    server.short["/a.bin"] = 1000
    with pytest.raises(DownloadError, match="truncated") as info:
        _download.fetch(remote, tmp_path, timeout=5)
    _assert_one_line_and_nothing_left(info, tmp_path, remote.url)


def test_file_shorter_than_the_published_size_is_a_truncation_error(server, tmp_path):
    remote = server.serve("a.bin", b"z" * 500)
    longer = RemoteFile(remote.url, remote.filename, remote.sha256, 900, "test")
    with pytest.raises(DownloadError, match="truncated") as info:
        _download.fetch(longer, tmp_path, timeout=5)
    _assert_one_line_and_nothing_left(info, tmp_path, remote.url, "500", "900")


def test_http_error_is_a_one_line_error_naming_the_url(server, tmp_path):
    remote = RemoteFile(f"{server.base}/missing.bin", "missing.bin", "0" * 64, None, "test")
    with pytest.raises(DownloadError, match="HTTP 404") as info:
        _download.fetch(remote, tmp_path, timeout=5)
    _assert_one_line_and_nothing_left(info, tmp_path, remote.url)


def test_server_down_is_a_one_line_error_naming_the_url(tmp_path):
    url = f"http://127.0.0.1:{_closed_port()}/a.bin"
    remote = RemoteFile(url, "a.bin", "0" * 64, None, "test")
    with pytest.raises(DownloadError, match="cannot reach") as info:
        _download.fetch(remote, tmp_path, timeout=5)
    _assert_one_line_and_nothing_left(info, tmp_path, url)


def test_a_server_that_stalls_times_out(tmp_path):
    with socket.socket() as sock:  # accepts the connection, never answers
        sock.bind(("127.0.0.1", 0))
        sock.listen(1)
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/a.bin"
        remote = RemoteFile(url, "a.bin", "0" * 64, None, "test")
        with pytest.raises(DownloadError, match="timed out") as info:
            _download.fetch(remote, tmp_path, timeout=0.3)
    _assert_one_line_and_nothing_left(info, tmp_path, url)


def test_download_errors_are_connection_errors_for_the_cli():
    assert issubclass(DownloadError, ConnectionError)


# ----------------------------------------------------------------------------- the table


@pytest.mark.parametrize("name", ["mnist", "fashion-mnist", "cifar10"])
def test_the_url_table_is_https_with_full_sha256_and_a_source(name):
    remote = _download.REMOTE[name]
    assert remote.files
    for f in remote.files:
        assert f.url.startswith("https://") and f.url.endswith("/" + f.filename)
        assert len(f.sha256) == 64 and int(f.sha256, 16) >= 0
        assert f.size is not None and f.size > 0 and f.source


# ----------------------------------------------------------------------------- load(download=True)


def test_mnist_download_then_load_offline(server, tmp_path, rng, monkeypatch):
    files = _serve_mnist(server, rng, monkeypatch)
    ds = data.load("mnist", root=tmp_path / "new", download=True, timeout=5)
    assert ds.x_train.shape == (20, 1, 28, 28) and ds.x_test.shape == (8, 1, 28, 28)
    raw = tmp_path / "new" / "MNIST" / "raw"
    assert sorted(p.name for p in raw.glob("*.gz")) == sorted(f.filename for f in files)
    server.close()
    again = data.load("mnist", root=tmp_path / "new", download=True)
    np.testing.assert_array_equal(ds.x_train, again.x_train)
    assert len(server.requests) == 4


def test_fashion_mnist_download_uses_its_own_folder(server, tmp_path, rng, monkeypatch):
    _serve_mnist(server, rng, monkeypatch, name="fashion-mnist")
    ds = data.load("fashion-mnist", root=tmp_path, download=True, flatten=True)
    assert ds.x_train.shape == (20, 784)
    assert len(list((tmp_path / "FashionMNIST" / "raw").glob("*.gz"))) == 4


def test_load_with_a_bad_checksum_fails_in_one_line(server, tmp_path, rng, monkeypatch):
    files = _serve_mnist(server, rng, monkeypatch)
    f0 = files[0]
    broken = (RemoteFile(f0.url, f0.filename, "f" * 64, f0.size, "test"), *files[1:])
    monkeypatch.setitem(_download.REMOTE, "mnist", _download.Remote("MNIST/raw", broken))
    with pytest.raises(DownloadError, match="SHA-256") as info:
        data.load("mnist", root=tmp_path, download=True)
    assert "\n" not in str(info.value) and f0.url in str(info.value)


def test_without_download_nothing_is_fetched(server, tmp_path, rng, monkeypatch):
    _serve_mnist(server, rng, monkeypatch)
    with pytest.raises(FileNotFoundError, match="download=True"):
        data.load("mnist", root=tmp_path)
    assert server.requests == []


def _cifar_archive(rng) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch", "batches.meta"]:
            entry = {
                b"data": rng.integers(0, 256, (4, 3072)).astype(np.uint8),
                b"labels": [int(v) for v in rng.integers(0, 10, 4)],
            }
            body = py2_pickle(entry)
            info = tarfile.TarInfo(f"cifar-10-batches-py/{name}")
            info.size = len(body)
            tar.addfile(info, io.BytesIO(body))
    return buf.getvalue()


def test_cifar10_download_extracts_the_batches_once(server, tmp_path, rng, monkeypatch):
    remote = server.serve("cifar-10-python.tar.gz", _cifar_archive(rng))
    monkeypatch.setitem(_download.REMOTE, "cifar10", _download.Remote("", (remote,)))
    ds = data.load("cifar10", root=tmp_path, download=True)
    assert ds.x_train.shape == (20, 3, 32, 32) and ds.x_test.shape == (4, 3, 32, 32)
    assert (tmp_path / "cifar-10-batches-py" / "test_batch").is_file()
    server.close()
    again = data.load("cifar10", root=tmp_path, download=True)
    np.testing.assert_array_equal(ds.y_train, again.y_train)
    assert server.requests == ["/cifar-10-python.tar.gz"]


def test_cifar10_archive_with_a_hostile_member_is_refused(server, tmp_path, monkeypatch):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("cifar-10-batches-py/data_batch_1")
        info.type = tarfile.SYMTYPE
        info.linkname = "/etc/passwd"
        tar.addfile(info)
    remote = server.serve("cifar-10-python.tar.gz", buf.getvalue())
    monkeypatch.setitem(_download.REMOTE, "cifar10", _download.Remote("", (remote,)))
    with pytest.raises(ValueError, match="cifar-10-python.tar.gz") as info:
        data.load("cifar10", root=tmp_path, download=True)
    assert "\n" not in str(info.value)
    assert not (tmp_path / "cifar-10-batches-py" / "data_batch_1").exists()


@pytest.mark.parametrize("timeout", [0, -1.0])
def test_timeout_must_be_positive(tmp_path, timeout):
    with pytest.raises(ValueError, match="timeout"):
        data.load("mnist", root=tmp_path, download=True, timeout=timeout)


def test_downloaded_file_is_readable_by_all(server, tmp_path):
    path = _download.fetch(server.serve("a.bin", b"payload"), tmp_path, timeout=5)
    assert path.stat().st_mode & 0o777 == 0o644


def test_a_server_dripping_bytes_meets_the_total_deadline(server, tmp_path):
    remote = server.serve("slow.bin", b"x" * 400)
    server.drip["/slow.bin"] = 0.05  # each read is quick: only a total deadline stops it
    with pytest.raises(DownloadError, match="did not finish within 1") as info:
        _download.fetch(remote, tmp_path, timeout=5, deadline=1.0)
    _assert_one_line_and_nothing_left(info, tmp_path, remote.url)


def test_a_body_longer_than_published_is_cut_at_the_published_size(server, tmp_path):
    remote = server.serve("small.bin", b"y" * 1000)
    server.extra["/small.bin"] = 64 * 2**20
    with pytest.raises(DownloadError, match="longer than published") as info:
        _download.fetch(remote, tmp_path, timeout=5)
    _assert_one_line_and_nothing_left(info, tmp_path, remote.url)
    assert "at least 1001" in str(info.value)  # stopped at the first byte too many


def test_a_redirect_loop_is_one_line(server, tmp_path):
    remote = server.serve("loop.bin", b"z")
    server.redirect["/loop.bin"] = "/loop.bin"
    with pytest.raises(DownloadError, match="redirect") as info:
        _download.fetch(remote, tmp_path, timeout=5)
    _assert_one_line_and_nothing_left(info, tmp_path, remote.url)


def test_a_part_left_by_a_killed_download_is_removed_by_the_next_call(server, tmp_path):
    remote = server.serve("a.bin", b"payload")
    stale = tmp_path / ".a.bin.k1ll3d.part"  # as mkstemp names it; its writer is gone
    stale.write_bytes(b"pay")
    other = tmp_path / ".b.bin.xyz.part"  # another file's part: not this call's business
    other.write_bytes(b"b")
    mine = tmp_path / "notes.part"
    mine.write_bytes(b"user")
    _download.fetch(remote, tmp_path, timeout=5)
    assert not stale.exists() and other.exists() and mine.exists()


def test_a_part_being_written_by_a_live_download_is_kept(server, tmp_path):
    fcntl = pytest.importorskip("fcntl")
    remote = server.serve("a.bin", b"payload")
    live = tmp_path / ".a.bin.l1ve00.part"
    with open(live, "wb") as fh:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)  # as a running fetch holds it
        _download.fetch(remote, tmp_path, timeout=5)
        assert live.exists()
