"""The batched screen of the generic curves' grid search picks what solving every point does.

``alternatives._best_on_grid`` screens all grid points in one batched pseudo-inverse (on bases
made for all points at once) and then solves only the points it cannot tell from the best;
the oracle here is the plain loop it replaced (every point solved with ``_linear``, first
strict minimum wins), on noisy, exact, flat, zero and overflowing records, for each
grid-searched curve of the panel.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ncdynamics.theories import alternatives
from ncdynamics.theories.alternatives import fit_alternatives


def _every_point(t, y, grid, basis_of):
    best, best_sse = grid[0], math.inf
    for theta in grid:
        b = basis_of(t, theta)
        if not np.all(np.isfinite(b)):
            continue
        _, sse = alternatives._linear(b, y)
        if sse < best_sse:
            best, best_sse = theta, sse
    return best, best_sse


def _records(kind, rng):
    t = np.sort(rng.choice(np.arange(1, 400), size=14, replace=False)).astype(float)
    if kind == "noise":
        y = rng.standard_normal(t.size)
    elif kind == "exponential":
        y = 2.0 - 1.5 * np.exp(-t / 90.0) + 1e-3 * rng.standard_normal(t.size)
    elif kind == "exact":
        y = 2.0 - 1.5 * np.exp(-(t - t[0]) * 3.0 / (t[-1] - t[0]))
    elif kind == "flat":
        y = np.full(t.size, 0.7)
    elif kind == "zeros":
        y = np.zeros(t.size)
    elif kind == "logistic":
        y = 1.0 / (1.0 + np.exp(-(t - 200.0) / 20.0)) + 1e-4 * rng.standard_normal(t.size)
    else:  # "huge": values near the top of float64's range of squares
        y = 1e150 * (1.0 + rng.standard_normal(t.size))
    return t, y


KINDS = ("noise", "exponential", "exact", "flat", "zeros", "logistic", "huge")


@pytest.mark.parametrize("kind", KINDS)
def test_screened_grid_search_picks_the_point_every_solve_picks(kind, monkeypatch):
    rng = np.random.default_rng(KINDS.index(kind))
    seen = []

    def both(t, y, grid, basis_of, stack_of=None):
        assert stack_of is not None  # every grid-searched curve screens all its points at once
        want = _every_point(t, y, grid, basis_of)
        got = screened(t, y, grid, basis_of, stack_of)
        # the screen on bases made one point at a time decides alike
        assert np.array_equal(screened(t, y, grid, basis_of)[0], want[0])
        seen.append((want, got))
        return got

    screened = alternatives._best_on_grid
    monkeypatch.setattr(alternatives, "_best_on_grid", both)
    for _ in range(4):
        t, y = _records(kind, rng)
        fit_alternatives(t, y, on_log=False)
    assert len(seen) == 4 * 3  # exponential, logistic, two exponentials
    for (w_theta, w_sse), (g_theta, g_sse) in seen:
        assert np.array_equal(w_theta, g_theta)
        assert g_sse == w_sse or (math.isinf(w_sse) and math.isinf(g_sse))


def test_a_grid_with_no_finite_basis_gives_the_first_point_and_inf():
    t = np.arange(5.0)
    grid = [np.array([1.0]), np.array([2.0])]
    theta, sse = alternatives._best_on_grid(t, t, grid, lambda at, th: np.full((5, 2), np.inf))
    assert theta is grid[0] and sse == math.inf
