import json
import threading

import pandas as pd
import pytest

from ncdynamics.experiments import LocalExecutor, expand_grid, read_sweep_table, sweep

SMALL = {"epochs": 2, "depth": 1, "width": 16, "checkpoint_every": 1}


def test_expand_grid_names_runs_and_resolves_values():
    points = expand_grid("demo", "smoke", grid={"lr": [0.05, "0.1"], "width": 8}, seeds=2)
    ids = [p.run_id for p in points]
    assert ids == [
        "lr=0.05_width=8_seed=0",
        "lr=0.05_width=8_seed=1",
        "lr=0.1_width=8_seed=0",
        "lr=0.1_width=8_seed=1",
    ]
    assert points[2].values == {"lr": 0.1, "width": 8} and isinstance(points[2].values["lr"], float)
    assert [p.seed for p in expand_grid("demo", grid={"lr": 0.1}, seeds=[3, 5])] == [3, 5]


@pytest.mark.parametrize(
    ("grid", "kwargs", "match"),
    [
        (
            {"nope": [1]},
            {},
            r"`grid` key 'nope' is not an option of experiment 'demo'; "
            r"its options: dataset, losses, depth, width",
        ),
        ({}, {}, r"`grid` must map at least one option"),
        ({"lr": []}, {}, r"`grid` key 'lr' must have at least one value"),
        ({"lr": [0.1, 0.10]}, {}, r"resolve to the same run"),
        ({"lr": [0.1]}, {"overrides": {"lr": 0.2}}, r"also given as an override"),
        ({"width": ["wide"]}, {}, r"option `width` must be int"),
        ({"lr": [0.1]}, {"seeds": 0}, r"seeds"),
    ],
)
def test_expand_grid_rejects_bad_input(grid, kwargs, match):
    with pytest.raises((ValueError, TypeError), match=match):
        expand_grid("demo", "smoke", grid=grid, **kwargs)


@pytest.fixture(scope="module")
def one_worker():
    with LocalExecutor(workers=1) as ex:
        yield ex


def test_sweep_survives_a_killed_worker_and_resumes(tmp_path, one_worker, kill_when_running):
    out = tmp_path / "sw"
    grid = {"lr": [0.05, 0.1]}
    killed: list[int] = []
    watcher = threading.Thread(
        target=kill_when_running, args=(out, "lr=0.1_seed=0", killed), daemon=True
    )
    watcher.start()
    res = sweep("demo", "smoke", out, grid=grid, overrides=SMALL, executor=one_worker, retries=1)
    watcher.join(5)
    assert killed, "the watcher never saw the second run running"
    assert res.ok and sorted(res.completed) == ["lr=0.05_seed=0", "lr=0.1_seed=0"]
    table = read_sweep_table(out)
    assert list(table["status"]) == ["completed", "completed"]
    row = table.set_index("run_id").loc["lr=0.1_seed=0"]
    assert row["attempts"] == 2 and pd.isna(row["error"])  # retried, completed
    state = json.loads((out / "sweep.json").read_text())
    assert state["runs"]["lr=0.1_seed=0"]["errors"][0].startswith("WorkerDied:")
    assert {"lr", "seed", "summary.table.mse.nc/nc1", "final.mse/nc/nc1"} <= set(table.columns)
    assert (out / "table.csv").is_file()
    assert pd.read_csv(out / "table.csv").shape[0] == 2
    first_finished = json.loads((out / "lr=0.05_seed=0" / "status.json").read_text())["finished"]

    # the same sweep again: nothing runs, nothing completed is rewritten
    again = sweep("demo", "smoke", out, grid=grid, overrides=SMALL, executor=one_worker)
    assert again.skipped == ("lr=0.05_seed=0", "lr=0.1_seed=0") and not again.completed
    status = json.loads((out / "lr=0.05_seed=0" / "status.json").read_text())
    assert status["finished"] == first_finished

    # other settings into the same directory are refused
    with pytest.raises(ValueError, match="holds a sweep with another grid"):
        sweep("demo", "smoke", out, grid={"lr": [0.2]}, overrides=SMALL, executor=one_worker)

    # a run directory written by another format version: a clear error, nothing runs
    status["format_version"] = 0
    (out / "lr=0.05_seed=0" / "status.json").write_text(json.dumps(status))
    with pytest.raises(ValueError, match="has format version 0; this ncdynamics reads version 1"):
        sweep("demo", "smoke", out, grid=grid, overrides=SMALL, executor=one_worker)


def test_failing_run_is_retried_a_bounded_number_of_times(tmp_path, one_worker):
    out = tmp_path / "bad"
    res = sweep(
        "demo",
        "smoke",
        out,
        grid={"dataset": ["mnist"]},  # valid, but fails while running: no local files
        overrides=SMALL,
        executor=one_worker,
        retries=2,
    )
    assert not res.ok and res.failed == ("dataset=mnist_seed=0",)
    row = read_sweep_table(out).iloc[0]
    assert row["status"] == "failed" and row["attempts"] == 3
    assert "`root` is required" in row["error"] and "\n" not in row["error"]
    errors = json.loads((out / "sweep.json").read_text())["runs"][row["run_id"]]["errors"]
    assert len(errors) == 3


def test_sweep_out_must_be_empty_or_a_sweep(tmp_path):
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "file.txt").write_text("hi")
    with pytest.raises(FileExistsError, match="is not a sweep directory"):
        sweep("demo", "smoke", tmp_path / "x", grid={"lr": [0.1]})


_HOLD_SWEEP = """
import sys, time
from pathlib import Path
from ncdynamics.runs._lock import acquire
acquire(Path(sys.argv[1]), what="sweep directory")
print("ready", flush=True)
time.sleep(300)
"""


def test_a_second_sweep_into_a_live_sweep_directory_is_refused(tmp_path):
    """The same sweep started twice: the second names the PID of the first, runs nothing."""
    import subprocess
    import sys

    from ncdynamics.runs import RunInUseError

    out = tmp_path / "sw"
    out.mkdir()
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLD_SWEEP, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "ready"
        with pytest.raises(RunInUseError, match=f"process {holder.pid}"):
            sweep("demo", "smoke", out, grid={"lr": [0.1]}, overrides=SMALL)
        assert sorted(p.name for p in out.iterdir()) == [".lock"]
    finally:
        holder.kill()
        holder.wait()


def test_a_run_killed_inside_create_is_started_by_the_next_sweep(tmp_path, one_worker):
    """A run directory holding only the marker (and its lock file) is not an error."""
    out = tmp_path / "sw"
    first = sweep("demo", "smoke", out, grid={"lr": [0.1]}, overrides=SMALL, executor=one_worker)
    run_dir = out / first.completed[0]
    for p in sorted(run_dir.rglob("*"), reverse=True):
        if p.name not in (".ncdynamics-run", ".lock"):
            p.unlink() if p.is_file() else p.rmdir()
    again = sweep("demo", "smoke", out, grid={"lr": [0.1]}, overrides=SMALL, executor=one_worker)
    assert again.completed == first.completed and again.ok


def test_a_damaged_run_is_a_row_of_the_table_not_a_crash(tmp_path, one_worker):
    out = tmp_path / "sw"
    grid = {"lr": [0.05, 0.1]}
    res = sweep("demo", "smoke", out, grid=grid, overrides=SMALL, executor=one_worker)
    damaged = out / res.completed[0] / "metrics.parquet"
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = bytes(64)
    damaged.write_bytes(bytes(data))
    from ncdynamics.experiments import write_sweep_table

    table = write_sweep_table(out).set_index("run_id")
    assert table.loc[res.completed[0], "status"] == "damaged"
    assert "metrics.parquet" in table.loc[res.completed[0], "error"]
    assert table.loc[res.completed[1], "status"] == "completed"
