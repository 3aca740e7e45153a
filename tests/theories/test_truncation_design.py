"""Oracles for the simplex design, random configurations and the cluster monitors."""

import numpy as np
import pytest

from ncdynamics.theories import truncation as tr
from ncdynamics.theories.geometry import simplex_etf
from ncdynamics.theories.truncation.design import (
    collapse_margin,
    monitor_clusters,
    random_config,
    separation_margin,
    simplex_vertices,
)
from ncdynamics.theories.truncation.network import AdaptedParams, truncation_path


@pytest.mark.parametrize("n_classes", [2, 3, 5])
def test_simplex_vertices_are_the_simplex_etf(n_classes):
    np.testing.assert_allclose(
        simplex_vertices(n_classes), simplex_etf(n_classes).T, rtol=0, atol=1e-15
    )


@pytest.mark.parametrize("n_classes", [2, 3, 4])
def test_simplex_design_is_separated_and_collapsible(rng, n_classes):
    design = tr.simplex_design(n_classes, n_per=5, rng=rng)
    assert design.data.n_classes == design.params.n_layers == n_classes
    assert separation_margin(design.params, design.data) > 0.3
    assert np.all(collapse_margin(design.params, design.data) < -0.02)
    assert design.params.orthogonality_error() < 1e-14
    for l in range(n_classes):  # noqa: E741
        v = simplex_vertices(n_classes)
        others = (np.delete(v, l, axis=0) - v[l]) @ design.params.R[l].T
        assert np.all(others > 0)  # every other cluster direction in the open positive orthant


def test_monitor_reports_zero_diameter_for_a_collapsed_cluster(rng):
    design = tr.simplex_design(3, n_per=4, rng=rng)
    data = design.data
    far = np.stack(
        [-data.cluster(l).mean(0) - 5 * design.params.R[l].T @ np.ones(3) for l in range(3)]
    )
    mon = monitor_clusters(AdaptedParams(design.params.R, far), data)
    np.testing.assert_array_equal(mon.diameter, np.zeros(3))
    np.testing.assert_array_equal(mon.cov_trace, np.zeros(3))


def test_random_config_keeps_away_from_kinks(rng):
    data, params = random_config(3, np.array([2, 3, 4]), rng=rng, min_kink=1e-3)
    np.testing.assert_array_equal(data.counts, [2, 3, 4])
    _, z = truncation_path(data.x, params)
    assert np.abs(z).min() > 1e-3


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: tr.simplex_design(1, rng=np.random.default_rng(0)), "`n_classes`"),
        (lambda: random_config(0, [], rng=np.random.default_rng(0)), "`n_classes`"),
        (lambda: random_config(2, [3], rng=np.random.default_rng(0)), "`counts`"),
        (lambda: random_config(2, [3, 0], rng=np.random.default_rng(0)), "`counts`"),
    ],
)
def test_bad_inputs_raise_named_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()
