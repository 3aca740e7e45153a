"""Fast path of the one-shot collapse metrics on small input (used by ``collapse.py``).

A Recorder's probe set (a few hundred rows) is cheaper to handle in a few whole-array GEMMs
against the one-hot label matrix than with the streaming machinery of ``_fast_collapse_stream``.
:func:`dense_stats` gives the class counts, means and per-feature scatter, and keeps the
within-class residuals, so that every later product with the features goes through the
residuals: NC1 needs them projected on the mean subspace, NC4 the classifier scores and the
distances to the class means, and all of it comes out of one GEMM
(:meth:`DenseStats.centred_product`).

Float64 features are centred in float64. Float32 features stay in float32 (half the memory
traffic, which is what the Recorder pays for), with compensated centring: rows are centred
on the float32 class means ``a``, which leaves each residual ``r = h - a`` correct to float32
precision *of r* however large the means are; the residuals' own class means ``c`` put the
exact mean ``a + c`` back in float64, and the scatter about it is ``sum r^2 - n c^2``.
Float32 features whose squares leave float32's range (a spread beyond ~1e19) are redone in
float64.

``collapse_metrics`` takes this path up to 2^20 feature entries (``collapse._DENSE_MAX``), and
the streaming blocks of ``_fast_collapse_stream`` beyond. The readable reference both are
tested against is ``collapse_reference.py``.
"""

from __future__ import annotations

import numpy as np

__all__ = ["DenseStats", "LabelPlan", "dense_stats"]


class LabelPlan:
    """Checked labels and what depends on them alone (counts, one-hot matrix), so that a
    Recorder's fixed probe set builds them once (see ``CollapseProbe``)."""

    def __init__(self, y: np.ndarray, num_classes: int) -> None:
        self.y = y  # (n,), checked, in [0, num_classes)
        self.count = np.bincount(y, minlength=num_classes).astype(np.float64)  # (C,)
        self.inverse_count = 1.0 / np.maximum(self.count, 1.0)  # empty classes: zero means
        self._onehot: dict[np.dtype, np.ndarray] = {}

    def onehot(self, dtype: np.dtype) -> np.ndarray:
        """(C, n) indicator matrix in ``dtype``: the GEMMs against it sum per class."""
        if dtype not in self._onehot:
            out = np.zeros((self.count.size, self.y.size), dtype=dtype)
            out[self.y, np.arange(self.y.size)] = 1.0
            out.flags.writeable = False
            self._onehot[dtype] = out
        return self._onehot[dtype]


class DenseStats:
    """Class statistics of one (n, d) feature array and its within-class residuals.

    The centred rows ``h_i - mean[y_i]`` are ``residual - shift[labels]``; ``shift`` is
    ``None`` when the residuals are centred already (float64 input).

    Attributes
    ----------
    count : ndarray of shape (C,)
    mean, m2 : ndarray of shape (C, d), float64
        Class means and per-class per-feature scatter about them.
    """

    def __init__(
        self,
        plan: LabelPlan,
        mean: np.ndarray,
        m2: np.ndarray,
        residual: np.ndarray,
        shift: np.ndarray | None,
    ) -> None:
        self.count, self.labels = plan.count, plan.y
        self.mean, self.m2 = mean, m2
        self.residual, self.shift = residual, shift

    def centred_product(self, cols: np.ndarray) -> np.ndarray:
        """(n, k) float64 products of the centred rows with the columns of ``cols`` (d, k).

        One GEMM in the residuals' precision; float32 products past float32's range (huge
        classifier weights) are redone in float64.
        """
        r = self.residual
        with np.errstate(over="ignore", invalid="ignore"):
            out = (r @ cols.astype(r.dtype)).astype(np.float64)
        if r.dtype != np.float64 and not np.isfinite(out).all():
            out = r.astype(np.float64) @ cols
        if self.shift is not None:
            out -= (self.shift @ cols).take(self.labels, axis=0)
        return out

    def nc4(
        self, products: np.ndarray, weight: np.ndarray, bias: np.ndarray | None, gram: np.ndarray
    ) -> float:
        """NC4 from :meth:`centred_product` with the columns ``[W^T, M]`` (d, 2C): the
        products (n, 2C) of the centred rows ``x = h - mu_y`` with the classifier rows and
        with the centred class means ``v_c`` (columns of ``M``, Gram ``gram``).

        The logits are ``W x + (W mu_y + b)``, and the nearest class mean maximises
        ``x . v_c + v_y . v_c - |v_c|^2 / 2`` (since ``h - mu_G = x + v_y``): both are the
        products plus a (C, 2C) table indexed by the label. Products of the small residuals
        keep float32 rounding far below that of ``h`` itself (``_fast_collapse_stream``'s
        ``NearestMeanScorer`` streams the same test on the rows). ``nan`` if a score is not
        finite.
        """
        b = 0.0 if bias is None else bias
        table = np.concatenate((self.mean @ weight.T + b, gram - 0.5 * gram.diagonal()), axis=1)
        scores = products + table[self.labels]  # (n, 2C): logits, then nearness to each mean
        if not np.isfinite(scores).all():
            return float("nan")
        winner = scores.reshape(self.labels.size, 2, -1).argmax(2)  # (n, 2)
        return float(np.count_nonzero(winner[:, 0] != winner[:, 1])) / self.labels.size

    def scatter(self) -> np.ndarray:
        """Pooled within-class scatter, shape (d, d), float64."""
        r = self.residual.astype(np.float64)
        out = r.T @ r
        if self.shift is not None:  # the residuals of class c sum to count_c * shift_c
            out -= (self.shift.T * self.count) @ self.shift
        return out


def dense_stats(h: np.ndarray, plan: LabelPlan) -> DenseStats:
    """The statistics of checked features ``h`` (n, d), float32 or float64.

    Raises
    ------
    ValueError
        If ``h`` holds NaN or Inf, or float64 values whose class sums or squares overflow.
    """
    if h.dtype == np.float32:
        stats = _pass(h, plan)
        if stats is not None:
            return stats
    stats = _pass(h.astype(np.float64, copy=False), plan)
    if stats is None:
        raise ValueError(
            "`features` must be finite; their spread is so large that its squares overflow."
        )
    return stats


def _pass(h: np.ndarray, plan: LabelPlan) -> DenseStats | None:
    """One pass in ``h``'s dtype; ``None`` if its squares overflow."""
    onehot = plan.onehot(h.dtype)
    inverse = plan.inverse_count[:, None]  # (C, 1)
    with np.errstate(invalid="ignore", over="ignore"):  # checked below
        sums = onehot @ h  # (C, d); NaN or Inf in h (0 * inf is NaN) or an overflow shows here
        if not np.isfinite(sums).all():
            bad = np.flatnonzero(~np.isfinite(h).all(axis=1))
            where = (
                f"rows {bad[0]}..{bad[-1]} hold NaN or Inf entries"
                if bad.size
                else "values so large that their class sums overflow"
            )
            raise ValueError(f"`features` must be finite; {where}.")
        approx = (sums * inverse).astype(h.dtype, copy=False)  # (C, d)
        residual = approx.take(plan.y, axis=0)  # (n, d), then h minus it in place
        np.subtract(h, residual, out=residual)  # rounded once
        squares = onehot @ np.square(residual)  # (C, d)
        if not np.isfinite(squares).all():
            return None
    if h.dtype == np.float64:
        return DenseStats(plan, approx, squares, residual, None)
    shift = (onehot @ residual).astype(np.float64) * inverse  # (C, d), tiny
    m2 = squares.astype(np.float64) - plan.count[:, None] * shift**2
    return DenseStats(plan, approx.astype(np.float64) + shift, np.maximum(m2, 0.0), residual, shift)
