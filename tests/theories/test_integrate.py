"""The guards of the shared ODE integrator: a solve that has gone wrong stops with one line."""

import json
import subprocess
import sys
import warnings

import numpy as np
import pytest

from ncdynamics.theories.integrate import SolveError, solve_ode


def test_a_finite_time_blow_up_stops_instead_of_stalling():
    # y' = y^2 from 1 explodes at t = 1; LSODA alone keeps stepping at t ~ 1 forever
    with pytest.raises(SolveError, match=r"steps left time at t=1\b") as info:
        solve_ode(lambda t, y, p: y**2, np.ones(1), np.linspace(0.0, 2.0, 5), None)
    assert len(str(info.value).splitlines()) == 1


def test_a_non_finite_state_stops_the_solve():
    def drift(t, y, p):
        return np.full_like(y, np.nan) if t > 0.5 else -y

    with pytest.raises(SolveError, match="state became non-finite at t=0.5"):
        solve_ode(drift, np.ones(2), np.linspace(0.0, 2.0, 5), None)


@pytest.mark.parametrize("method", ["LSODA", "DOP853", "Radau"])
def test_the_evaluation_cap_stops_the_solve(method):
    with pytest.raises(SolveError, match="`max_evals` = 10 evaluations"):
        solve_ode(
            lambda t, y, p: -y,
            np.ones(3),
            np.linspace(0, 100, 5),
            None,
            method=method,
            max_evals=10,
        )


def test_the_cap_counts_every_evaluation_and_a_good_solve_is_unchanged():
    ts = np.linspace(0.0, 3.0, 7)
    traj = solve_ode(lambda t, y, p: -p * y, np.ones(2), ts, 2.0)
    np.testing.assert_allclose(traj.ys[:, 0], np.exp(-2.0 * ts), rtol=1e-7)
    again = solve_ode(lambda t, y, p: -p * y, np.ones(2), ts, 2.0, max_evals=traj.n_evals)
    assert np.array_equal(again.ys, traj.ys)
    with pytest.raises(SolveError, match="max_evals"):
        solve_ode(lambda t, y, p: -p * y, np.ones(2), ts, 2.0, max_evals=traj.n_evals - 1)


def test_max_evals_is_checked():
    with pytest.raises(ValueError, match="`max_evals`"):
        solve_ode(lambda t, y, p: -y, np.ones(1), [0.0, 1.0], None, max_evals=0)


def test_an_experiment_whose_flow_cannot_start_fails_cleanly(tmp_path):
    # an initial state of enormous scale: LSODA's step size underflows to zero at t = 0 and,
    # unguarded, the run printed nothing for minutes
    out = tmp_path / "run"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "ncdynamics.cli",
            "run",
            "ntk_collapse.zero-invariant",
            "--set",
            "kappa_d=1e300",
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 1, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ncdyn: failed: SolveError: solve_ode"), lines
    status = json.loads((out / "status.json").read_text())
    assert status["state"] == "failed" and "steps left time at t=0" in status["error"]


@pytest.mark.parametrize("method", ["DOP853", "RK45", "LSODA"])
def test_an_explicit_or_implicit_solve_warns_nothing(method):
    # no keyword an explicit method ignores (such as jac) reaches scipy, so its callers need
    # no warning filter
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        traj = solve_ode(
            lambda t, y, p: -y,
            np.ones(2),
            np.linspace(0.0, 1.0, 4),
            None,
            method=method,
            jac=lambda t, y, p: -np.eye(2),
        )
    assert traj.success
