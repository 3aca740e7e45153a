"""Integration of the flows of [1]: gradient flow by an ODE solver, gradient descent by Euler.

Both return the shared :class:`~ncdynamics.theories.Trajectory` in the full variables: ``ys``
of shape ``(n_times, n N + C n + C)``, each row the packed state ``[vec H, vec W, b]`` of
:meth:`~ncdynamics.theories.ntk_collapse.model.State.pack`, whatever system was integrated
(decomposed states are recomposed, ``H = sqrt(m) (H1 Q1^T + H2 Q2^T)``). Unpack with
``State.unpack(traj.ys, params)`` (time-first ``H`` (n_times, n, N), ``W`` (n_times, C, n),
``b`` (n_times, C)) or ``State.unpack(traj.ys[k], params)`` for one time.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_int, check_option, check_scalar
from ..integrate import Trajectory, solve_ode
from .decomposition import compose_features, decompose_features
from .model import DRIFTS, SYSTEMS, BlockParams, DecomposedState, State, System, jacobian_decomposed

__all__ = ["simulate_flow", "simulate_gd"]

_FULL_SYSTEMS = ("full", "end-of-training")


def _to_flat(state: State, params: BlockParams, system: System) -> NDArray[np.float64]:
    if system in _FULL_SYSTEMS:
        return state.pack()
    H1, H2 = decompose_features(state.H, params.n_classes)
    return DecomposedState(H1, H2, state.W, state.b).pack()


def _to_full(ys: NDArray[np.float64], params: BlockParams, system: System) -> NDArray[np.float64]:
    """Rows of packed full states (C-contiguous) from rows of ``system``'s flat states."""
    if system in _FULL_SYSTEMS:
        return np.ascontiguousarray(ys)
    rows = []
    for y in ys:
        d = DecomposedState.unpack(y, params)
        rows.append(State(compose_features(d.H1, d.H2), d.W, d.b).pack())
    return np.array(rows)


def simulate_flow(
    state0: State,
    times: NDArray,
    params: BlockParams,
    *,
    system: System = "decomposed",
    method: str = "LSODA",
    rtol: float = 1e-10,
    atol: float = 1e-12,
) -> Trajectory:
    """Integrate one of the systems of [1] (:mod:`~ncdynamics.theories.ntk_collapse.model`).

    ``decomposed`` (default) is eq. (25), equivalent to ``full`` (19) and cheaper (its
    Jacobian is vectorised); every system is returned in the full variables.

    Parameters
    ----------
    state0 : State
    times : ndarray of shape (n_times,), increasing
    params : BlockParams
    system : {"full", "decomposed", "end-of-training", "end-of-training-decomposed"}
    method, rtol, atol
        Passed to :func:`ncdynamics.theories.integrate.solve_ode`.

    Returns
    -------
    Trajectory
        ``ys`` of shape ``(n_times, n N + C n + C)``: packed full states (module docstring).
    """
    check_option(system, "system", SYSTEMS)
    s0 = state0.validated(params)
    jac = jacobian_decomposed if system == "decomposed" and method != "DOP853" else None
    traj = solve_ode(
        DRIFTS[system],
        _to_flat(s0, params, system),
        times,
        params,
        method=method,
        rtol=rtol,
        atol=atol,
        jac=jac,
    )
    return Trajectory(
        traj.ts, _to_full(traj.ys, params, system), traj.success, traj.message, traj.n_evals
    )


def simulate_gd(
    state0: State,
    params: BlockParams,
    *,
    learning_rate: float,
    n_steps: int,
    record_every: int = 1,
    system: System = "full",
) -> Trajectory:
    """Gradient descent: explicit Euler steps ``y <- y + eta * drift(y)`` on ``system``.

    The invariant E is conserved only to O(eta) per unit time under GD ([1] uses gradient
    flow). The states after every ``record_every`` steps (and the last) are kept.

    Returns
    -------
    Trajectory
        ``ts`` is ``step * learning_rate``; ``ys`` as for :func:`simulate_flow`. A step that
        turns the state non-finite stops the run with ``success=False`` and the states
        recorded so far.
    """
    check_option(system, "system", SYSTEMS)
    eta = check_scalar(learning_rate, "learning_rate", low=0.0, closed="neither")
    steps = check_int(n_steps, "n_steps", low=0)
    every = check_int(record_every, "record_every", low=1)
    drift = DRIFTS[system]
    y = _to_flat(state0.validated(params), params, system)
    rec, ts = [y.copy()], [0.0]
    for k in range(1, steps + 1):
        y = y + eta * drift(0.0, y, params)
        if not np.all(np.isfinite(y)):
            ys = _to_full(np.array(rec), params, system)
            return Trajectory(np.array(ts), ys, False, f"diverged at step {k}", k)
        if k % every == 0 or k == steps:
            rec.append(y.copy())
            ts.append(k * eta)
    return Trajectory(np.array(ts), _to_full(np.array(rec), params, system), True, "", steps)
