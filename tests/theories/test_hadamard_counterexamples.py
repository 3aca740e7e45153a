"""The counterexample points of Thm 4 and App. B.3, and Lemma 1's embedding into larger K."""

import numpy as np
import pytest

from ncdynamics.theories import hadamard as hd
from ncdynamics.theories.hadamard.counterexamples import COUNTEREXAMPLES, embed
from ncdynamics.theories.hadamard.metrics import (
    dfrobenius_dt,
    dlog_ratio_dt,
    dm_dt,
    dreverse_kl_dt,
    frobenius_sum,
)
from ncdynamics.theories.hadamard.model import payoffs
from ncdynamics.theories.hadamard.structure import psi_matrix


def params(K):
    return hd.ReducedParams(K)


def rand_a(rng, K, size, low=-3, high=1):
    return 10 ** rng.uniform(low, high, size=(size, K - 1))


def test_theorem4_counterexample_k8():
    val = dm_dt(COUNTEREXAMPLES["thm4_k8"], params(8))
    assert val == pytest.approx(7.3308e-4, abs=1e-6)


@pytest.mark.parametrize("K", [16, 32])
def test_theorem4_counterexample_embeds_into_larger_k(K):
    a = embed(COUNTEREXAMPLES["thm4_k8"], K, fill=1e-6)
    assert dm_dt(a, params(K)) > 0


def test_lemma1_embedding_doubles_payoffs(rng):
    for K in (4, 8, 16):
        a = rand_a(rng, K, 1)[0]
        b_small, _ = payoffs(a, params(K))
        b_big, _ = payoffs(embed(a, 2 * K), params(2 * K))
        np.testing.assert_allclose(b_big[: K - 1], 2 * b_small, rtol=1e-14)
        psi_big = psi_matrix(2 * K)
        psi = psi_matrix(K)
        np.testing.assert_array_equal(psi_big[: K - 1, : K - 1], psi)
        np.testing.assert_array_equal(psi_big[K:, K:], 2 - psi)


def test_appendix_b3_counterexamples():
    p8 = params(8)
    assert dreverse_kl_dt(COUNTEREXAMPLES["revkl_k8"], p8) == pytest.approx(3.732e-3, rel=1e-3)
    a = COUNTEREXAMPLES["frobenius_k8"]
    b, _ = payoffs(a, p8)
    assert frobenius_sum(a, b) == pytest.approx(0.0878, rel=1e-2)
    assert dfrobenius_dt(a, p8) > 0
    val = dlog_ratio_dt(COUNTEREXAMPLES["logratio_k16"], params(16))
    assert val == pytest.approx(1.825e-13, rel=1e-2)
