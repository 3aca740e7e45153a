"""Oracles for the truncation maps and the cumulative network ([1] (2.6)-(2.17);
correction 1 of docs/theories/truncation.md)."""

import numpy as np
import pytest

from ncdynamics.theories.truncation.design import random_config
from ncdynamics.theories.truncation.network import (
    AdaptedParams,
    ClusterData,
    cumulative_to_layers,
    forward_layers,
    heaviside,
    layers_to_cumulative,
    random_orthogonal,
    sector_codes,
    sector_masks,
    truncate,
    truncate_general,
    truncation_path,
)


def _config(rng, q=3, counts=(4, 5, 3), wstar=False):
    data, params = random_config(q, counts, rng=rng)
    if wstar:
        params = AdaptedParams(params.R, params.beta, rng.uniform(0.5, 2.0, (q, q)))
    return data, params


def test_truncation_fixes_cone_and_collapses_negative_sector(rng):
    q = 4
    R = random_orthogonal(q, rng=rng)
    beta = rng.standard_normal(q)
    inside = rng.uniform(0.1, 2.0, (50, q)) @ R - beta  # R (x + beta) > 0
    below = -rng.uniform(0.0, 2.0, (50, q)) @ R - beta  # R (x + beta) <= 0
    np.testing.assert_allclose(truncate(inside, R, beta), inside, atol=1e-12)
    np.testing.assert_allclose(truncate(below, R, beta), np.tile(-beta, (50, 1)), atol=1e-12)


def test_truncation_is_idempotent_nearest_point_projection(rng):
    q = 3
    R = random_orthogonal(q, rng=rng)
    beta = rng.standard_normal(q)
    x = 2 * rng.standard_normal((200, q))
    t = truncate(x, R, beta)
    np.testing.assert_allclose(truncate(t, R, beta), t, atol=1e-12)
    cone = rng.uniform(0, 3, (200, q)) @ R - beta
    d_tau = np.linalg.norm(x - t, axis=1)
    d_any = np.linalg.norm(x[:, None, :] - cone[None, :, :], axis=2).min(axis=1)
    assert np.all(d_tau <= d_any + 1e-12)


def test_truncation_is_independent_of_wstar(rng):
    q = 3
    R = random_orthogonal(q, rng=rng)
    beta = rng.standard_normal(q)
    x = rng.standard_normal((40, q))
    W = np.diag(rng.uniform(0.2, 5.0, q)) @ R
    np.testing.assert_allclose(truncate_general(x, W, beta), truncate(x, R, beta), atol=1e-12)


def test_relu_derivative_is_zero_at_kink():
    assert heaviside(np.array([0.0]))[0] == 0.0
    pos, neg, mixed = sector_masks(np.array([[1.0, 2.0], [0.0, -1.0], [1.0, 0.0]]))
    assert pos.tolist() == [True, False, False]
    assert neg.tolist() == [False, True, False]
    assert mixed.tolist() == [False, False, True]
    assert sector_codes(np.array([[1.0, 0.0, 2.0]]))[0] == 5


def test_hidden_layers_equal_cumulative_map_of_composition(rng):
    """x^(l) = W^(l)(I^(l)(x) + beta^(l)): the bias-corrected [1] (2.17)."""
    data, params = _config(rng, q=4, counts=(5, 5, 5, 5), wstar=True)
    W_cum = params.cumulative_weights()
    W_layers, b_layers = cumulative_to_layers(W_cum, params.beta)
    hidden = forward_layers(data.x, W_layers, b_layers)
    p, _ = truncation_path(data.x, params)
    for l in range(params.n_layers):  # noqa: E741
        expected = (p[l + 1] + params.beta[l]) @ W_cum[l].T
        np.testing.assert_allclose(hidden[l + 1], expected, atol=1e-12)
    # the paper's (2.17) without the bias is wrong here
    assert np.abs(hidden[-1] - p[-1] @ W_cum[-1].T).max() > 1e-3


def test_cumulative_layer_round_trip(rng):
    q, n_layers = 4, 5
    W_layers = rng.standard_normal((n_layers, q, q)) + 2 * np.eye(q)
    b_layers = rng.standard_normal((n_layers, q))
    W_cum, beta = layers_to_cumulative(W_layers, b_layers)
    W2, b2 = cumulative_to_layers(W_cum, beta)
    np.testing.assert_allclose(W2, W_layers, atol=1e-12)
    np.testing.assert_allclose(b2, b_layers, atol=1e-12)


def test_point_weights_per_class_and_global(rng):
    data, _ = _config(rng, q=3, counts=(4, 5, 3))
    assert data.n_classes == 3
    np.testing.assert_array_equal(data.counts, [4, 5, 3])
    w = data.point_weights()
    np.testing.assert_allclose(np.bincount(data.labels, weights=w), np.ones(3), atol=1e-15)
    np.testing.assert_allclose(data.point_weights("global"), np.full(12, 1 / 12))


@pytest.mark.parametrize(
    ("call", "exc", "match"),
    [
        (lambda: AdaptedParams(np.eye(3)[None], np.zeros((2, 3))), ValueError, "`beta`"),
        (
            lambda: AdaptedParams(np.eye(3)[None], np.zeros((1, 3)), -np.ones((1, 3))),
            ValueError,
            "`wstar`",
        ),
        (
            lambda: AdaptedParams(np.full((1, 2, 2), np.nan), np.zeros((1, 2))),
            ValueError,
            "finite",
        ),
        (
            lambda: ClusterData(np.zeros((3, 2)), np.array([0, 0, 0]), np.zeros((2, 2))),
            ValueError,
            "`labels`",
        ),
        (
            lambda: ClusterData(np.zeros((3, 2)), np.array([0, 1, 1]), np.zeros((2, 3))),
            ValueError,
            "`ytilde`",
        ),
        (
            lambda: ClusterData(
                np.zeros((3, 2)), np.array([0, 1, 1]), np.zeros((2, 2))
            ).point_weights("bogus"),
            ValueError,
            "`weighting`",
        ),
    ],
)
def test_bad_inputs_raise_named_errors(call, exc, match):
    with pytest.raises(exc, match=match):
        call()
