"""The metric table on disk: Parquet with page checksums and a digest of its content.

Every metrics file (``metrics/part-*.parquet`` and the compacted ``metrics.parquet``) is a
Parquet table of three columns ``step`` (int64), ``name`` (string), ``value`` (float64),
written with a CRC-32 on every page and, in the file's key-value metadata, the SHA-256 of
its decoded content (:func:`content_digest`). Reading verifies both: the page checksums catch
damaged data pages, the digest catches everything else that decodes without error, including
damage to the footer that the page checksums do not cover. A damaged file is a
:class:`~ncdynamics.runs.RunCorruptError` naming it, never a table read silently wrong. Files
written before checksums existed (no digest) are read as before.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray

from ._errors import RunCorruptError
from ._io import atomic_write, open_regular

__all__ = ["DIGEST_KEY", "content_digest", "read_metric_table", "write_metric_table"]

DIGEST_KEY = b"ncdynamics.sha256"


def _column_bytes(column: Any) -> tuple[bytes, bytes]:
    """Byte lengths and the concatenated UTF-8 bytes of a pyarrow string column."""
    import pyarrow as pa

    arr = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    if arr.type != pa.string():
        arr = arr.cast(pa.string())
    if arr.null_count:
        raise ValueError("metric names must not be null")
    offsets = np.frombuffer(arr.buffers()[1], dtype=np.int32)[
        arr.offset : arr.offset + len(arr) + 1
    ]
    data = arr.buffers()[2]
    start, stop = (int(offsets[0]), int(offsets[-1])) if len(offsets) else (0, 0)
    blob = data.to_pybytes()[start:stop] if data is not None else b""
    return np.diff(offsets).astype("<i8").tobytes(), blob


def content_digest(
    steps: NDArray[np.int64], name_column: Any, values: NDArray[np.float64]
) -> bytes:
    """SHA-256 (hex, as bytes) of a metric table's content, independent of its encoding."""
    lengths, blob = _column_bytes(name_column)
    h = hashlib.sha256(b"ncdynamics-metrics-1\0")
    h.update(len(steps).to_bytes(8, "little"))
    h.update(np.ascontiguousarray(steps, dtype="<i8").tobytes())
    h.update(np.ascontiguousarray(values, dtype="<f8").tobytes())
    h.update(lengths)
    h.update(blob)
    return h.hexdigest().encode()


def write_metric_table(path: Path, steps: Any, names: Any, values: Any) -> Path:
    """Write records ``(step, name, value)`` atomically to the Parquet file ``path``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    step_arr = np.asarray(steps, dtype=np.int64)
    value_arr = np.asarray(values, dtype=np.float64)
    name_arr = pa.array(names, pa.string())
    table = pa.table(
        {
            "step": pa.array(step_arr, pa.int64()),
            "name": name_arr,
            "value": pa.array(value_arr, pa.float64()),
        }
    )
    digest = content_digest(step_arr, name_arr, value_arr)
    table = table.replace_schema_metadata({DIGEST_KEY: digest})

    def _write(p: Path) -> None:
        # through a file object: pyarrow reads a path string with a colon ("lr:0.1/...")
        # as a URI of an unknown file system; a relative path is a path
        with open(p, "wb") as fh:
            pq.write_table(table, fh, write_page_checksum=True)

    return atomic_write(path, _write)


def _corrupt(path: Path, why: str) -> RunCorruptError:
    return RunCorruptError(
        f"metrics file {str(path)!r} is damaged ({why}); its records cannot be trusted. "
        "Restore it from a copy, or move it out of the run directory to read the rest."
    )


def read_metric_table(path: Path) -> pd.DataFrame:
    """The records of one metrics file, verified; a damaged file raises naming it."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    # a regular file inside the run only: a FIFO would block, a link read elsewhere
    fh = os.fdopen(open_regular(path), "rb")
    try:
        with fh:
            table = pq.read_table(fh, page_checksum_verification=True)
        cols = {c: table.column(c) for c in ("step", "name", "value")}
        steps = cols["step"].to_numpy()
        values = cols["value"].to_numpy()
    except (OSError, pa.ArrowException, KeyError, ValueError) as exc:
        lines = str(exc).strip().splitlines()
        raise _corrupt(path, lines[0] if lines else type(exc).__name__) from None
    meta = table.schema.metadata or {}
    types = [table.schema.field(c).type for c in ("step", "name", "value")]
    if not (
        pa.types.is_integer(types[0])
        and (pa.types.is_string(types[1]) or pa.types.is_large_string(types[1]))
        and pa.types.is_floating(types[2])
    ):
        raise _corrupt(path, f"column types {', '.join(map(str, types))}")
    if DIGEST_KEY in meta:
        try:
            digest = content_digest(steps, cols["name"], values)
        except (ValueError, pa.ArrowException) as exc:
            raise _corrupt(path, str(exc).splitlines()[0]) from None
        if digest != meta[DIGEST_KEY]:
            raise _corrupt(path, "its content does not match the checksum written with it")
    return table.to_pandas()
