"""The Recorder's background mode: same records as the synchronous mode, errors surface in
the training thread, the recording thread stops on close, on exceptions and on Ctrl-C."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

from ncdynamics import data
from ncdynamics.models import MLP
from ncdynamics.probes import ProbeOutput
from ncdynamics.training import Recorder, train
from ncdynamics.training.background import BackgroundWorker


class MemorySink:
    """Every call in order, with copies of the values; records the calling thread."""

    def __init__(self) -> None:
        self.calls: list[tuple] = []
        self.threads: set[str] = set()
        self.flushed = 0

    def log(self, step, values):
        self.threads.add(threading.current_thread().name)
        self.calls.append(("log", step, dict(values)))

    def save_array(self, name, step, array):
        self.threads.add(threading.current_thread().name)
        self.calls.append(("array", name, step, np.array(array, copy=True)))

    def flush(self):
        self.flushed += 1


def _train(background: bool, probes=("collapse", "performance", "class_means")):
    ds = data.load(
        "gaussian-clusters", num_classes=3, n_train_per_class=40, n_test_per_class=10, dim=8, seed=0
    )
    model = MLP(8, 3, depth=2, width=16, generator=torch.Generator().manual_seed(0))
    sink = MemorySink()
    idx = data.balanced_subset(ds.y_train, 6, np.random.default_rng(0))
    with Recorder(
        sink, ds.x_train[idx], ds.y_train[idx], probes=list(probes), background=background
    ) as rec:
        result = train(
            model,
            ds,
            epochs=6,
            loss="mse",
            lr=0.05,
            batch_size=16,
            recorder=rec,
            progress=False,
            test_every=2,
        )
    return sink, result


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, tuple):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and np.isnan(a):
        return isinstance(b, float) and np.isnan(b)
    return a == b


def test_background_records_equal_synchronous_records_bit_for_bit():
    sync, res_sync = _train(background=False)
    bg, res_bg = _train(background=True)
    assert len(sync.calls) == len(bg.calls) > 20
    for a, b in zip(sync.calls, bg.calls, strict=True):
        assert _same(a, b), (a[:2], b[:2])
    assert _same(res_sync.final, res_bg.final) and res_bg.final
    assert any(c[0] == "array" for c in bg.calls)  # class means went through too
    # the sink saw one thread per mode: the training thread, or the recording thread
    assert sync.threads == {threading.current_thread().name}
    assert len(bg.threads) == 2  # the first record runs in the caller; the rest in the worker
    assert bg.flushed == sync.flushed == 1


def _failing_probe(fail_at: int, exc: BaseException):
    def probe(inp):
        if inp.step == fail_at:
            raise exc
        return ProbeOutput(scalars={"ok": 1.0})

    probe.name = "failing"
    return probe


def test_an_error_in_the_recording_thread_is_raised_in_the_training_thread():
    x, y = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32), np.arange(12) % 3
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    sink = MemorySink()
    rec = Recorder(
        sink, x, y, probes=[_failing_probe(2, ValueError("probe broke"))], background=True
    )
    rec.record(model, 0)
    rec.record(model, 1)
    rec.record(model, 2)  # queued; fails in the thread
    with pytest.raises(ValueError, match="probe broke"):
        for step in range(3, 50):  # the next call after the failure raises it
            rec.record(model, step)
            rec.wait()
    worker = rec._worker
    rec.close()  # the thread stops; what was recorded is flushed
    assert worker is not None and not worker.alive
    assert sink.flushed == 1
    assert [c[1] for c in sink.calls if c[0] == "log"] == [0, 1]


@pytest.mark.parametrize("exc", [RuntimeError("training broke"), KeyboardInterrupt()])
def test_the_run_closes_cleanly_when_training_raises(exc):
    x, y = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32), np.arange(12) % 3
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    sink = MemorySink()
    with pytest.raises(type(exc)):
        with Recorder(sink, x, y, probes=["performance"], background=True) as rec:
            for step in range(5):
                rec.record(model, step)
            worker = rec._worker
            raise exc
    # every record queued before the interruption is written, flushed, the thread is gone
    assert [c[1] for c in sink.calls if c[0] == "log"] == [0, 1, 2, 3, 4]
    assert sink.flushed == 1
    assert worker is not None and not worker.alive


def test_a_keyboard_interrupt_inside_the_recording_thread_reaches_the_caller():
    x, y = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32), np.arange(12) % 3
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    rec = Recorder(
        MemorySink(), x, y, probes=[_failing_probe(1, KeyboardInterrupt())], background=True
    )
    rec.record(model, 0)
    rec.record(model, 1)
    with pytest.raises(KeyboardInterrupt):
        rec.close()


def test_the_snapshot_is_taken_when_record_is_called():
    # the model changes right after record(): the queued record still sees the old weights
    x, y = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32), np.arange(12) % 3
    model = torch.nn.Sequential(torch.nn.Linear(4, 3))
    sync, bg = MemorySink(), MemorySink()
    r_sync = Recorder(sync, x, y, probes=["performance"])
    r_bg = Recorder(bg, x, y, probes=["performance"], background=True)
    for step in range(4):
        r_sync.record(model, step)
        r_bg.record(model, step)
        with torch.no_grad():
            model[0].weight.mul_(-1.5)
    r_sync.close()
    r_bg.close()
    assert _same(tuple(sync.calls), tuple(bg.calls))


def test_worker_runs_jobs_in_order_and_refuses_work_after_close():
    seen: list[int] = []
    worker = BackgroundWorker(max_pending=2)
    for i in range(20):
        worker.submit(lambda i=i: seen.append(i))
    worker.wait()
    assert seen == list(range(20))
    worker.close()
    assert not worker.alive
    with pytest.raises(RuntimeError, match="submit"):
        worker.submit(lambda: None)


def test_evaluate_runs_on_the_recorded_state_in_the_recording_thread():
    # the model changes right after record(): `evaluate` (the training loop's test set) must
    # still see the recorded weights, run in the recording thread, and land in `last`
    x, y = np.random.default_rng(0).normal(size=(12, 4)).astype(np.float32), np.arange(12) % 3
    model = torch.nn.Sequential(torch.nn.Linear(4, 3)).train()
    threads: list[str] = []

    def evaluate(m):
        threads.append(threading.current_thread().name)
        assert not m.training  # evaluated in eval mode, as the probes
        return {"test/norm": float(m[0].weight.detach().norm())}

    out = {}
    for background in (False, True):
        sink = MemorySink()
        with torch.no_grad():
            model[0].weight.copy_(torch.eye(3, 4))
        with Recorder(sink, x, y, probes=["performance"], background=background) as rec:
            for step in range(4):
                rec.record(model, step, evaluate=evaluate)
                with torch.no_grad():
                    model[0].weight.mul_(2.0)
        out[background] = (sink.calls, rec.last)
    assert _same(tuple(out[False][0]), tuple(out[True][0]))
    norms = [c[2]["test/norm"] for c in out[True][0] if c[0] == "log" and "test/norm" in c[2]]
    assert norms == pytest.approx([np.sqrt(3) * 2.0**s for s in range(4)])
    assert out[True][1]["test/norm"] == pytest.approx(np.sqrt(3) * 8.0)
    assert "probe/loss" in out[True][1]
    main = threading.current_thread().name
    assert threads[:5] == [main] * 5  # synchronous: 4 records; background: the first record
    assert all(t != main for t in threads[5:]) and len(threads) == 8
