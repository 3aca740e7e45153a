"""Corrupt files are named in a one-line error, never read silently wrong; checkpoints fall back."""

import json

import numpy as np
import pytest
import torch

from ncdynamics import runs


def _run_with_metrics(path, *, compact, n_steps=60, n_names=25):
    run = runs.create(path, config={})
    rng = np.random.default_rng(0)
    for step in range(n_steps):
        run.log(step, {f"m{i}": float(v) for i, v in enumerate(rng.normal(size=n_names))})
    run.flush()
    if compact:
        run.mark_completed()
    return run


def _metric_file(run, compact):
    if compact:
        return run.path / "metrics.parquet"
    (part,) = (run.path / "metrics").glob("part-*.parquet")
    return part


@pytest.mark.parametrize("compact", [False, True], ids=["part", "compacted"])
def test_bytes_overwritten_mid_file_are_a_one_line_error_naming_the_file(tmp_path, compact):
    run = _run_with_metrics(tmp_path / "r", compact=compact)
    path = _metric_file(run, compact)
    data = bytearray(path.read_bytes())
    mid = len(data) // 2
    data[mid - 300 : mid + 300] = np.random.default_rng(1).integers(0, 256, 600, np.uint8).tobytes()
    path.write_bytes(bytes(data))
    with pytest.raises(runs.RunCorruptError, match=path.name) as info:
        _ = runs.open(run.path).metrics
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("compact", [False, True], ids=["part", "compacted"])
def test_no_single_byte_change_is_read_silently_wrong(tmp_path, compact):
    """Bytes changed one at a time: an error naming the file, or the same table.

    Every byte of the footer (the file's metadata, which page checksums do not cover) and
    every 7th byte of the pages.
    """
    run = _run_with_metrics(tmp_path / "r", compact=compact, n_steps=20, n_names=8)
    want = run.metrics
    path = _metric_file(run, compact)
    data = path.read_bytes()
    footer = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    silent = []
    for offset in [*range(4, footer, 7), *range(footer, len(data))]:
        garbled = bytearray(data)
        garbled[offset] ^= 0x5A
        path.write_bytes(bytes(garbled))
        try:
            got = runs.Run(run.path).metrics
        except runs.RunCorruptError as exc:
            assert path.name in str(exc)
            continue
        if not got.equals(want):
            silent.append(offset)
    assert silent == [], f"read silently wrong after changing bytes at {silent[:10]}"


def test_truncated_part_is_named(tmp_path):
    run = _run_with_metrics(tmp_path / "r", compact=False)
    path = _metric_file(run, False)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(runs.RunCorruptError, match=path.name):
        _ = runs.open(run.path).metrics


def _checkpoints(path):
    run = runs.create(path, config={})
    for step in (1, 2, 3):
        run.save_checkpoint(step, {"w": torch.full((4,), float(step))}, tag="m")
    return run, sorted((path / "checkpoints" / "m").glob("step-*.pt"))


@pytest.mark.parametrize(
    "damage",
    [
        lambda p: p.write_bytes(p.read_bytes()[: len(p.read_bytes()) // 2]),
        lambda p: p.write_bytes(b""),
        lambda p: p.write_bytes(b"\x00" * 64 + p.read_bytes()[64:]),
    ],
    ids=["truncated", "empty", "garbled-header"],
)
def test_a_corrupt_newest_checkpoint_falls_back_to_the_previous_with_a_warning(tmp_path, damage):
    run, (older, newest) = _checkpoints(tmp_path / "r")
    damage(newest)
    with pytest.warns(RuntimeWarning, match=rf"{newest.name}.*{older.name}"):
        state = run.load_checkpoint("m")
    assert state is not None and state["step"] == 2
    torch.testing.assert_close(state["w"], torch.full((4,), 2.0))
    # the stale newer file does not outlive the next checkpoint of the resumed run
    run.save_checkpoint(3, {"w": torch.zeros(4)}, tag="m")
    assert run.load_checkpoint("m")["step"] == 3


def test_every_checkpoint_corrupt_is_a_one_line_error_naming_the_newest(tmp_path):
    run, (older, newest) = _checkpoints(tmp_path / "r")
    older.write_bytes(b"junk")
    newest.write_bytes(b"junk")
    with pytest.raises(runs.RunCorruptError, match=newest.name) as info:
        run.load_checkpoint("m")
    assert "\n" not in str(info.value)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("status.json", "{not json"),
        ("status.json", "[1, 2]"),
        ("config.json", '"a string"'),
        ("summary.json", "[]"),
        ("status.json", ""),
    ],
)
def test_bad_json_files_are_one_line_errors_naming_the_file(tmp_path, name, text):
    run = runs.create(tmp_path / "r", config={})
    run.save_summary({"a": 1})
    (tmp_path / "r" / name).write_text(text)
    with pytest.raises(runs.RunCorruptError, match=name) as info:
        reopened = runs.Run(tmp_path / "r")
        _ = (reopened.status, reopened.config, reopened.summary)
    assert "\n" not in str(info.value)


def test_format_marker_of_a_newer_version_is_refused(tmp_path):
    runs.create(tmp_path / "r", config={}).mark_failed("x")
    (tmp_path / "r" / ".ncdynamics-run").write_text(json.dumps({"format": 99}))
    with pytest.raises(ValueError, match="format 99"):
        runs.create(tmp_path / "r", config={}, resume=True)


def test_page_checksums_catch_damage_in_a_file_without_the_content_digest(tmp_path):
    """Files written before the content digest existed carry only the Parquet page
    checksums: a flipped bit inside a value that still decodes is caught by them alone
    (the digest catches it in current files; both checks are needed while such files can
    be read)."""
    import struct

    import pyarrow as pa
    import pyarrow.parquet as pq

    from ncdynamics.runs import RunCorruptError
    from ncdynamics.runs._tables import read_metric_table

    marker = 0.123456789
    table = pa.table(
        {
            "step": pa.array([0, 1, 2], pa.int64()),
            "name": pa.array(["loss", "loss", "loss"], pa.string()),
            "value": pa.array([1.0, marker, 3.0], pa.float64()),
        }
    )
    path = tmp_path / "part-000000.parquet"
    pq.write_table(table, path, write_page_checksum=True, compression="NONE", use_dictionary=False)
    assert read_metric_table(path)["value"].tolist() == [1.0, marker, 3.0]
    data = bytearray(path.read_bytes())
    # the data page holds the three values in a row (the marker alone also appears in the
    # statistics of the page header and the footer, which are not what is read back)
    at = bytes(data).index(struct.pack("<ddd", 1.0, marker, 3.0)) + 8
    data[at] ^= 0x01  # the value still decodes, as 0.12345678899999998
    path.write_bytes(bytes(data))
    with pytest.raises(RunCorruptError, match="part-000000.parquet"):
        read_metric_table(path)
