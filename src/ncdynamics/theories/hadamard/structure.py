"""Sylvester--Hadamard matrices, the Hadamard basis, Ψ, and the softmax eigenvalues.

Everything here needs the number of classes ``K`` to be a power of two (``K = 2**m``,
``m >= 1``): the group structure of the Sylvester rows (``φ_i ⊙ φ_j = φ_{i XOR j}``) is what
makes the column softmax diagonal in the Hadamard basis ([1], Thm 1). Other Hadamard
matrices (e.g. Paley's of order 12) and random orthogonal bases do not have it; see the
negative controls in ``tests/theories/test_hadamard_structure.py``.

Indexing is 0-based: Hadamard mode ``i`` is column ``i`` of ``Φ``; mode 0 is the constant
("trivial") mode, and the reduced dynamics use modes ``1..K-1`` in natural Sylvester order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int

__all__ = [
    "check_power_of_two",
    "hadamard_basis",
    "is_power_of_two",
    "psi_matrix",
    "softmax_eigenvalues",
    "sylvester",
    "xor_permutation",
]


def is_power_of_two(n_classes: object) -> bool:
    """Whether ``n_classes`` (``K`` in [1]) is ``2**m`` with ``m >= 1``."""
    K = n_classes
    return bool(isinstance(K, (int, np.integer)) and K >= 2 and (int(K) & (int(K) - 1)) == 0)


def check_power_of_two(value: Any, name: str = "n_classes") -> int:
    """Return ``value`` as an int, or raise ``ValueError`` saying why it must be ``2**m``.

    ``name`` is the argument named in the message (``n_classes``, or ``K`` for a config).
    """
    K = check_int(value, name, low=2)
    if not is_power_of_two(K):
        raise ValueError(
            f"`{name}` must be a power of 2 (2, 4, 8, 16, ...) because the Sylvester--Hadamard "
            f"construction of [1] only exists for K = 2**m; got {K}. Random-init GD and the "
            "matrix-level NC metrics accept any K."
        )
    return K


def sylvester(n_classes: int) -> NDArray[np.float64]:
    """The ``K × K`` Sylvester--Hadamard matrix Φ ([1], Definition 2).

    Built by the recursion ``Φ_1 = [1]``, ``Φ_{2m} = [[Φ_m, Φ_m], [Φ_m, -Φ_m]]``; equivalently
    ``Φ_ij = (-1)**popcount(i & j)`` with 0-based indices. Φ is symmetric, ``ΦΦ^T = K I``, and
    its first row and column are all ones.

    Parameters
    ----------
    n_classes : int
        ``K`` in [1], a power of two, ``K >= 2``.

    Returns
    -------
    ndarray of shape (K, K), entries ±1.

    Raises
    ------
    ValueError
        If ``K`` is not a power of two.
    """
    K = check_power_of_two(n_classes)
    phi = np.ones((1, 1))
    while phi.shape[0] < K:
        phi = np.block([[phi, phi], [phi, -phi]])
    return phi


def hadamard_basis(n_classes: int) -> NDArray[np.float64]:
    """The orthonormal Hadamard basis ``U = Φ / √K`` ([1], Thm 1); columns are the modes.

    ``n_classes`` is ``K`` in [1]; the result has shape (K, K).
    """
    return sylvester(n_classes) / np.sqrt(n_classes)


def xor_permutation(i: int, n_classes: int) -> NDArray[np.float64]:
    """The permutation ``Π_i`` with rows ``e_{i XOR j}^T`` ([1], Eq. (14)).

    ``Φ diag(φ_i) = Π_i Φ`` for every row ``φ_i`` of the Sylvester matrix; ``n_classes`` is
    ``K`` in [1].
    """
    K = check_power_of_two(n_classes)
    i = check_int(i, "i", low=0, high=K - 1)
    perm = np.zeros((K, K))
    perm[np.arange(K), np.arange(K) ^ i] = 1.0
    return perm


def psi_matrix(n_classes: int) -> NDArray[np.float64]:
    """The reduced dynamics matrix ``Ψ = 1 1^T - Φ[1:, 1:]`` of shape (K-1, K-1) ([1], §3.2).

    Ψ is symmetric with entries in {0, 2}, ``Ψ 1 = K 1``, ``Ψ² = K (I + 1 1^T)`` and
    ``Ψ^{-1} = -Φ[1:, 1:] / K``, with ``K = n_classes``.
    """
    core = sylvester(n_classes)[1:, 1:]
    return 1.0 - core


def softmax_eigenvalues(a: Any) -> NDArray[np.float64]:
    """Eigenvalues ν of ``P(U diag(a) U^T)`` in the Hadamard basis ([1], Thm 1, corrected).

    Implements::

        ν = Φ · softmax(Φ a / K)

    so that ``P(U diag(a) U^T) = U diag(ν) U^T``. Eq. (6) of [1] prints
    ``U diag(U P(U a)) U^T``, which differs by the factors √K inside and outside the softmax
    (erratum 1 in ``docs/theories/hadamard.md``); the form above is the one that holds.

    Parameters
    ----------
    a : array_like of shape (..., K)
        All ``K`` mode values, the constant mode first.

    Returns
    -------
    ndarray of shape (..., K)
    """
    a = check_array(a, "a", dtype=np.float64, min_size=1)
    K = check_power_of_two(a.shape[-1], "a.shape[-1]")
    phi = sylvester(K)
    s = a @ phi / K  # (..., K), Φ symmetric
    s = s - s.max(axis=-1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=-1, keepdims=True)
    return p @ phi
