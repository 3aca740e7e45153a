"""Neural-collapse metrics NC1--NC4, one-shot and streaming.

Definitions and conventions are in ``docs/metrics.md``. In brief, with class means
``mu_c``, global mean ``mu_G``, centred means ``M = [mu_c - mu_G]`` (d x C),
within-class covariance ``Sigma_W`` (normalised by N) and between-class covariance
``Sigma_B = M M^T / C``:

- ``nc1``            Tr(Sigma_W Sigma_B^+) / C  (Papyan et al. 2020; ``/C`` switchable)
- ``nc1_std``        mean over classes and features of the within-class standard deviation
                     (ddof 0), the NC1 of Seleznova et al. 2023 (their code)
- ``cdnv``           mean over class pairs of (V_c + V_c') / (2 ||mu_c - mu_c'||^2)
                     (Galanti et al. 2022), V_c the mean squared distance to mu_c
- ``nc2_equinorm``   std_c ||mu_c - mu_G|| / mean_c ||mu_c - mu_G||
- ``nc2_equiangular`` std over c != c' of cos(mu_c - mu_G, mu_c' - mu_G)
- ``nc2_maxangle``   mean over c != c' of |cos + 1/(C-1)|
- ``nc2_etf``        || G/||G||_F - (I - 11^T/C)/sqrt(C-1) ||_F with G = M^T M (or with
                     column-normalised M when ``etf_normalize_means``)
- ``nc3``            || M/||M||_F - W^T/||W||_F ||_F  (Seleznova et al. 2023)
- ``nc3_papyan``     the same distance squared (Papyan et al. 2020)
- ``nc4``            fraction of samples where argmax(W h + b) != argmin_c ||h - mu_c||

:class:`CollapseAccumulator` streams the same metrics over batches (NC4 takes a second pass,
since it needs the final class means); :func:`collapse_metrics` computes them in one call.

Both run on the fast paths of ``_fast_collapse_stream`` (blocks of rows, class-centred
scatter) and ``_fast_collapse_dense`` (one dense pass on small input), whose docstrings give
the implementation; ``collapse_reference`` holds the short, readable reference the tests
compare them against.
"""

from __future__ import annotations

import functools
import math
import os
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from .._simplex import etf_gram
from .._validation import check_array, check_int, check_labels
from ._base import ProbeInput, ProbeOutput, register_probe
from ._fast_collapse_dense import DenseStats, LabelPlan, dense_stats
from ._fast_collapse_stream import ClassScatter, NearestMeanScorer, SquaresOverflow
from ._fast_syrk import one_blas_thread

__all__ = ["CollapseAccumulator", "collapse_metrics"]

_BATCH = 4096
#: Up to this many feature entries, ``collapse_metrics`` takes one dense pass (a few GEMMs
#: against the one-hot labels), which costs less than the streaming machinery on a
#: Recorder's probe set.
_DENSE_MAX = 1 << 20

#: What the array arguments accept: anything NumPy reads, or a torch tensor (any device).
Features = ArrayLike | torch.Tensor


@functools.cache
def _memory_bytes() -> int:
    """Physical memory of this machine in bytes (0 if unknown)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return 0


def _check_class_memory(num_classes: int, n_features: int, name: str) -> None:
    """Refuse a class count whose per-class statistics cannot fit in memory.

    Counts the float64 arrays that exist at once when the metrics are computed: (C, d)
    means, scatters and block statistics, the (C, C) Gram, cosines and ETF target, and the
    (C (C - 1) / 2, d) differences of class-mean pairs. A single stray label of 10^9 would
    otherwise start allocating tens of gigabytes before failing.
    """
    C, d = num_classes, max(n_features, 1)
    pairs = C * (C - 1) // 2
    need = 8 * (6 * C * d + 5 * C * C + pairs * (2 * d + 3))
    have = _memory_bytes()
    if have and need > have:
        largest = f" (largest label {C - 1})" if name == "labels" else ""
        raise ValueError(
            f"`{name}` gives {C} classes{largest}: their statistics for {d} features would "
            f"need about {need / 2**30:.3g} GiB, more than this machine's {have / 2**30:.3g} "
            "GiB. Number the classes 0..C-1."
        )


def _check_rows_and_columns(shape: tuple[int, ...], name: str) -> None:
    """Refuse a 2-D feature array without rows or without columns."""
    if len(shape) == 2 and shape[0] == 0:
        raise ValueError(f"`{name}` must hold at least one sample (row); got shape {shape}.")
    if len(shape) == 2 and shape[1] == 0:
        raise ValueError(f"`{name}` must have at least one column (feature); got shape {shape}.")


def _as_array(x: Features, name: str, ndim: int, *, finite: bool = True) -> np.ndarray:
    """A CPU float array view of ``x`` (NumPy or torch; half precision is upcast).

    With ``finite=False`` the caller checks finiteness itself (the accumulator checks the
    per-batch class means, which any NaN or Inf makes non-finite).
    """
    if isinstance(x, torch.Tensor):
        t = x.detach()
        if t.dim() != ndim:
            raise ValueError(f"`{name}` must have {ndim} dimension(s); got shape {tuple(t.shape)}.")
        if t.dtype not in (torch.float32, torch.float64):
            t = t.float()
        x = t.cpu().numpy()
    arr = check_array(x, name, ndim=ndim, finite=finite)
    if arr.dtype not in (np.float32, np.float64):
        arr = arr.astype(np.float64)
    return arr


class CollapseAccumulator:
    """Streaming NC1--NC4 statistics over batches of features.

    Parameters
    ----------
    num_classes : int
    weight : array_like of shape (num_classes, n_features), optional
        Classifier weights, for ``nc3`` and ``nc4``.
    bias : array_like of shape (num_classes,), optional
    nc1_divide_by_classes : bool, default=True
        Divide Tr(Sigma_W Sigma_B^+) by C (Papyan's definition).
    etf_normalize_means : bool, default=False
        Column-normalise the centred means before comparing their Gram matrix with the ETF.

    Attributes
    ----------
    count : ndarray of shape (num_classes,)
        Samples seen per class.
    mean, m2 : ndarray of shape (num_classes, n_features)
        Running class means and per-class per-feature scatter (float64).

    Notes
    -----
    Call :meth:`update` on every batch, then optionally :meth:`update_nc4` on every batch
    again (NC4 needs the final class means), then :meth:`compute`.
    """

    def __init__(
        self,
        num_classes: int,
        *,
        weight: Features | None = None,
        bias: Features | None = None,
        nc1_divide_by_classes: bool = True,
        etf_normalize_means: bool = False,
    ) -> None:
        self.num_classes = check_int(num_classes, "num_classes", low=2)
        n_features = 1 if weight is None else int(np.shape(weight)[-1])
        _check_class_memory(self.num_classes, n_features, "num_classes")
        self.weight = None if weight is None else _as_array(weight, "weight", 2).astype(np.float64)
        self.bias = None if bias is None else _as_array(bias, "bias", 1).astype(np.float64)
        if self.weight is not None and self.weight.shape[0] != num_classes:
            raise ValueError(
                f"`weight` must have shape (num_classes={num_classes}, n_features); "
                f"got {tuple(self.weight.shape)}."
            )
        if self.bias is not None and self.bias.shape != (num_classes,):
            raise ValueError(
                f"`bias` must have shape ({num_classes},); got {tuple(self.bias.shape)}."
            )
        self.nc1_divide_by_classes = nc1_divide_by_classes
        self.etf_normalize_means = etf_normalize_means
        self.dim: int | None = None
        self.count = np.zeros(num_classes)  # (C,)
        self.mean: np.ndarray | None = None  # (C, d) running class means
        self.m2: np.ndarray | None = None  # (C, d) per-class per-feature scatter
        self.nc4_mismatch = 0
        self.nc4_count = 0
        self._scatters: dict[np.dtype, ClassScatter] = {}  # pooled scatter, one per dtype
        self._nc4: NearestMeanScorer | None = None  # built from the final means
        self._dense: DenseStats | None = None  # set by collapse_metrics on small input

    def _init(self, d: int) -> None:
        _check_class_memory(self.num_classes, d, "num_classes")
        self.dim = d
        if self.weight is not None and self.weight.shape[1] != d:
            raise ValueError(
                f"`weight` must have {d} columns (one per feature); got shape "
                f"{tuple(self.weight.shape)}."
            )
        self.mean = np.zeros((self.num_classes, d))
        self.m2 = np.zeros((self.num_classes, d))

    def _features(self) -> int:
        """The feature count, once the first batch has set it."""
        if self.dim is None:
            raise ValueError("no features were added; call `update` with at least one batch.")
        return self.dim

    def _statistics(self) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64]]:
        """``(count, mean, m2)`` so far: shapes (C,), (C, d), (C, d), float64.

        Raises
        ------
        ValueError
            If no batch was added yet.
        """
        if self.mean is None or self.m2 is None:
            raise ValueError("no features were added; call `update` with at least one batch.")
        return self.count, self.mean, self.m2

    def _check_batch(
        self, features: Features, labels: Features | LabelPlan
    ) -> tuple[np.ndarray, np.ndarray]:
        h = _as_array(features, "features", 2, finite=False)
        _check_rows_and_columns(h.shape, "features")
        if isinstance(labels, LabelPlan):  # checked already; only the length can differ
            y = labels.y
            if y.size != h.shape[0]:
                raise ValueError(
                    f"`labels` must have length {h.shape[0]} (one label per sample); got {y.size}."
                )
        else:
            if isinstance(labels, torch.Tensor):
                labels = labels.detach().cpu().numpy()
            y = check_labels(labels, "labels", n_samples=h.shape[0], num_classes=self.num_classes)
        if self.dim is not None and h.shape[1] != self.dim:
            raise ValueError(
                f"`features` must have {self.dim} columns like earlier batches; got {h.shape[1]}."
            )
        return h, y

    def update(self, features: Features, labels: Features) -> CollapseAccumulator:
        """Add a batch: features of shape (n, d), labels of shape (n,)."""
        h, y = self._check_batch(features, labels)
        if self.dim is None:
            self._init(h.shape[1])
        self._nc4 = None
        for start in range(0, h.shape[0], _BATCH):
            self._update_block(h[start : start + _BATCH], y[start : start + _BATCH], start)
        return self

    def _scatter(self, dtype: np.dtype) -> ClassScatter:
        """The pooled scatter that takes blocks of ``dtype`` (made on first use)."""
        if dtype not in self._scatters:
            self._scatters[dtype] = ClassScatter(self._features(), _BATCH, dtype)
        return self._scatters[dtype]

    def _update_block(self, h: np.ndarray, y: np.ndarray, start: int) -> None:
        C = self.num_classes
        part = self._scatter(h.dtype)
        try:
            try:
                n_b, mean_b, m2_b = part.add_block(h, y, C)
            except SquaresOverflow:
                if h.dtype == np.float64:
                    raise
                h = h.astype(np.float64)  # float32 squares past its range: this block wider
                part = self._scatter(h.dtype)
                n_b, mean_b, m2_b = part.add_block(h, y, C)
        except (FloatingPointError, SquaresOverflow):
            raise ValueError(
                f"`features` must be finite; rows {start}..{start + h.shape[0] - 1} hold "
                "NaN or Inf entries (or values so large that their sums or squares overflow)."
            ) from None
        # Pairwise merge of (count, mean, M2) per class (Chan, Golub, LeVeque 1979).
        n = self.count + n_b
        present = n_b > 0
        delta = np.where(present[:, None], mean_b - self.mean, 0.0)  # (C, d)
        w = np.divide(self.count * n_b, n, out=np.zeros(C), where=present)  # (C,)
        self.m2 += m2_b + w[:, None] * delta**2
        part.add_outer(np.sqrt(w)[:, None] * delta)  # (C, d): between old and new means
        self.mean += delta * np.divide(n_b, n, out=np.zeros(C), where=present)[:, None]
        self.count = n

    def _update_dense(self, features: Features, labels: Features | LabelPlan) -> None:
        """The statistics of one small (n, d) array in one dense pass (``_fast_collapse_dense``)
        instead of the streaming machinery; NC4 then comes with :meth:`compute`. Same result
        as :meth:`update` and :meth:`update_nc4` (to the input precision)."""
        h, y = self._check_batch(features, labels)
        plan = labels if isinstance(labels, LabelPlan) else LabelPlan(y, self.num_classes)
        self._init(h.shape[1])
        self._dense = dense_stats(h, plan)
        self.count, self.mean, self.m2 = self._dense.count, self._dense.mean, self._dense.m2

    @property
    def scatter(self) -> np.ndarray:
        """Pooled within-class scatter about the running class means, shape (d, d)."""
        if self.dim is None:
            raise ValueError("no features were added; call `update` with at least one batch.")
        parts = [part.scatter() for part in self._scatters.values()]
        if self._dense is not None:
            parts.append(self._dense.scatter())
        total = parts[0]
        for part in parts[1:]:
            total = total + part
        return total

    def update_nc4(self, features: Features, labels: Features) -> CollapseAccumulator:
        """Second pass: count disagreements of the classifier and the nearest class mean."""
        if self.weight is None:
            raise ValueError("`weight` is required for NC4; pass it to CollapseAccumulator.")
        if self.dim is None:
            raise ValueError("call `update` on every batch before `update_nc4`.")
        h, _ = self._check_batch(features, labels)
        self._score_nc4(h)
        return self

    def _score_nc4(self, h: np.ndarray) -> None:
        if self._nc4 is None:
            if self.weight is None:
                raise ValueError("`weight` is required for NC4; pass it to CollapseAccumulator.")
            b = np.zeros(self.num_classes) if self.bias is None else self.bias
            self._nc4 = NearestMeanScorer(self.weight, b, self._statistics()[1], self.count)
        for start in range(0, h.shape[0], _BATCH):
            hb = h[start : start + _BATCH]  # (B, d)
            self.nc4_mismatch += self._nc4.mismatches(hb)
            self.nc4_count += hb.shape[0]

    def compute(self) -> dict[str, float]:
        """The metrics accumulated so far (see the module docstring for the keys).

        Raises
        ------
        ValueError
            If no batch was added, a class is missing, or a class has a single sample.
        """
        if self.dim is None:
            raise ValueError("no features were added; call `update` with at least one batch.")
        counts = self.count
        if (counts < 2).any():
            c = int(np.flatnonzero(counts < 2)[0])
            raise ValueError(
                f"`labels` must have at least 2 samples in every class; class {c} has "
                f"{int(counts[c])}."
            )
        return _metrics_from_stats(self)


#: The Gram route of :func:`_mean_subspace` is taken when the smallest kept eigenvalue is at
#: least this fraction of the largest; its rounding error is then below ~1e-11 relative.
_GRAM_MIN_RATIO = 1e-4


def _mean_subspace(
    M: np.ndarray, gram: np.ndarray, rtol: float = 1e-8
) -> tuple[np.ndarray, np.ndarray]:
    """Orthonormal basis and singular values of the centred means M (d x C), rank <= C - 1.

    Returns ``(basis, s)``, basis of shape (d, k) and the k kept singular values, so that
    Tr(A pinv(M M^T)) = sum over kept i of (b_i^T A b_i) / s_i^2. The count-weighted columns
    of M sum to zero, so one singular value is zero in exact arithmetic; rounding makes it
    tiny but non-zero, and a plain ``pinv`` would invert it (a common offset of the features
    then blows NC1 up). Keep the top C - 1 singular values and drop any below ``rtol`` times
    the largest.

    The eigendecomposition of the C x C Gram ``M^T M`` gives the same factors for a fraction
    of the cost of an SVD of M; it squares the condition number, so it is used only when the
    kept part is well conditioned (``_GRAM_MIN_RATIO``), and the SVD otherwise.
    """
    k = M.shape[1] - 1
    lam, v = np.linalg.eigh(gram)  # ascending
    top, kept = lam[-1], lam[-k:][::-1]
    if top > 0.0 and kept[-1] >= _GRAM_MIN_RATIO * top:
        s = np.sqrt(kept)
        return (M @ v[:, -k:][:, ::-1]) / s, s
    u, s, _ = np.linalg.svd(M, full_matrices=False)  # (d, C), (C,)
    k = min(k, int(np.count_nonzero(s > rtol * s[0])))
    return u[:, :k], s[:k]


@functools.lru_cache(maxsize=8)
def _class_pair_constants(C: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Row and column indices of the class pairs c < c', the off-diagonal mask, the ETF Gram."""
    i, j = np.triu_indices(C, 1)
    etf = etf_gram(C)
    off = ~np.eye(C, dtype=bool)
    for a in (i, j, off, etf):
        a.flags.writeable = False
    return i, j, off, etf


def _metrics_from_stats(acc: CollapseAccumulator) -> dict[str, float]:
    """The metrics from accumulated statistics.

    Degenerate geometry (two equal class means, a zero classifier) gives ``inf`` or ``nan``
    for the metrics that divide by it, by design: the value says the metric is undefined.
    So do products past float64's range (``nc4`` is then ``nan``).
    """
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        return _metrics_from_stats_unchecked(acc)


def _metrics_from_stats_unchecked(acc: CollapseAccumulator) -> dict[str, float]:
    # The statistics are small (C x d, C x C): NumPy has less per-call overhead than torch,
    # and at a Recorder's size (C = 10, d = 256) the fixed cost of each call is most of the
    # time, so the arithmetic is written in few calls.
    C = acc.num_classes
    counts, mu, m2 = acc._statistics()  # (C,), (C, d), (C, d)
    n_total = float(counts.sum())
    M = (mu - counts @ mu / n_total).T  # (d, C) centred class means
    gram = M.T @ M  # (C, C) Gram of the centred means
    # Tr(Sigma_W Sigma_B^+) with Sigma_B = M M^T / C, through the singular factors of M.
    basis, s = _mean_subspace(M, gram)
    scaled = basis / s  # (d, k): the projections on it, squared and summed, are the trace
    nc4 = None
    if acc._dense is not None:
        # X^T X is never formed: |X b_i / s_i|^2, and NC4's scores from the same GEMM
        k = basis.shape[1]
        cols = scaled if acc.weight is None else np.concatenate((scaled, acc.weight.T, M), axis=1)
        prod = acc._dense.centred_product(cols)  # (n, k [+ 2C])
        trace = float(np.square(prod[:, :k]).sum())
        if acc.weight is not None:
            nc4 = acc._dense.nc4(prod[:, k:], acc.weight, acc.bias, gram)
    else:
        trace = float(np.einsum("ij,ij->", scaled, acc.scatter @ scaled))
        if acc.nc4_count:
            nc4 = acc.nc4_mismatch / acc.nc4_count
    sq_norms = gram.diagonal()
    between = float(sq_norms.sum())
    out: dict[str, float] = {
        "nc1": trace / n_total if acc.nc1_divide_by_classes else C * trace / n_total,
        "within_trace": float(m2.sum()) / n_total,
        "between_trace": between / C,
    }
    var = np.maximum(m2 * (1.0 / counts)[:, None], 0.0)  # (C, d) population variances
    v_c = var.sum(1)  # (C,) mean squared distance to the class mean
    out["nc1_std"] = float(np.sqrt(var, out=var).sum()) / var.size
    i, j, off_diagonal, etf = _class_pair_constants(C)
    out["cdnv"] = float(((v_c[i] + v_c[j]) / _pair_distances(mu, gram, i, j)).mean()) / 2.0
    norms = np.sqrt(sq_norms)  # (C,)
    out["nc2_equinorm"] = float(norms.std() / norms.mean())
    cos_matrix = gram / np.outer(norms, norms)
    cos = cos_matrix[off_diagonal]
    out["nc2_equiangular"] = float(cos.std())
    out["nc2_maxangle"] = float(np.abs(cos + 1.0 / (C - 1)).mean())
    base = cos_matrix if acc.etf_normalize_means else gram
    out["nc2_etf"] = float(np.linalg.norm(base * (1.0 / np.linalg.norm(base)) - etf))
    if acc.weight is not None:
        w = acc.weight
        gap = M / np.sqrt(between) - w.T / np.linalg.norm(w)
        out["nc3_papyan"] = float(np.square(gap).sum())
        out["nc3"] = float(np.sqrt(out["nc3_papyan"]))
    if nc4 is not None:
        out["nc4"] = nc4
    return out


#: Squared distances of class-mean pairs are read off the Gram when its rounding error,
#: about 1e-16 times (|v_i|^2 + |v_j|^2), is below this fraction of the distance.
_PAIR_GRAM_RTOL = 1e-7


def _pair_distances(mu: np.ndarray, gram: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Squared distances ``|mu_i - mu_j|^2`` of the class pairs (i, j).

    ``g_ii + g_jj - 2 g_ij`` from the Gram of the centred means costs a few operations on
    C x C numbers; it cancels when two means are far closer to each other than to the
    rest, so then the pairs come from the differences themselves (``C(C-1)/2 x d`` work).
    """
    diag = gram.diagonal()
    scale = diag[i] + diag[j]
    d2 = scale - 2.0 * gram[i, j]
    if (d2 > _PAIR_GRAM_RTOL * scale).all():
        return d2
    return np.square(mu[i] - mu[j]).sum(1)


def collapse_metrics(
    features: Features,
    labels: Features,
    weight: Features | None = None,
    bias: Features | None = None,
    *,
    num_classes: int | None = None,
    nc1_divide_by_classes: bool = True,
    etf_normalize_means: bool = False,
) -> dict[str, float]:
    """NC1--NC4 of a feature matrix in one call.

    With class means ``mu_c``, global mean ``mu_G``, centred means ``M = [mu_c - mu_G]``
    (d x C), ``Sigma_W`` the within-class covariance (normalised by N) and
    ``Sigma_B = M M^T / C``, the main keys are (all of them in the module docstring and
    ``docs/metrics.md``)::

        nc1     = Tr(Sigma_W Sigma_B^+) / C                 (Papyan et al. 2020)
        nc2_etf = || G / ||G||_F - (I - 11^T/C) / sqrt(C-1) ||_F,   G = M^T M
        nc3     = || M / ||M||_F - W^T / ||W||_F ||_F         (Seleznova et al. 2023)
        nc4     = mean over samples of [argmax(W h + b) != argmin_c ||h - mu_c||]

    ``Sigma_B^+`` keeps the top C - 1 singular directions of ``M`` (the count-weighted
    centred means sum to zero) and drops singular values below 1e-8 of the largest.

    Parameters
    ----------
    features : array_like of shape (n_samples, n_features)
        Penultimate-layer features (numpy or torch; float32 is accumulated in float64).
    labels : array_like of shape (n_samples,)
        Integer classes in ``[0, num_classes)``; every class needs at least 2 samples.
    weight : array_like of shape (num_classes, n_features), optional
        Classifier weights; enables ``nc3``, ``nc3_papyan`` and ``nc4``.
    bias : array_like of shape (num_classes,), optional
    num_classes : int, optional
        Defaults to ``max(labels) + 1`` (or the rows of ``weight``).
    nc1_divide_by_classes : bool, default=True
        Divide the NC1 trace by C (Papyan's definition); ``False`` gives the plain trace.
    etf_normalize_means : bool, default=False
        Column-normalise ``M`` before comparing its Gram with the ETF in ``nc2_etf``.

    Returns
    -------
    dict of str to float
        ``nc1``, ``nc1_std``, ``cdnv``, ``nc2_equinorm``, ``nc2_equiangular``,
        ``nc2_maxangle``, ``nc2_etf``, ``within_trace``, ``between_trace``; with ``weight``
        also ``nc3``, ``nc3_papyan`` and ``nc4``. Degenerate geometry (two equal class
        means, a zero classifier) gives ``inf`` or ``nan`` for the metrics that divide by it.

    Raises
    ------
    ValueError
        Empty or non-finite features, labels out of range or of the wrong length, a class
        with fewer than 2 samples, or a class count whose statistics cannot fit in memory.

    See Also
    --------
    ncdynamics.probes.collapse_reference.reference_collapse_metrics : the readable reference.

    Examples
    --------
    >>> import numpy as np
    >>> from ncdynamics.probes import collapse_metrics
    >>> means = np.eye(3) - 1 / 3                      # a simplex ETF in R^3
    >>> h = np.repeat(means, 4, axis=0)                # 4 samples per class, no spread
    >>> y = np.repeat(np.arange(3), 4)
    >>> m = collapse_metrics(h, y, weight=means)
    >>> round(m["nc1"], 12), round(m["nc2_etf"], 12), round(m["nc3"], 12), m["nc4"]
    (0.0, 0.0, 0.0, 0.0)
    """
    shape = tuple(features.shape) if isinstance(features, torch.Tensor) else np.shape(features)
    _check_rows_and_columns(shape, "features")
    n_labels = labels.numel() if isinstance(labels, torch.Tensor) else np.size(labels)
    if n_labels == 0:
        raise ValueError("`labels` must hold one label per sample; got an empty array.")
    if num_classes is None:
        if weight is not None:
            num_classes = int(np.shape(weight)[0])
        else:
            lab = labels.detach().cpu().numpy() if isinstance(labels, torch.Tensor) else labels
            num_classes = int(check_labels(lab, "labels").max()) + 1
            _check_class_memory(num_classes, shape[-1] if shape else 1, "labels")
    # features so small that their squares leave float64 (about 1e-300 squares to 0):
    # scaled by an exact power of two first, so that the ratios (nc1, cdnv, nc2, nc3)
    # and nc4 (bias scaled alike) are those of the features, not of rounding to zero
    scale = _power_of_two_scale(features)
    if scale != 1.0:
        features = _scaled(features, scale)
        bias = None if bias is None else _scaled(bias, scale)
    acc = CollapseAccumulator(
        num_classes,
        weight=weight,
        bias=bias,
        nc1_divide_by_classes=nc1_divide_by_classes,
        etf_normalize_means=etf_normalize_means,
    )
    out = _one_shot(acc, features, labels)
    if scale != 1.0:  # traces scale with the square, the standard deviation linearly
        for key in ("within_trace", "between_trace"):
            out[key] = out[key] / scale / scale
        out["nc1_std"] = out["nc1_std"] / scale
    return out


#: Features whose largest magnitude is below 2**-400 are rescaled (their squares would
#: underflow float64). Values so large that sums overflow are refused, as before.
_SAFE_EXPONENT = 400


def _power_of_two_scale(features: Features) -> float:
    """``2**-e`` bringing the largest |feature| near 1 when it is below the safe range,
    else 1.0 (and 1.0 for all-zero or non-finite features, which are checked later)."""
    if isinstance(features, torch.Tensor):
        peak = float(features.detach().abs().max()) if features.numel() else 0.0
    else:
        arr = np.asarray(features)
        peak = float(np.abs(arr).max()) if arr.size and arr.dtype.kind in "fiu" else 0.0
    if not math.isfinite(peak) or peak == 0.0:
        return 1.0
    exponent = math.frexp(peak)[1]
    if exponent >= -_SAFE_EXPONENT:
        return 1.0
    return math.ldexp(1.0, -exponent)


def _scaled(value: Features, scale: float) -> Features:
    if isinstance(value, torch.Tensor):
        return value * scale
    return np.asarray(value, dtype=np.float64) * scale


def _one_shot(
    acc: CollapseAccumulator, features: Features, labels: Features | LabelPlan
) -> dict[str, float]:
    """Fill a fresh accumulator from one feature array and compute the metrics."""
    shape = features.shape if hasattr(features, "shape") else np.shape(features)
    if math.prod(shape) <= _DENSE_MAX:
        with one_blas_thread():  # small GEMMs: a second BLAS thread costs more than it gives
            acc._update_dense(features, labels)  # NC4 comes with compute()
            return acc.compute()
    if isinstance(labels, LabelPlan):
        labels = labels.y
    acc.update(features, labels)
    if acc.weight is not None:
        acc.update_nc4(features, labels)
    return acc.compute()


class CollapseProbe:
    """Recorder probe: NC metrics of the probe set's features (prefixed ``nc/``)."""

    name = "collapse"

    def __init__(self, *, nc1_divide_by_classes: bool = True, etf_normalize_means: bool = False):
        self.options = {
            "nc1_divide_by_classes": nc1_divide_by_classes,
            "etf_normalize_means": etf_normalize_means,
        }
        self._labels: LabelPlan | None = None  # the last probe set's, reused while it is equal

    def _checked_labels(self, y: Features, num_classes: int) -> LabelPlan:
        y_np = y.detach().cpu().numpy() if isinstance(y, torch.Tensor) else np.asarray(y)
        last = self._labels
        if (
            last is None
            or last.count.size != num_classes
            or last.y.shape != y_np.shape
            or not np.array_equal(last.y, y_np)
        ):
            checked = check_labels(y_np, "labels", num_classes=num_classes)
            self._labels = last = LabelPlan(checked.copy(), num_classes)
        return last

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        clf = inp.classifier
        weight = None if clf is None else clf.weight.detach()
        bias = None if clf is None or clf.bias is None else clf.bias.detach()
        if weight is not None and weight.shape != (inp.num_classes, inp.features.shape[1]):
            weight = bias = None
        acc = CollapseAccumulator(inp.num_classes, weight=weight, bias=bias, **self.options)
        metrics = _one_shot(acc, inp.features, self._checked_labels(inp.y, inp.num_classes))
        return ProbeOutput(scalars={f"nc/{k}": v for k, v in metrics.items()})


@register_probe("collapse")
def _make_collapse_probe(**options: Any) -> CollapseProbe:
    return CollapseProbe(**options)
