"""estimate.py: the NC prediction from a record's Grams, checked against the theory's own
flows and against the ``ntk_invariant`` probe's metrics."""

import numpy as np
import pytest

from ncdynamics.probes import invariant_metrics
from ncdynamics.theories.labels import class_major_labels
from ncdynamics.theories.ntk_collapse.decomposition import within_class_gram
from ncdynamics.theories.ntk_collapse.estimate import flow_time_per_step, predict_collapse
from ncdynamics.theories.ntk_collapse.initial import init_negative_invariant, init_zero_invariant
from ncdynamics.theories.ntk_collapse.invariants import invariant
from ncdynamics.theories.ntk_collapse.model import BlockParams, State
from ncdynamics.theories.ntk_collapse.simulate import simulate_flow

P = BlockParams(n_classes=3, n_per_class=3, n_features=6, kappa_d=3.0, kappa_c=1.0, kappa_n=0.2)


def _grams(state, p):
    C, m, n = p.n_classes, p.n_per_class, p.n_features
    means = state.H.reshape(n, C, m).mean(axis=2).T  # (C, n)
    return (
        state.W.T @ state.W,
        means,
        m * within_class_gram(state.H, C),
        [p.kappa_d, p.kappa_c, p.kappa_n],
    )


def test_code_invariant_norm_equals_m_times_theory_e_o9(rng):
    s = init_negative_invariant(P, rng=rng)
    s = type(s)(s.H + 0.3, s.W, s.b)  # nonzero global mean exercises the alpha term
    G, means, S_W, kap = _grams(s, P)
    met = invariant_metrics(s.H.T, class_major_labels(3, 3), s.W, kap)
    assert met.invariant_norm == pytest.approx(3 * np.linalg.norm(invariant(s, P)), rel=1e-12)
    pred = predict_collapse(G, means, S_W, kap, 3)
    assert pred.invariant_norm == pytest.approx(met.invariant_norm, rel=1e-12)


def test_prediction_says_collapse_for_zero_invariant(rng):
    s = init_zero_invariant(P, rng=rng)
    pred = predict_collapse(*_grams(s, P), 3)
    assert pred.collapses
    assert pred.residual_fraction < 1e-10
    assert pred.slowest_rate > 0


def test_prediction_matches_the_flow_limit_for_negative_invariant(rng):
    s0 = init_negative_invariant(P, rng=rng, feature_scale=1.0)
    end = State.unpack(simulate_flow(s0, np.array([0.0, 1e3]), P).ys[1], P)
    pred = predict_collapse(*_grams(end, P), 3)
    assert not pred.collapses
    assert pred.residual_fraction == pytest.approx(1.0, rel=1e-6)  # already at the limit


def test_flow_time_per_step():
    assert flow_time_per_step(0.12, 120, 10, 0.9) == pytest.approx(0.12 / 120)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: predict_collapse(np.eye(2), np.ones((3, 2)), np.eye(2), [1, 1, 0], 3),
            "kappa_d - kappa_c",
        ),
        (
            lambda: predict_collapse(np.eye(2), np.ones((3, 4)), np.eye(2), [2, 1, 0], 3),
            "class_means",
        ),
        (lambda: flow_time_per_step(-1.0, 10, 10), "learning_rate"),
    ],
)
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
