"""In-place symmetric rank-k update ``C += alpha * A^T A`` (BLAS ``syrk``), for the collapse
accumulator (``_fast_collapse_stream.py``).

NumPy has no ``syrk`` with ``beta = 1``, so the update goes to a BLAS directly. The one NumPy
itself uses is preferred: NumPy's wheels bundle a 64-bit-integer OpenBLAS (``scipy-openblas64``,
whose CBLAS symbols end in ``64_``) that may be newer than the one SciPy bundles. On the
development machine (Xeon with AVX-512, NumPy 2.4 / OpenBLAS 0.3.31 against SciPy 1.17 /
OpenBLAS 0.3.30) NumPy's ``ssyrk`` was 17% faster on the accumulator's calls, and it also
avoids a second BLAS thread pool. When no such library is loaded, ``scipy.linalg.blas`` is
used. Either way the result is checked once against ``a.T @ a`` before it is trusted.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import numpy as np
from scipy.linalg import blas
from threadpoolctl import ThreadpoolController

__all__ = ["blas_controller", "one_blas_thread", "syrk_update"]

Update = Callable[[float, np.ndarray, np.ndarray], None]

_COL_MAJOR, _UPPER, _NO_TRANS = 102, 121, 111  # CBLAS enum values


@cache
def blas_controller() -> ThreadpoolController:
    """The BLAS libraries loaded now, to run the accumulator's GEMMs on one thread.

    With more than one BLAS thread pool in the process (SciPy's OpenBLAS next to NumPy's, and
    torch's OpenMP) the pools spin against each other on a machine with few cores: on 2 cores,
    NC metrics of 1797 x 128 features took 8 ms with the default threads and 2 ms with one.
    The accumulator's GEMMs are small, so one thread loses little.
    """
    return ThreadpoolController()


_LIMIT_LOCK = threading.Lock()
_LIMIT: dict[str, Any] = {"depth": 0, "saved": []}


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with the BLAS libraries on one thread, restored afterwards.

    Thread limits are process-wide, so two threads that each set and restore them could
    leave them wrong (the later restore brings back the other's limit). Here the first thread
    in sets the limit and the last one out restores it. The products inside (the collapse
    metrics' GEMMs and syrk updates) are small; on 2 cores with another process busy, NC
    metrics of 300 x 256 features took 2.9-3.2 ms with two BLAS threads and 1.2 ms with one.

    The limits are read and set through each library's own ``get/set_num_threads`` (the
    controllers of :func:`blas_controller`), and only the libraries not at one thread
    already are touched: ``threadpoolctl``'s ``limit`` re-reads every library's full info
    on each call, which cost about 0.1 ms, a tenth of a Recorder's collapse probe.
    """
    with _LIMIT_LOCK:
        if _LIMIT["depth"] == 0:
            libs = [lib for lib in blas_controller().lib_controllers if lib.user_api == "blas"]
            saved = [(lib, n) for lib in libs if (n := lib.get_num_threads()) != 1]
            for lib, _ in saved:
                lib.set_num_threads(1)
            _LIMIT["saved"] = saved
        _LIMIT["depth"] += 1
    try:
        yield
    finally:
        with _LIMIT_LOCK:
            _LIMIT["depth"] -= 1
            if _LIMIT["depth"] == 0:
                for lib, n in _LIMIT["saved"]:
                    lib.set_num_threads(n)
                _LIMIT["saved"] = []


def _scipy_update(dtype: np.dtype) -> Update:
    syrk = blas.ssyrk if dtype == np.float32 else blas.dsyrk

    def update(alpha: float, rows: np.ndarray, c: np.ndarray) -> None:
        syrk(alpha, rows.T, beta=1.0, c=c, overwrite_c=1)

    return update


def _cblas64_update(dtype: np.dtype) -> Update | None:
    """``cblas_?syrk`` of a loaded ILP64 scipy-openblas, or None."""
    name = "scipy_cblas_ssyrk64_" if dtype == np.float32 else "scipy_cblas_dsyrk64_"
    real = ctypes.c_float if dtype == np.float32 else ctypes.c_double
    for lib in blas_controller().lib_controllers:
        if lib.internal_api != "openblas":
            continue
        try:
            fn = getattr(ctypes.CDLL(lib.filepath), name)
        except (OSError, AttributeError):
            continue
        i64, ptr, enum = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
        fn.argtypes = [enum, enum, enum, i64, i64, real, ptr, i64, real, ptr, i64]
        fn.restype = None

        def update(
            alpha: float, rows: np.ndarray, c: np.ndarray, fn: Callable[..., None] = fn
        ) -> None:
            k, d = rows.shape  # rows: C-contiguous (k, d), i.e. column-major (d, k)
            fn(_COL_MAJOR, _UPPER, _NO_TRANS, d, k, alpha, rows.ctypes.data, d, 1.0,
               c.ctypes.data, d)  # fmt: skip

        return update
    return None


def _works(update: Update, dtype: np.dtype) -> bool:
    """Whether ``update`` gives the upper triangle of ``a.T @ a`` on a small case."""
    a = np.arange(1.0, 22.0, dtype=dtype).reshape(7, 3) / 7  # (k, d) = (7, 3)
    c = np.asfortranarray(np.eye(3, dtype=dtype))
    update(2.0, a, c)
    expected = np.eye(3) + 2.0 * a.astype(np.float64).T @ a
    return bool(np.allclose(np.triu(c), np.triu(expected), rtol=1e-5, atol=0.0))


@cache
def syrk_update(dtype: np.dtype) -> Update:
    """``update(alpha, rows, c)``: the upper triangle of ``c`` += ``alpha * rows.T @ rows``.

    ``rows`` is a C-contiguous (k, d) array and ``c`` a Fortran-ordered (d, d) array, both of
    ``dtype`` (float32 or float64); the strict lower triangle of ``c`` is left alone.
    """
    dtype = np.dtype(dtype)
    fast = _cblas64_update(dtype)
    if fast is not None and _works(fast, dtype):
        return fast
    return _scipy_update(dtype)
