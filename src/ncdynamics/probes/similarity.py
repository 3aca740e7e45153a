"""Representation similarity: linear CKA, debiased CKA and the orthogonal Procrustes distance.

Each measure compares two representations of the *same* ``n`` inputs, ``x`` of shape
``(n, d1)`` and ``y`` of shape ``(n, d2)`` (rows are samples; the widths may differ), and is
invariant to an orthogonal transformation of either representation, to its isotropic
scaling and to a translation (the rows are centred first): for ``y = s * x @ Q + b`` the
two CKAs are 1 and the Procrustes distance is 0. Everything is accumulated in float64,
whatever the input dtype (float32 tensors included).

With ``Xc`` and ``Yc`` the column-centred representations:

* **Linear CKA** ([1], Sec. 3, CKA with linear kernels ``K = X X^T``, ``L = Y Y^T``)::

      CKA(X, Y) = |Yc^T Xc|_F^2 / (|Xc^T Xc|_F |Yc^T Yc|_F)          in [0, 1]

  computed in feature space (``O(n d1 d2)``), never forming the ``n x n`` Gram matrices.
  It is biased upward for few samples and wide layers: two *independent* random
  representations of ``n`` samples and width ``d >> n`` have a CKA near 1.

* **Debiased CKA** ([2], the unbiased HSIC estimator of [3], Theorem 2, in place of the
  biased ``tr(K H L H) / (n - 1)^2``)::

      HSIC_1(K, L) = [ tr(K~ L~) + (1^T K~ 1)(1^T L~ 1) / ((n-1)(n-2))
                       - 2/(n-2) 1^T K~ L~ 1 ] / (n (n-3))
      dCKA = HSIC_1(K, L) / sqrt(HSIC_1(K, K) HSIC_1(L, L))

  with ``K~``, ``L~`` the Gram matrices with their diagonals set to zero. It needs
  ``n >= 4``, costs ``O(n^2 (d1 + d2))`` and may be slightly negative for unrelated
  representations (its expectation is then 0).

* **Orthogonal Procrustes distance** ([4], the squared Euclidean distance left after the
  best rotation, for representations centred and scaled to unit Frobenius norm)::

      d^2(X, Y) = min_Q |Xn Q - Yn|_F^2 = 2 - 2 |Xn^T Yn|_*          in [0, 2]

  (``|.|_*`` the nuclear norm, ``Q`` orthogonal; for ``d1 != d2`` the narrower one is padded
  with zero columns). Its square root is a metric on representations modulo rotation,
  scale and translation.

References
----------
[1] S. Kornblith, M. Norouzi, H. Lee, G. Hinton, "Similarity of neural network
    representations revisited", ICML 2019.
[2] T. Nguyen, M. Raghu, S. Kornblith, "Do wide and deep networks learn the same things?
    Uncovering how neural network representations vary with width and depth", ICLR 2021.
[3] L. Song, A. Smola, A. Gretton, J. Bedo, K. Borgwardt, "Feature selection via dependence
    maximization", JMLR 13, 2012.
[4] F. Ding, J.-S. Denain, J. Steinhardt, "Grounding representation similarity through
    statistical testing", NeurIPS 2021.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray

from .._validation import check_int, check_option
from ._base import ProbeInput, ProbeOutput, register_probe

__all__ = [
    "MEASURES",
    "SimilarityProbe",
    "debiased_cka",
    "linear_cka",
    "procrustes_distance",
    "representation_similarity",
]

Measure = Literal["cka", "cka_debiased", "procrustes"]
#: The measures :func:`representation_similarity` and :class:`SimilarityProbe` compute.
MEASURES: tuple[Measure, ...] = ("cka", "cka_debiased", "procrustes")


def _as_float64(a: ArrayLike | torch.Tensor, name: str) -> NDArray[np.float64]:
    if isinstance(a, torch.Tensor):
        a = a.detach().cpu().to(torch.float64).numpy()
    try:
        arr = np.asarray(a)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"`{name}` must be an array or a tensor; got {type(a).__name__}.") from exc
    if arr.dtype.kind not in "biuf":
        raise TypeError(f"`{name}` must be a real numeric array; got dtype {arr.dtype}.")
    if arr.ndim != 2:
        raise ValueError(
            f"`{name}` must have shape (n_samples, n_features); got shape {arr.shape}. "
            "Flatten each sample first (e.g. x.reshape(len(x), -1))."
        )
    arr = arr.astype(np.float64, copy=False)
    if not np.isfinite(arr).all():
        n_bad = int(arr.size - np.count_nonzero(np.isfinite(arr)))
        raise ValueError(f"`{name}` must be finite; got {n_bad} NaN or Inf entries.")
    return arr


def _pair(
    x: ArrayLike | torch.Tensor, y: ArrayLike | torch.Tensor, min_samples: int
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Both representations as centred float64 arrays, after checking them."""
    xa, ya = _as_float64(x, "x"), _as_float64(y, "y")
    if xa.shape[0] != ya.shape[0]:
        raise ValueError(
            f"`x` and `y` must hold the same samples (same number of rows); got {xa.shape[0]} "
            f"and {ya.shape[0]} rows."
        )
    if xa.shape[0] < min_samples:
        raise ValueError(
            f"`x` and `y` must hold at least {min_samples} samples; got {xa.shape[0]}."
        )
    if xa.shape[1] == 0 or ya.shape[1] == 0:
        raise ValueError(
            f"`x` and `y` must have at least one feature; got shapes {xa.shape} and {ya.shape}."
        )
    xc, yc = xa - xa.mean(axis=0), ya - ya.mean(axis=0)
    for name, arr in (("x", xc), ("y", yc)):
        if not np.any(arr):
            raise ValueError(
                f"`{name}` must vary across samples; every sample has the same representation, "
                "so the similarity is undefined."
            )
    return xc, yc


def linear_cka(x: ArrayLike | torch.Tensor, y: ArrayLike | torch.Tensor) -> float:
    """Linear centred kernel alignment of two representations of the same samples.

    ``|Yc^T Xc|_F^2 / (|Xc^T Xc|_F |Yc^T Yc|_F)`` ([1], Sec. 3; see the module docstring).

    Parameters
    ----------
    x : array_like or Tensor of shape (n_samples, n_features_x)
    y : array_like or Tensor of shape (n_samples, n_features_y)

    Returns
    -------
    float
        In ``[0, 1]``; 1 when ``y`` is a rotation, isotropic scaling and translation of ``x``.

    Raises
    ------
    ValueError
        If either is not 2-D, the sample counts differ, there are fewer than 2 samples, an
        entry is NaN or Inf, or a representation is the same for every sample.
    TypeError
        If an input is not numeric.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).normal(size=(50, 4))
    >>> round(linear_cka(x, 3.0 * x + 1.0), 12)
    1.0
    """
    xc, yc = _pair(x, y, 2)
    cross = np.linalg.norm(yc.T @ xc) ** 2
    return float(cross / (np.linalg.norm(xc.T @ xc) * np.linalg.norm(yc.T @ yc)))


def _unbiased_hsic(k: NDArray[np.float64], l_: NDArray[np.float64]) -> float:
    """``HSIC_1(K, L)`` of [3], Theorem 2, for Gram matrices with zeroed diagonals."""
    n = k.shape[0]
    k_sum, l_sum = k.sum(), l_.sum()
    middle = float(k.sum(axis=0) @ l_.sum(axis=1))  # 1^T K L 1
    trace = float(np.einsum("ij,ji->", k, l_))
    value = trace + k_sum * l_sum / ((n - 1) * (n - 2)) - 2.0 * middle / (n - 2)
    return float(value / (n * (n - 3)))


def debiased_cka(x: ArrayLike | torch.Tensor, y: ArrayLike | torch.Tensor) -> float:
    """Linear CKA with the unbiased HSIC estimator ([2], [3] Theorem 2).

    Removes the upward bias of :func:`linear_cka` for few samples and wide representations;
    see the module docstring for the estimator.

    Parameters
    ----------
    x : array_like or Tensor of shape (n_samples, n_features_x)
    y : array_like or Tensor of shape (n_samples, n_features_y)
        ``n_samples >= 4``.

    Returns
    -------
    float
        1 when ``y`` is a rotation, isotropic scaling and translation of ``x``; near 0 (and
        possibly slightly negative) for unrelated representations.

    Raises
    ------
    ValueError
        As :func:`linear_cka`, with at least 4 samples; also when a representation's own
        unbiased HSIC is not positive (too few distinct samples to estimate it).
    """
    xc, yc = _pair(x, y, 4)
    k, l_ = xc @ xc.T, yc @ yc.T  # centring does not change HSIC_1; it helps precision
    np.fill_diagonal(k, 0.0)
    np.fill_diagonal(l_, 0.0)
    kk, ll = _unbiased_hsic(k, k), _unbiased_hsic(l_, l_)
    for name, value in (("x", kk), ("y", ll)):
        if not value > 0.0:
            raise ValueError(
                f"`{name}` must have a positive unbiased HSIC with itself; got {value:.3g} "
                f"({k.shape[0]} samples). Use more samples or linear_cka."
            )
    return float(_unbiased_hsic(k, l_) / np.sqrt(kk * ll))


def procrustes_distance(x: ArrayLike | torch.Tensor, y: ArrayLike | torch.Tensor) -> float:
    """Squared orthogonal Procrustes distance between centred, unit-norm representations.

    ``2 - 2 |Xn^T Yn|_*`` ([4]; see the module docstring): 0 when ``y`` is a rotation,
    isotropic scaling and translation of ``x``, at most 2.

    Parameters
    ----------
    x : array_like or Tensor of shape (n_samples, n_features_x)
    y : array_like or Tensor of shape (n_samples, n_features_y)

    Returns
    -------
    float
        In ``[0, 2]`` (clipped at 0 against rounding).

    Raises
    ------
    ValueError
        As :func:`linear_cka`.
    """
    xc, yc = _pair(x, y, 2)
    xn, yn = xc / np.linalg.norm(xc), yc / np.linalg.norm(yc)
    nuclear = float(np.linalg.svd(xn.T @ yn, compute_uv=False).sum())
    return float(max(0.0, 2.0 - 2.0 * nuclear))


_FUNCTIONS = {"cka": linear_cka, "cka_debiased": debiased_cka, "procrustes": procrustes_distance}


def representation_similarity(
    x: ArrayLike | torch.Tensor,
    y: ArrayLike | torch.Tensor,
    *,
    measures: tuple[Measure, ...] | list[Measure] = MEASURES,
) -> dict[str, float]:
    """Several similarity measures of ``x`` and ``y`` at once, keyed by measure name.

    Parameters
    ----------
    x, y : array_like or Tensor of shapes (n_samples, d1) and (n_samples, d2)
    measures : sequence of {"cka", "cka_debiased", "procrustes"}, default=all three

    Returns
    -------
    dict of str to float
    """
    chosen = _check_measures(measures)
    return {m: _FUNCTIONS[m](x, y) for m in chosen}


def _check_measures(measures: Any) -> tuple[Measure, ...]:
    if isinstance(measures, str) or not isinstance(measures, (tuple, list)):
        raise TypeError(
            f"`measures` must be a tuple or list of names among {', '.join(MEASURES)}; got "
            f"{measures!r}."
        )
    if not measures:
        raise ValueError(f"`measures` must name at least one of {', '.join(MEASURES)}; got none.")
    for m in measures:
        check_option(m, "measures", MEASURES)
    return tuple(measures)


class SimilarityProbe:
    """Recorder probe: similarity of a layer with its value at a reference step, or with
    another layer.

    The representation at ``layer`` (a module name, its output flattened to
    ``(n_probe, width)``; by default the Recorder's features, the classifier's input) is
    compared with

    * ``other`` given: the output of module ``other`` at the same record, or
    * otherwise: the same layer's representation at the first record at or after
      ``reference_step`` (by default the first record), kept in memory by the probe.
      Records before it give no scalars. The reference is not stored in the run: a probe
      created afresh when a run resumes takes a new one.

    Scalars ``<key>/cka``, ``<key>/cka_debiased`` and ``<key>/procrustes`` (those of
    ``measures``; see :mod:`ncdynamics.probes.similarity`), computed in float64.

    Parameters
    ----------
    layer : str, optional
        Module name of the representation (a key of ``model.named_modules()``).
    other : str, optional
        Module name of the representation to compare with at the same record.
    reference_step : int, optional
        The reference is the first record at or after this step (not with ``other``).
    measures : sequence of {"cka", "cka_debiased", "procrustes"}, default=all three
    key : str, default="similarity"
        Name prefix of the scalars (give two probes different keys).

    Raises
    ------
    ValueError
        If ``reference_step`` is given together with ``other``, is negative, ``key`` is
        empty, or ``measures`` names an unknown measure.
    """

    name = "similarity"

    def __init__(
        self,
        layer: str | None = None,
        *,
        other: str | None = None,
        reference_step: int | None = None,
        measures: tuple[Measure, ...] | list[Measure] = MEASURES,
        key: str = "similarity",
    ) -> None:
        for arg, value in (("layer", layer), ("other", other)):
            if value is not None and (not isinstance(value, str) or not value):
                raise TypeError(f"`{arg}` must be a module name (a non-empty str); got {value!r}.")
        if other is not None and reference_step is not None:
            raise ValueError(
                "`reference_step` compares a layer with its past; with `other` the probe "
                f"compares two layers at the same step. Give one; got other={other!r} and "
                f"reference_step={reference_step!r}."
            )
        if not isinstance(key, str) or not key:
            raise ValueError(f"`key` must be a non-empty str; got {key!r}.")
        self.layer = layer
        self.other = other
        self.reference_step = (
            None if reference_step is None else check_int(reference_step, "reference_step", low=0)
        )
        self.measures = _check_measures(measures)
        self.key = key
        self.reference: NDArray[np.float64] | None = None

    def _representation(self, inp: ProbeInput, layer: str | None) -> NDArray[np.float64]:
        if layer is None:
            return inp.features.detach().cpu().to(torch.float64).numpy()
        from .geometry import hidden_and_output

        with torch.no_grad():  # the Recorder runs probes in eval mode
            h, _ = hidden_and_output(inp.model, inp.x, layer=layer)
        return h.detach().cpu().to(torch.float64).numpy()

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        h = self._representation(inp, self.layer)
        if self.other is not None:
            ref = self._representation(inp, self.other)
        else:
            if self.reference is None:
                if self.reference_step is not None and inp.step < self.reference_step:
                    return ProbeOutput()
                self.reference = h
            ref = self.reference
        values = representation_similarity(h, ref, measures=self.measures)
        return ProbeOutput({f"{self.key}/{m}": v for m, v in values.items()})


@register_probe("similarity")
def _make_similarity(**options: Any) -> SimilarityProbe:
    return SimilarityProbe(**options)
