"""The streaming accumulator shares a block's classes between worker threads ("lanes")."""

import multiprocessing

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

from ncdynamics.probes import CollapseAccumulator


def features(rng, n=6000, d=48, C=6, dtype=np.float32):
    y = rng.integers(0, C, n)
    mu = 2.0 * rng.standard_normal((C, d)) + 3.0
    h = (mu[y] + 0.3 * rng.standard_normal((n, d))).astype(dtype)
    return h, y, mu


def streamed(h, y, w, threads):
    """Metrics of h streamed in batches of 1500 with ``threads`` BLAS threads, and the
    number of lanes the float scatter used."""
    with threadpool_limits(threads):
        acc = CollapseAccumulator(w.shape[0], weight=w)
        for s in range(0, y.size, 1500):
            acc.update(h[s : s + 1500], y[s : s + 1500])
        for s in range(0, y.size, 1500):
            acc.update_nc4(h[s : s + 1500], y[s : s + 1500])
        lanes = len(acc._scatters[h.dtype]._lanes)
        return acc.compute(), lanes


@pytest.mark.parametrize(("dtype", "tol"), [(np.float32, 1e-6), (np.float64, 1e-12)])
def test_two_lanes_match_one_and_repeat_exactly(rng, dtype, tol):
    h, y, mu = features(rng, dtype=dtype)
    one, lanes_one = streamed(h, y, mu, threads=1)
    two, lanes_two = streamed(h, y, mu, threads=2)
    again, _ = streamed(h, y, mu, threads=2)
    assert (lanes_one, lanes_two) == (1, 2)
    assert two == again  # the split depends on the class counts only, not on timing
    for key, value in one.items():
        assert two[key] == pytest.approx(value, rel=tol, abs=1e-12), key


def test_a_non_finite_block_rolls_back_every_lane(rng):
    h, y, mu = features(rng, n=3000, dtype=np.float64)
    with threadpool_limits(2):
        expected = CollapseAccumulator(6).update(h[:1500], y[:1500]).update(h[1500:], y[1500:])
        acc = CollapseAccumulator(6).update(h[:1500], y[:1500])
        bad = h[1500:].copy()
        bad[np.flatnonzero(y[1500:] == 5)[0], 2] = np.inf  # one class; the other lane is fine
        with pytest.raises(ValueError, match="must be finite"):
            acc.update(bad, y[1500:])
        after = acc.update(h[1500:], y[1500:]).compute()
    for key, value in expected.compute().items():
        assert after[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key


def _child(h, y, mu, queue):
    queue.put(streamed(h, y, mu, threads=2)[0])


def test_lanes_work_in_a_forked_child(rng):
    # the parent's worker threads do not survive a fork; the child must make its own
    h, y, mu = features(rng, n=3000)
    parent, _ = streamed(h, y, mu, threads=2)
    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(h, y, mu, queue))
    proc.start()
    child = queue.get(timeout=120)
    proc.join(timeout=60)
    assert proc.exitcode == 0
    assert child == parent


def test_wide_features_use_fewer_lanes(rng, monkeypatch):
    from ncdynamics.probes import _fast_collapse_stream

    h, y, mu = features(rng, n=3000)
    monkeypatch.setattr(_fast_collapse_stream, "_LANE_MEMORY", 1)  # less than one lane's worth
    capped, lanes = streamed(h, y, mu, threads=2)
    assert lanes == 1
    monkeypatch.undo()
    free, lanes = streamed(h, y, mu, threads=2)
    assert lanes == 2
    for key, value in free.items():
        assert capped[key] == pytest.approx(value, rel=1e-6, abs=1e-12), key


def test_an_error_inside_a_lane_rolls_every_lane_back(rng, monkeypatch):
    from ncdynamics.probes import _fast_collapse_stream

    h, y, mu = features(rng, n=3000, dtype=np.float64)
    with threadpool_limits(2):
        expected = CollapseAccumulator(6).update(h[:1500], y[:1500]).update(h[1500:], y[1500:])
        acc = CollapseAccumulator(6).update(h[:1500], y[:1500])
        run = _fast_collapse_stream.ClassScatter._run
        calls = []

        def failing(self, lane, groups, block):
            calls.append(lane)
            if len(calls) == 2:  # the second lane of the block fails half-way
                raise MemoryError("no room")
            return run(self, lane, groups, block)

        monkeypatch.setattr(_fast_collapse_stream.ClassScatter, "_run", failing)
        with pytest.raises(MemoryError):
            acc.update(h[1500:], y[1500:])
        monkeypatch.undo()
        after = acc.update(h[1500:], y[1500:]).compute()
    for key, value in expected.compute().items():
        assert after[key] == pytest.approx(value, rel=1e-12, abs=1e-15), key
