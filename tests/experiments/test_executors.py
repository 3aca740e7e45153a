import os
import signal
import threading
import time

import pytest

from ncdynamics.experiments import LocalExecutor, RayExecutor, Task, make_executor
from ncdynamics.experiments.executors import ADDRESS_TIMEOUT_S


def square(x):
    return x * x


def fail(x):
    raise ValueError(f"bad value {x}\nsecond line")


def die(x):
    os.kill(os.getpid(), signal.SIGKILL)


SMALL = {"epochs": 2, "depth": 1, "width": 16, "checkpoint_every": 1}


@pytest.fixture(scope="module")
def pool():
    with LocalExecutor(workers=2) as ex:
        yield ex


def test_local_returns_values_and_errors_in_one_line(pool):
    tasks = [Task(f"t{i}", square, (i,)) for i in range(5)] + [Task("bad", fail, (3,))]
    out = {o.key: o for o in pool.run(tasks)}
    assert sorted(out) == sorted(t.key for t in tasks)
    assert [out[f"t{i}"].value for i in range(5)] == [0, 1, 4, 9, 16]
    assert all(out[f"t{i}"].ok and out[f"t{i}"].error is None for i in range(5))
    assert not out["bad"].ok and out["bad"].error == "ValueError: bad value 3"


def _live_pids(ex):
    """Process ids of the executor's live workers (its private pool: a test's view)."""
    return [w.proc.pid for w in ex._pool if w.proc.is_alive() and w.proc.pid]


def test_local_worker_killed_loses_only_its_task(pool):
    tasks = [Task("dies", die, (0,))] + [Task(f"t{i}", square, (i,)) for i in range(4)]
    out = {o.key: o for o in pool.run(tasks)}
    assert not out["dies"].ok
    assert out["dies"].error.startswith("WorkerDied:") and "signal 9" in out["dies"].error
    assert all(out[f"t{i}"].ok and out[f"t{i}"].value == i * i for i in range(4))
    # the dead worker is gone and replaced while work remains; the pool keeps working
    assert 1 <= len(_live_pids(pool)) <= 2
    out = {o.key: o.value for o in pool.run([Task(f"a{i}", square, (i,)) for i in range(3)])}
    assert out == {"a0": 0, "a1": 1, "a2": 4} and len(_live_pids(pool)) == 2


def test_make_executor_checks_its_options():
    with pytest.raises(ValueError, match="`backend` must be one of"):
        make_executor("dask")
    with pytest.raises(ValueError, match="`address` is for the ray backend"):
        make_executor("local", address="127.0.0.1:6379")
    with pytest.raises(ValueError, match="workers"):
        LocalExecutor(workers=0)


def test_ray_address_that_does_not_answer_fails_fast_and_starts_nothing():
    start = time.monotonic()
    with pytest.raises(ConnectionError, match=r"`address` '127.0.0.1:9'.*Nothing was started"):
        RayExecutor(address="127.0.0.1:9")
    assert time.monotonic() - start < min(30.0, ADDRESS_TIMEOUT_S + 5)
    ray = pytest.importorskip("ray", reason="ray is not installed (pip install '.[ray]')")
    assert not ray.is_initialized()


def test_ray_address_must_be_host_port():
    with pytest.raises(ValueError, match="host:port"):
        RayExecutor(address="somewhere")


def test_ray_sweep_with_a_killed_worker_completes(tmp_path, kill_when_running):
    pytest.importorskip("ray", reason="ray is not installed (pip install '.[ray]')")
    from ncdynamics.experiments import read_sweep_table, sweep

    out = tmp_path / "ray"
    killed: list[int] = []
    watcher = threading.Thread(
        target=kill_when_running, args=(out, "lr=0.1_seed=0", killed), daemon=True
    )
    watcher.start()
    with RayExecutor(workers=2) as ex:
        res = sweep(
            "demo", "smoke", out, grid={"lr": [0.05, 0.1]}, overrides=SMALL, executor=ex, retries=1
        )
    watcher.join(5)
    assert killed and res.ok
    table = read_sweep_table(out).set_index("run_id")
    assert list(table["status"]) == ["completed", "completed"]
    assert table.loc["lr=0.1_seed=0", "attempts"] == 2
    assert table.loc["lr=0.05_seed=0", "attempts"] == 1


_PARENT = """
import sys, threading, time
from ncdynamics.experiments.executors import LocalExecutor, Task

ex = LocalExecutor(workers=1)

def report():
    while not [w for w in ex._pool if w.proc.is_alive()]:  # the pool's own record of workers
        time.sleep(0.05)
    print(ex._pool[0].proc.pid, flush=True)

threading.Thread(target=report, daemon=True).start()
list(ex.run([Task("forever", time.sleep, (600,))]))
"""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead too
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return True


def test_workers_die_with_a_killed_parent():
    """A SIGKILLed sweep leaves no worker behind that would go on writing its run."""
    import subprocess
    import sys

    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        worker = int(parent.stdout.readline())
        assert _alive(worker)
        parent.send_signal(signal.SIGKILL)
        parent.wait()
        deadline = time.monotonic() + 20
        while _alive(worker) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(worker), f"worker {worker} outlived its killed parent"
    finally:
        parent.kill()
        parent.wait()
