"""CIFAR-10 batch files written the way the real ones are (for the reader's tests).

The real ``cifar-10-batches-py`` files were pickled by Python 2 (protocol 2): byte strings are
``BINSTRING`` opcodes and the numpy arrays need only the globals
``numpy.core.multiarray._reconstruct``, ``numpy.ndarray`` and ``numpy.dtype``. Python 3's own
protocol-2 pickler would spell bytes as ``_codecs.encode(...)`` calls instead, which the
restricted reader rightly refuses, so this writer emits bytes as Python 2 did.
"""

import io
import pickle
import struct
from typing import Any


class _Py2Pickler(pickle._Pickler):  # the pure-Python pickler, whose dispatch is a dict
    dispatch = dict(pickle._Pickler.dispatch)

    def save_bytes(self, obj: bytes) -> None:
        n = len(obj)
        if n < 256:
            self.write(pickle.SHORT_BINSTRING + bytes([n]) + obj)
        else:
            self.write(pickle.BINSTRING + struct.pack("<i", n) + obj)
        self.memoize(obj)

    dispatch[bytes] = save_bytes


def py2_pickle(obj: Any) -> bytes:
    """``obj`` pickled as Python 2 with numpy 1 wrote the CIFAR-10 batches."""
    buf = io.BytesIO()
    _Py2Pickler(buf, protocol=2).dump(obj)
    return buf.getvalue().replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")
