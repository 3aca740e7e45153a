"""The two-point theory of [1], confronted with a pair of probe points recorded in a run.

The ``pair_alignment`` probe records, for two fixed points of the probe set, the squared
representational distance ``a = |dh|^2`` at one hidden layer, the squared output distance
``b = |dy|^2``, the alignment variable ``w = b - dy . dt``, and the constants ``X`` (squared
input distance) and ``Y`` (squared target distance). The rates ``1/tau_h``, ``1/tau_y`` of the
system (7) are fitted to ``(a, b, w)`` with the objective (49) (:func:`fit_rates`, multi-start),
starting from the first record; the theory then predicts the whole trajectory and the final
distance ``|dh(inf)|^2`` of eq. (10). Time is the recorded step (epochs for the Recorder).

Observables: ``pair_distance`` (``a``) and ``pair_output_distance`` (``b``). The theory assumes
a squared-error loss; with cross-entropy its fit is expected to be poor.
"""

from __future__ import annotations

import warnings

import numpy as np
from numpy.typing import NDArray

from ..confrontation import Confrontation, Need, Series, Stream, TheoryFit, r_squared
from ..integrate import ConvergenceWarning
from .closed_form import final_distance
from .estimate import fit_rates, simulate

__all__ = ["CONFRONTATION"]

_VARIABLES = ("pair_a", "pair_b", "pair_w")
_NEEDS = tuple(Need("scalar", v, "pair_alignment") for v in (*_VARIABLES, "pair_X", "pair_Y"))
_OBSERVABLES = {"pair_distance": 0, "pair_output_distance": 1}


def _observe(stream: Stream) -> dict[str, Series]:
    return {
        "pair_distance": stream.scalar("pair_a"),
        "pair_output_distance": stream.scalar("pair_b"),
    }


def _state(stream: Stream) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    series = [stream.scalar(v) for v in _VARIABLES]
    steps = series[0][0]
    if any(s[0].shape != steps.shape or np.any(s[0] != steps) for s in series):
        raise ValueError("`pair_a`, `pair_b` and `pair_w` must be recorded at the same steps.")
    return steps, np.stack([s[1] for s in series], axis=1)


def _fit(stream: Stream) -> TheoryFit:
    steps, state = _state(stream)
    if steps.size < 3:
        raise ValueError(f"the fit needs at least 3 records; the stream has {steps.size}.")
    X, Y = float(stream.scalar("pair_X")[1][0]), float(stream.scalar("pair_Y")[1][0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        fit = fit_rates(steps, state, X=X, Y=Y)
    params = fit.params
    theory = fit.extra["trajectory"]
    y0, t0 = state[0], steps[0]

    def predict(at: NDArray[np.float64]) -> dict[str, NDArray[np.float64]]:
        at = np.asarray(at, dtype=np.float64)
        ts = np.concatenate([[t0], at[at > t0]])
        ys = simulate(y0, ts, params).ys[1:]
        out = np.full((at.size, 3), np.nan)
        out[at > t0] = ys
        return {name: out[:, k] for name, k in _OBSERVABLES.items()}

    r2 = {f"r2_{v[5:]}": r_squared(state[:, k], theory[:, k]) for k, v in enumerate(_VARIABLES)}
    return TheoryFit(
        theory="alignment",
        params={"inv_tau_h": params.inv_tau_h, "inv_tau_y": params.inv_tau_y, "X": X, "Y": Y},
        goodness={**r2, "objective_49": float(fit.loss)},
        predictions={
            "final_pair_distance": float(final_distance(y0[0], y0[1], X, Y, params.rho)),
            "rho": float(params.rho),
        },
        fitted={name: (steps, theory[:, k]) for name, k in _OBSERVABLES.items()},
        predict=predict,
        fit_until=float(steps[-1]),
        notes=() if fit.success else (f"rate fit: {fit.message}",),
    )


CONFRONTATION = Confrontation(
    theory="alignment",
    summary="two-point system (7): rates 1/tau_h, 1/tau_y fitted to (a, b, w) of a probe pair",
    needs=_NEEDS,
    observe=_observe,
    fit=_fit,
)
