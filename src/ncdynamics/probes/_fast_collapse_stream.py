"""Fast path of the streaming collapse metrics: per-block kernels used by ``collapse.py``.

``CollapseAccumulator.update`` cuts its input into blocks of up to 4096 rows and merges each
block's per-class statistics into the running ones with the pairwise update of Chan, Golub
and LeVeque (1979). The within-class scatter is therefore accumulated from class-centred
rows and stays accurate near collapse, when class means are far larger than the spread.

:class:`ClassScatter` turns a block into per-class statistics with one pass over memory: it
gathers one class at a time into a scratch buffer small enough to stay in the CPU cache,
centres it there, and adds its scatter to a running Gram with an in-place symmetric rank-k
update (BLAS ``syrk``, ``beta=1``, through ``_fast_syrk``) in the input precision (float32
features use float32 GEMMs), moved into a float64 total every 65,536 rows. Centring before
the GEMM keeps NC1 accurate where a raw second moment would cancel; doing it class by class
in cache makes it almost free (``docs/metrics.md``, "Numerics and streaming").

:class:`NearestMeanScorer` is NC4's second pass: it scores a block against the classifier and
the centred class means with one GEMM.

The readable reference these kernels are tested against is ``collapse_reference.py``.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor, wait
from typing import NamedTuple

import numpy as np

from ._fast_syrk import blas_controller, one_blas_thread, syrk_update

__all__ = ["ClassScatter", "NearestMeanScorer", "SquaresOverflow"]

# Rows of float32 scatter accumulated before it is added to the float64 total: the float32
# sum of at most this many centred outer products keeps a relative error near 1e-6.
_FLUSH_ROWS = 1 << 16
# Fewest rows per syrk call (classes are grouped until they reach it).
_GROUP_ROWS = 256
# Memory all lanes of one scatter may take: with many cores and wide features (d = 4096 in
# float32 needs 200 MB a lane) fewer lanes are used, down to one.
_LANE_MEMORY = 1 << 29


class SquaresOverflow(ArithmeticError):
    """A block's squares left its dtype's range (float32 features with a spread beyond
    ~1e19); the scatter is as before the block, which can be redone in float64."""


def _groups(counts: np.ndarray) -> list[list[int]]:
    """Consecutive present classes grouped until each group has ``_GROUP_ROWS`` rows.

    One ``syrk`` per group: with many small classes (C = 100 gives about 40 rows per class
    in a block of 4096) a call per class would spend its time on the (d, d) output.
    """
    groups: list[list[int]] = [[]]
    rows = 0
    for c in np.flatnonzero(counts):
        if rows >= _GROUP_ROWS:
            groups.append([])
            rows = 0
        groups[-1].append(int(c))
        rows += int(counts[c])
    return groups if groups[0] else []


def _share(groups: list[list[int]], counts: np.ndarray, lanes: int) -> list[list[list[int]]]:
    """The groups dealt to ``lanes`` lanes, each to the lane with the fewest rows so far
    (ties to the lowest lane): deterministic, and balanced when the classes are."""
    shares: list[list[list[int]]] = [[] for _ in range(lanes)]
    rows = [0] * lanes
    for group in groups:
        lane = rows.index(min(rows))
        shares[lane].append(group)
        rows[lane] += int(counts[group].sum())
    return shares


class _Block(NamedTuple):
    """One block's input and the per-class outputs that the lanes fill (disjoint rows)."""

    h: np.ndarray
    order: np.ndarray
    counts: np.ndarray
    ends: np.ndarray
    first: np.ndarray
    rest: np.ndarray
    m2: np.ndarray


def _blas_threads() -> int:
    """Threads the BLAS libraries may use now (what ``threadpoolctl`` limits set)."""
    libs = [lib for lib in blas_controller().lib_controllers if lib.user_api == "blas"]
    return max((lib.num_threads for lib in libs), default=1)


_POOL: ThreadPoolExecutor | None = None


def _pool() -> ThreadPoolExecutor:
    """The process's worker threads for the lanes (made on first use)."""
    global _POOL
    if _POOL is None:
        _POOL = ThreadPoolExecutor(max_workers=os.cpu_count() or 1, thread_name_prefix="nc")
    return _POOL


def _forget_pool() -> None:
    global _POOL
    _POOL = None  # a forked child has none of the parent's threads


os.register_at_fork(after_in_child=_forget_pool)


class _Lane:
    """One worker thread's share of :class:`ClassScatter`: a scratch buffer for the classes
    it gathers and its own running scatter (strict upper triangle, Fortran order)."""

    def __init__(self, d: int, block_rows: int, dtype: np.dtype) -> None:
        self.buf = np.empty((block_rows, d), dtype)
        self.gram = np.zeros((d, d), dtype, order="F")
        self.gram_diag = self.gram.ravel(order="F")[:: d + 1]  # (d,) view of its diagonal
        self.backup = np.empty_like(self.gram)  # the gram before the current block


class ClassScatter:
    """Class-centred block statistics and a running within-class scatter in one dtype.

    Parameters
    ----------
    n_features : int
    block_rows : int
        The most rows a block passed to :meth:`add_block` may have.
    dtype : numpy dtype, float32 or float64
        Precision of the gathers and of the GEMM.

    Notes
    -----
    The blocks' scatter is kept as the strict upper triangle of a Fortran-ordered (d, d)
    array (what ``syrk`` writes) in the input dtype, moved into a float64 total every
    ``_FLUSH_ROWS`` rows; its diagonal is moved to float64 after every update. Small rank-k
    corrections (:meth:`add_outer`) wait for the next flush and go into the total with one
    float64 ``syrk``.

    A block's classes are shared between as many worker threads ("lanes") as the caller
    allows BLAS threads (``threadpoolctl``; one under ``ncdyn``'s default ``--threads 1``).
    Each lane gathers, centres and adds its classes into its own scatter with BLAS on one
    thread, so the copies and the centring run in parallel too, not only the GEMM. Which
    classes go to which lane depends only on the class counts, so results do not depend on
    thread timing.
    """

    def __init__(self, n_features: int, block_rows: int, dtype: np.dtype) -> None:
        self.dtype = np.dtype(dtype)
        self._shape = (n_features, block_rows)
        self._lanes: list[_Lane] = []
        self._ones = np.ones(block_rows, self.dtype)
        self._total = np.zeros((n_features, n_features), order="F")  # upper triangle, float64
        self._diag = np.zeros(n_features)  # diagonal of the blocks' updates, float64
        self._pending: list[tuple[float, np.ndarray]] = []  # (sign, rows) for add_outer
        self._rows = 0
        self._fast_syrk = syrk_update(self.dtype)

    def _lanes_for(self, groups: list[list[int]]) -> list[_Lane]:
        d, block_rows = self._shape
        lane_bytes = (2 * d * d + block_rows * d) * self.dtype.itemsize  # grams and buffer
        n = max(1, min(len(groups), _blas_threads(), _LANE_MEMORY // lane_bytes))
        while len(self._lanes) < n:
            self._lanes.append(_Lane(d, block_rows, self.dtype))
        return self._lanes[:n]

    def add_block(
        self, h: np.ndarray, y: np.ndarray, num_classes: int
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Add the block's within-class scatter about its own class means.

        Each class (or group of small classes) is gathered into a cache-sized buffer,
        centred on its mean in the input precision (``first``), and added with ``syrk``;
        the mean ``r`` of the centred rows (what rounding left) is added to the mean and
        ``n r r^T`` taken off the scatter, so the result is exact up to the rounding of the
        GEMM. The per-feature scatter of a class comes from the diagonal of its update
        (zeroed after it is read and kept in float64), or from the centred rows in a group.

        Parameters
        ----------
        h : ndarray of shape (n, d), dtype ``self.dtype``
        y : ndarray of shape (n,), int64 in ``[0, num_classes)``

        Returns
        -------
        counts : ndarray of shape (C,), float64
        mean : ndarray of shape (C, d), float64 class means of the block (zero if absent)
        m2 : ndarray of shape (C, d), float64 per-class per-feature scatter about ``mean``

        Raises
        ------
        FloatingPointError
            If a class's sum is not finite (NaN or Inf in ``h``, or an overflow); the
            scatter is then restored to its state before the block.
        SquaresOverflow
            If the sums are finite but the squares overflow; the scatter is restored too.
        """
        C, d = num_classes, h.shape[1]
        order = np.argsort(y, kind="stable")  # (n,)
        counts = np.bincount(y, minlength=C)  # (C,)
        ends = np.cumsum(counts)
        first = np.zeros((C, d), self.dtype)  # class means in the input precision
        rest = np.zeros((C, d), self.dtype)  # sums of the centred rows
        m2 = np.zeros((C, d))
        groups = _groups(counts)
        lanes = self._lanes_for(groups)
        shares = _share(groups, counts, len(lanes))
        for lane in lanes:
            np.copyto(lane.backup, lane.gram)  # to undo the block if it is not finite
        block = _Block(h, order, counts, ends, first, rest, m2)
        try:
            with one_blas_thread():
                others = zip(lanes[1:], shares[1:], strict=True)
                jobs = [_pool().submit(self._run, lane, share, block) for lane, share in others]
                try:
                    self._run(lanes[0], shares[0], block)  # the first lane in this thread
                finally:
                    wait(jobs)  # every lane is done before a gram is read or restored
                for job in jobs:
                    job.result()  # a lane's own error, raised here
        except BaseException:
            self._restore(lanes)
            raise
        if not np.isfinite(first).all():
            self._restore(lanes)
            raise FloatingPointError
        if not np.isfinite(m2).all():  # the diagonal bounds every entry of the update
            self._restore(lanes)
            raise SquaresOverflow
        self._diag += m2.sum(0)
        r = rest.astype(np.float64) / np.maximum(counts, 1)[:, None]  # (C, d)
        m2 -= counts[:, None] * r**2
        # the rows were centred on `first`, not on `first + r`: remove sum_c n_c r_c r_c^T
        self.add_outer(np.sqrt(counts)[:, None] * r, sign=-1.0)
        self._rows += h.shape[0]
        if self._rows >= _FLUSH_ROWS:
            self.flush()
        return counts.astype(np.float64), first.astype(np.float64) + r, m2

    def _run(self, lane: _Lane, groups: list[list[int]], block: _Block) -> None:
        """Gather, centre and add the classes of ``groups`` into ``lane`` (one thread)."""
        h, order, counts, ends = block.h, block.order, block.counts, block.ends
        with np.errstate(invalid="ignore", over="ignore"):  # non-finite input: checked after
            for group in groups:
                lo, hi = ends[group[0]] - counts[group[0]], ends[group[-1]]
                rows = lane.buf[: hi - lo]  # (k, d), stays in cache
                np.take(h, order[lo:hi], axis=0, out=rows, mode="clip")
                for c in group:
                    k = int(counts[c])
                    part = rows[ends[c] - k - lo : ends[c] - lo]  # (n_c, d) view
                    np.matmul(self._ones[:k], part, out=block.first[c])
                    block.first[c] /= k
                    part -= block.first[c]  # centre in place
                    np.matmul(self._ones[:k], part, out=block.rest[c])
                    if len(group) > 1:
                        block.m2[c] = np.einsum("ij,ij->j", part, part)
                self._fast_syrk(1.0, rows, lane.gram)
                if len(group) == 1:
                    block.m2[group[0]] = lane.gram_diag  # this class's update only
                lane.gram_diag[:] = 0.0

    @staticmethod
    def _restore(lanes: list[_Lane]) -> None:
        for lane in lanes:
            np.copyto(lane.gram, lane.backup)

    def add_outer(self, rows: np.ndarray, *, sign: float = 1.0) -> None:
        """Add ``sign * rows.T @ rows`` to the scatter (rows (k, d), k small, float64).

        The rows are kept and added in float64 at the next :meth:`flush`, all at once.
        """
        self._pending.append((sign, rows))

    def flush(self) -> None:
        """Move the scatter accumulated in ``self.dtype`` and the pending rank-k terms into
        the float64 total."""
        for sign in (1.0, -1.0):
            rows = [r for s, r in self._pending if s == sign]
            if rows:
                stacked = np.concatenate(rows)  # (k, d)
                with one_blas_thread():
                    syrk_update(np.dtype(np.float64))(sign, stacked, self._total)
        self._pending = []
        if self._rows:
            for lane in self._lanes:
                self._total += lane.gram  # the diagonal of a lane's gram is always zero
                lane.gram.fill(0.0)
            self._rows = 0

    def scatter(self) -> np.ndarray:
        """The full symmetric float64 scatter added so far, shape (d, d)."""
        self.flush()
        full = self._total + self._total.T  # the strict lower triangle of _total is zero
        np.fill_diagonal(full, self._diag + np.diagonal(self._total))
        return full


class NearestMeanScorer:
    """Counts rows where the classifier's argmax differs from the nearest class mean.

    One GEMM per block, in the input precision, gives ``scores = h @ proj + offset``: the
    logits ``W h + b`` in the first C columns and ``h . v_c - (|v_c|^2 / 2 + mu_G . v_c)``
    in the last C, with ``v_c = mu_c - mu_G`` the class means centred on the global mean.
    The second half equals ``-(|h - mu_c|^2 - |h - mu_G|^2) / 2``, largest for the nearest
    mean. Centring matters in float32: the rounding of ``h . v_c`` scales with ``|v_c|``,
    which for uncentred means includes any offset the features share (after a ReLU it can
    dwarf the distances between the means) and could flip the nearest mean.

    Parameters
    ----------
    weight : ndarray of shape (C, d), float64
    bias : ndarray of shape (C,), float64
    mean : ndarray of shape (C, d), float64 class means
    counts : ndarray of shape (C,), float64 class counts
    """

    def __init__(
        self, weight: np.ndarray, bias: np.ndarray, mean: np.ndarray, counts: np.ndarray
    ) -> None:
        self.num_classes = weight.shape[0]
        mu_g = counts @ mean / counts.sum()  # (d,)
        v = mean - mu_g  # (C, d)
        self.proj = np.ascontiguousarray(np.concatenate([weight, v]).T)  # (d, 2C)
        self.offset = np.concatenate([bias, -(0.5 * (v**2).sum(1) + v @ mu_g)])  # (2C,)
        self._cast: dict[np.dtype, tuple[np.ndarray, np.ndarray] | None] = {}

    def mismatches(self, h: np.ndarray) -> int:
        """Disagreements among the rows of ``h`` (shape (n, d), float32 or float64)."""
        if h.dtype not in self._cast:
            with np.errstate(over="ignore"):
                pair = (self.proj.astype(h.dtype), self.offset.astype(h.dtype))
            self._cast[h.dtype] = pair if all(np.isfinite(a).all() for a in pair) else None
        cast = self._cast[h.dtype]
        scores = None
        if cast is not None:
            with np.errstate(over="ignore", invalid="ignore"):
                scores = h @ cast[0]  # (n, 2C)
                scores += cast[1]
        if scores is None or not np.isfinite(scores).all():  # past float32's range
            scores = h.astype(np.float64) @ self.proj + self.offset
        winner = scores.reshape(h.shape[0], 2, self.num_classes).argmax(2)  # (n, 2)
        return int(np.count_nonzero(winner[:, 0] != winner[:, 1]))
