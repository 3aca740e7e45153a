"""Fast path: gradient descent on ``R`` UFM realisations at once, in preallocated buffers.

The same iteration as the plain reference
:func:`~ncdynamics.theories.ufm.run_gd_reference` ([1], Eq. (2), discretised)::

    W ← W + η (Y - P) H^T,     H ← H + η W^T (Y - P)

organised for speed (``tests/theories/test_hadamard_fast_batched_gd.py`` compares the two;
``benchmarks/bench_hadamard.py`` times them):

- the loop works on the transposed logits ``Z^T`` (R, K n, K), so every product is a stacked
  matmul of the stored ``W`` and ``H`` without transposed copies;
- the column sums of ``exp(Z)`` for all realisations are one (R K n, K) @ (K, 1) product;
- ``-η (Y - P)^T`` is formed in place, subtracting ``η`` only at the label entries;
- the softmax max-shift is skipped while ``|Z| <= 300`` (checked every 64 steps; a blow-up
  still ends in the finiteness check);
- nothing is allocated inside the loop.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..._validation import check_int, check_option, check_scalar
from ..integrate import Trajectory
from ..iterate import check_steps
from ..ufm import LOSSES, Loss, check_pair

__all__ = ["run_gd"]


def run_gd(
    W0: Any,
    H0: Any,
    *,
    steps: Any,
    learning_rate: float,
    n: int = 1,
    loss: Loss = "ce",
) -> Trajectory:
    """Gradient descent on (W, H) for ``R`` realisations at once ([1], Eq. (2), discretised).

    Parameters
    ----------
    W0 : array_like of shape (R, K, d) or (K, d)
    H0 : array_like of shape (R, d, K n) or (d, K n)
    steps : array_like of int, shape (n_log,)
        Non-decreasing iterations to record (0 records the initial state).
    learning_rate : float
        Step size ``η > 0``.
    n : int, default=1
        Samples per class.
    loss : {"ce", "mse"}

    Returns
    -------
    Trajectory
        ``ts`` the iterations (as floats); ``ys`` the states ``[W; H^T]``
        (:func:`~ncdynamics.theories.ufm.unpack_state`) of shape
        (R, n_log, K + K n, d), or (n_log, K + K n, d) for unbatched input; ``n_evals`` the
        gradient evaluations per realisation.

    Raises
    ------
    FloatingPointError
        When ``W`` or ``H`` end non-finite (the step size is too large).
    """
    n = check_int(n, "n", low=1)
    W, H = check_pair(W0, H0, n)
    batched = W.ndim == 3
    check_option(loss, "loss", LOSSES)
    lr = check_scalar(learning_rate, "learning_rate", low=0, closed="neither")
    steps = check_steps(steps)
    W = (W if batched else W[None]).copy()  # (R, K, d)
    H = (H if batched else H[None]).copy()  # (R, d, Kn)
    R, K, d = W.shape
    ones = np.ones((K, 1))
    ys = np.empty((R, steps.size, K + K * n, d))  # states [W; H^T]
    ZT = np.empty((R, K * n, K))  # Z^T, then -η (Y - P)^T in place
    ZT2 = ZT.reshape(R * K * n, K)
    s = np.empty((R, K * n, 1))  # column sums of exp(Z), then η / sums
    dW, dH = np.empty_like(W), np.empty_like(H)
    # the entries of Z^T where Y^T is 1, (k n + i, k) for class k and sample i, as a view:
    # subtracting there touches 1/K of the entries that subtracting the whole Y^T would
    item = ZT.itemsize
    label_entries = np.lib.stride_tricks.as_strided(
        ZT, shape=(R, K, n), strides=(ZT.strides[0], (n * K + 1) * item, K * item), writeable=True
    )
    WT, HT, GT = W.transpose(0, 2, 1), H.transpose(0, 2, 1), ZT.transpose(0, 2, 1)
    ce = loss == "ce"
    shift = True
    k = 0
    for i, target in enumerate(steps):
        for j in range(k, target):
            np.matmul(HT, WT, out=ZT)  # (R, Kn, K)
            if ce:
                if j % 64 == 0:
                    shift = bool(np.abs(ZT).max() > 300.0)
                if shift:
                    ZT -= ZT.max(axis=2, keepdims=True)
                np.exp(ZT, out=ZT)
                np.matmul(ZT2, ones, out=s.reshape(R * K * n, 1))
                np.divide(lr, s, out=s)
                np.multiply(ZT, s, out=ZT)  # η P^T
            else:
                np.multiply(ZT, lr, out=ZT)  # η (W H)^T
            label_entries -= lr  # -η (Y - P)^T: the negated descent direction
            np.matmul(GT, HT, out=dW)  # (R, K, d)
            np.matmul(WT, GT, out=dH)  # (R, d, Kn), with the old W
            W -= dW
            H -= dH
        k = max(k, int(target))
        ys[:, i, :K] = W
        ys[:, i, K:] = HT
    if not (np.all(np.isfinite(W)) and np.all(np.isfinite(H))):
        raise FloatingPointError(
            f"gradient descent diverged (non-finite W or H); lower `learning_rate` ({lr})."
        )
    return Trajectory(steps.astype(np.float64), ys if batched else ys[0], True, "", k)
