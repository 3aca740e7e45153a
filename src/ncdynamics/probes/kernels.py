"""Statistics of empirical kernels: traces, block norms, block values, label alignment.

Conventions follow [1] (§2.2, §3; Fig. 1), as listed in docs/ntk.md. Kernels come in the
layouts of :func:`ncdynamics.probes.empirical_ntk`: full ``(n, n, O, O)``, output-diagonal
``(O, n, n)`` or traced ``(n, n)``. ``labels`` are integer classes, one per sample; samples
need not be class-ordered (the statistics use masks), but figures read best when they are.
Everything is computed in float64 NumPy.

- Traced kernel: ``K = sum_a Theta_aa`` (or the mean over ``a`` with ``average=True``).
- Block norms: ``B[a, b] = ||Theta_ab(X)||_F``, the Frobenius norm of each (n x n) output-pair
  block.
- Block values ([1], Def. 3.1): ``diagonal`` = mean over outputs a and samples i of
  ``Theta_aa(x_i, x_i)``; ``same_class`` over pairs i != j of one class; ``different_class``
  over pairs of different classes. ``estimator="half-split"`` uses the subsample of the
  paper's code instead.
- Alignment ([1], Fig. 1e): ``A(K) = <K, Y^T Y>_F / (||K||_F ||Y^T Y||_F)`` with ``Y^T Y`` the
  same-class indicator; ``centered=True`` centres both matrices with ``H = I - 11^T/n`` first
  (Cortes et al. 2012).
- Linear-head identity: ``Theta_ks(x_i, x_j) = sum_pq W_kp W_sq Theta^h_pq(x_i, x_j)
  + delta_ks (h_i . h_j + 1)``.

References
----------
.. [1] E. Seleznova, D. Weitzner, R. Giryes, G. Kutyniok, H.-H. Chou. "Neural (Tangent Kernel)
   Collapse". NeurIPS 2023.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_array, check_labels, check_option

__all__ = [
    "BlockValues",
    "KernelBlockStats",
    "block_norms",
    "block_values",
    "kernel_alignment",
    "kernel_block_stats",
    "logit_ntk_from_features",
    "trace_kernel",
]

ESTIMATORS = ("exact", "half-split")
MODES = ("full", "diagonal", "trace")


@dataclass(frozen=True)
class BlockValues:
    """The three values of a class-block-structured kernel ([1], Def. 3.1).

    ``diagonal`` (same sample, lambda_1 / gamma_d / kappa_d), ``same_class`` (lambda_2),
    ``different_class`` (lambda_3), each averaged over outputs.
    """

    diagonal: float
    same_class: float
    different_class: float


@dataclass(frozen=True, repr=False)
class KernelBlockStats:
    """Summary of a kernel on a labelled sample set.

    Attributes
    ----------
    traced : ndarray of shape (n, n)
        Sum over outputs of the output-diagonal blocks.
    block_norms : ndarray of shape (O, O) or None
        Frobenius norms of the output-pair blocks (only from a full kernel).
    values : BlockValues
        Mean block values (per output).
    alignment : float
        Kernel-label alignment of ``traced``.
    centered_alignment : float
        The same after centring.
    block_residual : float
        ``||K - K_fit||_F / ||K||_F`` with ``K = traced / O`` and ``K_fit`` the block kernel
        of ``values``: 0 for an exactly block-structured kernel.
    n_outputs : int
    """

    traced: np.ndarray
    block_norms: np.ndarray | None
    values: BlockValues
    alignment: float
    centered_alignment: float
    block_residual: float
    n_outputs: int

    def __repr__(self) -> str:
        """One line: the scalars, and the shapes of the arrays instead of their values."""
        norms = "None" if self.block_norms is None else str(tuple(self.block_norms.shape))
        v = self.values
        return (
            f"KernelBlockStats(n={self.traced.shape[0]}, n_outputs={self.n_outputs}, "
            f"values=BlockValues(diagonal={v.diagonal:.4g}, same_class={v.same_class:.4g}, "
            f"different_class={v.different_class:.4g}), alignment={self.alignment:.4g}, "
            f"centered_alignment={self.centered_alignment:.4g}, "
            f"block_residual={self.block_residual:.4g}, traced={tuple(self.traced.shape)}, "
            f"block_norms={norms})"
        )


def _kernel(K: ArrayLike, name: str = "K") -> np.ndarray:
    arr = check_array(K, name, dtype=np.float64)
    if arr.ndim not in (2, 3, 4):
        raise ValueError(
            f"`{name}` must have shape (n, n), (O, n, n) or (n, n, O, O); got {arr.shape}."
        )
    if arr.ndim == 4 and arr.shape[2] != arr.shape[3]:
        raise ValueError(
            f"`{name}` in full layout must have shape (n1, n2, O, O); got {arr.shape}."
        )
    return arr


def _diagonal_blocks(K: np.ndarray) -> np.ndarray:
    """(O, n1, n2) output-diagonal blocks of any layout; a 2-D kernel is one block."""
    if K.ndim == 4:
        return np.moveaxis(np.diagonal(K, axis1=2, axis2=3), -1, 0)
    return K if K.ndim == 3 else K[None]


def trace_kernel(K: ArrayLike, *, average: bool = False) -> np.ndarray:
    """Traced kernel ``sum_a Theta_aa`` of shape (n1, n2) ([1], Fig. 1a,b).

    Parameters
    ----------
    K : array of shape (n1, n2, O, O), (O, n1, n2) or (n1, n2)
        A 2-D kernel is returned unchanged (as float64).
    average : bool, default=False
        Divide by O (the other convention in use).
    """
    blocks = _diagonal_blocks(_kernel(K))
    out = blocks.sum(0)
    return out / blocks.shape[0] if average else out


def block_norms(K: ArrayLike) -> np.ndarray:
    """Frobenius norms ``||Theta_ab(X)||_F`` of the output-pair blocks, shape (O, O).

    Parameters
    ----------
    K : array of shape (n1, n2, O, O)
        A full kernel (logits: the C x C heatmap of [1], Fig. 1c; features: n x n, Fig. 1d).
    """
    arr = check_array(K, "K", ndim=4, dtype=np.float64)
    return np.sqrt(np.einsum("ijab,ijab->ab", arr, arr))


def _square_labels(K: np.ndarray, labels: ArrayLike) -> np.ndarray:
    n1, n2 = K.shape[:2] if K.ndim != 3 else K.shape[1:]
    if n1 != n2:
        raise ValueError(
            f"`K` must be square in its sample axes to be compared with labels; got {n1} x {n2}."
        )
    y = check_labels(labels, "labels", n_samples=n1)
    counts = np.bincount(y)
    if np.count_nonzero(counts) < 2 or counts.max() < 2:
        raise ValueError(
            "`labels` must hold at least 2 classes and a class with at least 2 "
            f"samples; got class counts {counts.tolist()}."
        )
    return y


def _half_split(y: np.ndarray) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """First and last ``m_c // 2`` indices of every class, in sample order."""
    first, last = [], []
    for c in np.unique(y):
        idx = np.flatnonzero(y == c)
        k = len(idx) // 2
        first.append(idx[:k])
        last.append(idx[len(idx) - k :])
    return first, last


def block_values(
    K: ArrayLike, labels: ArrayLike, *, estimator: Literal["exact", "half-split"] = "exact"
) -> BlockValues:
    """Same-sample, same-class and different-class values of a kernel ([1], Def. 3.1).

    ``exact`` takes the mean over all entries of each kind and over outputs; it is
    also the least-squares fit of ``K`` by ``d I + c (Y^T Y - I) + n (11^T - Y^T Y)``.
    ``half-split`` is the estimator of the paper's code: with ``k = m_c // 2``, same-class
    pairs (i, j) take i among the first k and j among the last k samples of each class;
    different-class pairs take i among the first k of class c and j among the last k of
    class c' > c; the diagonal uses all samples.

    Parameters
    ----------
    K : array of shape (n, n, O, O), (O, n, n) or (n, n)
        A 2-D kernel counts as one output: pass a traced kernel with ``average=True`` to get
        per-output values.
    labels : array of shape (n,)
    estimator : {"exact", "half-split"}, default="exact"
    """
    check_option(estimator, "estimator", ESTIMATORS)
    kern = _kernel(K)
    y = _square_labels(kern, labels)
    mean_block = _diagonal_blocks(kern).mean(0)  # (n, n), mean over outputs
    d = float(np.mean(np.diag(mean_block)))
    if estimator == "exact":
        same = y[:, None] == y[None, :]
        off = ~np.eye(len(y), dtype=bool)
        return BlockValues(d, float(mean_block[same & off].mean()), float(mean_block[~same].mean()))
    first, last = _half_split(y)
    cc = [mean_block[np.ix_(f, l)].ravel() for f, l in zip(first, last, strict=True) if len(f)]
    nn = [
        mean_block[np.ix_(first[a], last[b])].ravel()
        for a in range(len(first))
        for b in range(a + 1, len(first))
    ]
    return BlockValues(d, float(np.concatenate(cc).mean()), float(np.concatenate(nn).mean()))


def kernel_alignment(
    K: ArrayLike,
    labels: ArrayLike,
    *,
    centered: bool = False,
    estimator: Literal["exact", "half-split"] = "exact",
) -> float:
    """Kernel-label alignment ``<K, Y^T Y>_F / (||K||_F ||Y^T Y||_F)`` ([1], Fig. 1e).

    Parameters
    ----------
    K : array of shape (n, n), or (O, n, n) / (n, n, O, O) (traced first)
    labels : array of shape (n,)
    centered : bool, default=False
        Centre ``K`` and ``Y^T Y`` with ``H = I - 11^T/n`` first.
    estimator : {"exact", "half-split"}, default="exact"
        ``half-split``: the paper code's estimate from the diagonal and half-split entries
       , equal to the exact alignment of a kernel on k = m // 2 samples per class
        when K is block-structured. Not available with ``centered``.

    Returns
    -------
    float
        In [-1, 1]; sanity values ``A(Y^T Y) = 1``, ``A(I) = 1/sqrt(m)``, ``A(11^T) = 1/sqrt(C)``
        for balanced classes of m samples.
    """
    check_option(estimator, "estimator", ESTIMATORS)
    kern = _kernel(K)
    y = _square_labels(kern, labels)
    k2 = trace_kernel(kern)
    yy = (y[:, None] == y[None, :]).astype(np.float64)  # Y^T Y, (n, n)
    if estimator == "half-split":
        if centered:
            raise ValueError("`centered`=True is not available with estimator='half-split'.")
        return _alignment_half_split(k2, y)
    if centered:
        k2 = k2 - k2.mean(0, keepdims=True) - k2.mean(1, keepdims=True) + k2.mean()
        yy = yy - yy.mean(0, keepdims=True) - yy.mean(1, keepdims=True) + yy.mean()
    denom = np.linalg.norm(k2) * np.linalg.norm(yy)
    if denom == 0.0:
        raise ValueError("`K` must not be zero (its alignment is undefined).")
    return float(np.sum(k2 * yy) / denom)


def _alignment_half_split(k2: np.ndarray, y: np.ndarray) -> float:
    first, last = _half_split(y)
    n_cls = len(first)
    k = min(len(f) for f in first)
    d = np.diag(k2)
    cc = np.concatenate([k2[np.ix_(f, l)].ravel() for f, l in zip(first, last, strict=True)])
    nn = np.concatenate(
        [k2[np.ix_(first[a], last[b])].ravel() for a in range(n_cls) for b in range(a + 1, n_cls)]
    )
    norm_k = np.sqrt(
        np.mean(d**2) * k * n_cls
        + np.mean(cc**2) * k * (k - 1) * n_cls
        + np.mean(nn**2) * k * k * n_cls * (n_cls - 1)
    )
    inner = np.mean(d) * k * n_cls + np.mean(cc) * k * (k - 1) * n_cls
    return float(inner / (norm_k * np.sqrt(k * k * n_cls)))


def block_kernel_fit(K: ArrayLike, labels: ArrayLike) -> np.ndarray:
    """The block kernel ``d I + c (Y^T Y - I) + n (11^T - Y^T Y)`` of ``K``'s exact values."""
    v = block_values(K, labels)
    y = check_labels(labels, "labels")
    same = y[:, None] == y[None, :]
    fit = np.where(same, v.same_class, v.different_class)
    np.fill_diagonal(fit, v.diagonal)
    return fit


def kernel_block_stats(
    K: ArrayLike, labels: ArrayLike, *, estimator: Literal["exact", "half-split"] = "exact"
) -> KernelBlockStats:
    """Traced kernel, block norms, block values, alignments and block residual of ``K``.

    Parameters
    ----------
    K : array of shape (n, n, O, O), (O, n, n) or (n, n)
    labels : array of shape (n,)
    estimator : {"exact", "half-split"}, default="exact"
        For the block values and the (uncentred) alignment.
    """
    kern = _kernel(K)
    y = _square_labels(kern, labels)
    n_out = 1 if kern.ndim == 2 else (kern.shape[0] if kern.ndim == 3 else kern.shape[2])
    traced = trace_kernel(kern)
    mean_k = traced / n_out
    fit = block_kernel_fit(mean_k, y)
    norm = np.linalg.norm(mean_k)
    return KernelBlockStats(
        traced=traced,
        block_norms=block_norms(kern) if kern.ndim == 4 else None,
        values=block_values(kern, y, estimator=estimator),
        alignment=kernel_alignment(traced, y, estimator=estimator),
        centered_alignment=kernel_alignment(traced, y, centered=True),
        block_residual=float(np.linalg.norm(mean_k - fit) / norm) if norm > 0 else 0.0,
        n_outputs=n_out,
    )


def logit_ntk_from_features(
    feature_kernel: ArrayLike,
    weight: ArrayLike,
    features: ArrayLike,
    features2: ArrayLike | None = None,
    *,
    bias: bool = True,
    mode: Literal["full", "diagonal", "trace"] = "full",
) -> np.ndarray:
    """Logit NTK rebuilt from the full feature kernel through a linear head.

    For ``f = W h + b`` with trainable ``W`` and ``b``::

        Theta_ks(x_i, x_j) = sum_pq W_kp W_sq Theta^h_pq(x_i, x_j) + delta_ks (h_i . h_j + 1)

    where the ``+ 1`` is present only with ``bias=True``.

    Parameters
    ----------
    feature_kernel : array of shape (n1, n2, n, n)
        Full feature kernel ``Theta^h`` (``empirical_ntk(..., output="features")``).
    weight : array of shape (C, n)
        Classifier weight ``W``.
    features : array of shape (n1, n)
        ``h(x_i)``.
    features2 : array of shape (n2, n), optional
        ``h(x2_j)``; default ``features``.
    bias : bool, default=True
        Whether the head has a trainable bias.
    mode : {"full", "diagonal", "trace"}, default="full"
        Layout of the result: (n1, n2, C, C), (C, n1, n2) or (n1, n2).
    """
    check_option(mode, "mode", MODES)
    kh = check_array(feature_kernel, "feature_kernel", ndim=4, dtype=np.float64)
    n1, n2, n, _ = kh.shape
    w = check_array(weight, "weight", ndim=2, shape=(None, n), dtype=np.float64)
    h1 = check_array(features, "features", shape=(n1, n), dtype=np.float64)
    h2 = (
        h1
        if features2 is None
        else check_array(features2, "features2", shape=(n2, n), dtype=np.float64)
    )
    lin = h1 @ h2.T + (1.0 if bias else 0.0)  # (n1, n2)
    c = w.shape[0]
    if mode == "full":
        out = np.einsum("kp,ijpq,sq->ijks", w, kh, w, optimize=True)
        out[:, :, np.arange(c), np.arange(c)] += lin[:, :, None]
        return out
    if mode == "diagonal":
        return np.einsum("kp,ijpq,kq->kij", w, kh, w, optimize=True) + lin[None]
    return np.einsum("pq,ijpq->ij", w.T @ w, kh, optimize=True) + c * lin
