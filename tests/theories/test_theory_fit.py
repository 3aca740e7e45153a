"""The parts of a fit (Param, Curves, Uncertainty, Shown) and what TheoryFit derives from them."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from ncdynamics.theories import Curves, Param, Shown, TheoryFit, Uncertainty


def _curves(*series):
    fitted = {f"y{i}": (np.asarray(s, np.float64), np.ones(len(s))) for i, s in enumerate(series)}
    return Curves(fitted=fitted, predict=lambda at: {n: np.ones(np.shape(at)) for n in fitted})


def test_only_theory_params_and_curves_are_required():
    fit = TheoryFit("t", {"a": Param(1.0)}, _curves([0.0, 1.0]))
    assert fit.uncertainty == Uncertainty() and fit.shown == Shown()
    assert fit.shown.goodness == {} and fit.shown.notes == ()
    p = fit.params["a"]
    assert (p.interval, p.unit, p.bound, p.sign, p.expected, p.expected_rtol) == (
        None,
        "",
        None,
        0,
        None,
        0.0,
    )


def test_fit_until_is_the_last_step_of_any_fitted_curve():
    fit = TheoryFit("t", {}, _curves([0.0, 3.0, 7.0], [1.0, 9.0], []))
    assert fit.fit_until == 9.0
    assert math.isnan(TheoryFit("t", {}, _curves([])).fit_until)


def test_values_and_intervals_are_views_of_the_params():
    params = {
        "a": Param(1.0, interval=(0.5, 2.0), unit="1/step"),
        "X": Param(3.0),
        "b": Param(-1.0, interval=(-2.0, -0.5)),
    }
    fit = TheoryFit("t", params, _curves([0.0, 1.0]))
    assert fit.values == {"a": 1.0, "X": 3.0, "b": -1.0}
    assert list(fit.intervals) == ["a", "b"]  # in the order of params, constants left out
    assert fit.intervals["b"] == (-2.0, -0.5)


def test_n_free_is_n_fitted_else_the_parameters_with_an_interval():
    params = {"a": Param(1.0, interval=(0.5, 2.0)), "X": Param(3.0)}
    fit = TheoryFit("t", params, _curves([0.0, 1.0]))
    assert fit.n_free == 1
    assert dataclasses.replace(fit, uncertainty=Uncertainty(n_fitted=4)).n_free == 4
    assert dataclasses.replace(fit, uncertainty=Uncertainty(n_fitted=0)).n_free == 0


def test_a_sign_other_than_minus_one_zero_or_one_is_refused():
    with pytest.raises(ValueError, match=r"^sign must be -1, 0 or \+1; got 2\.$"):
        Param(1.0, sign=2)


def test_the_parts_are_frozen():
    fit = TheoryFit("t", {"a": Param(1.0)}, _curves([0.0]))
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.params["a"].value = 2.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.curves = _curves([1.0])  # type: ignore[misc]


def test_a_fit_built_the_old_way_is_refused_in_one_line():
    # a plugin written against the flat record passes floats for params: say so at once,
    # not as an AttributeError deep in the verdict
    with pytest.raises(TypeError, match=r"^params\['rate'\] must be a Param; got float 0\.1\.$"):
        TheoryFit("t", {"rate": 0.1}, _curves([0.0]))  # type: ignore[dict-item]
    with pytest.raises(TypeError, match=r"^curves must be a Curves; got dict\.$"):
        TheoryFit("t", {}, {"y": ([0.0], [1.0])})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^uncertainty must be an Uncertainty; got str\.$"):
        TheoryFit("t", {}, _curves([0.0]), uncertainty="t(n-p)")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^shown must be a Shown; got dict\.$"):
        TheoryFit("t", {}, _curves([0.0]), shown={})  # type: ignore[arg-type]
