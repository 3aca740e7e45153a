"""App. B.3 of [1]: with E negative the loss vanishes without NC1:
``ntk_collapse.negative-invariant``.

Large features and a small classifier make E (and E~ of eq. (45)) negative definite on the
span of the features. Derived here (not in the paper): at the end of training the
within-class Gram reaches ``H2 H2^T -> max(-E~, 0) / m``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...claims import Part, claim
from ...experiment import RunWriter
from ..decomposition import within_class_gram
from ..initial import init_negative_invariant, init_zero_invariant
from ..invariants import invariant, invariant_tilde
from ..model import State
from ..simulate import simulate_flow
from ._theory_demos import (
    TheoryConfig,
    block_params,
    collapse_series,
    flow_times,
    log_series,
    plot_collapse_panels,
)

__all__ = ["negative_invariant_claims", "run_negative_invariant"]


def run_negative_invariant(
    config: TheoryConfig, run: RunWriter, *, seed: int, progress: bool
) -> None:
    """Zero loss without NC1 when E (and E~) has negative eigenvalues ([1], App. B.3)."""
    p = block_params(config)
    rng = np.random.default_rng(seed)
    ts = flow_times(config)
    s_neg = init_negative_invariant(p, rng=rng, feature_scale=1.0)
    tr_neg = simulate_flow(s_neg, ts, p)
    series = {
        "E_negative": collapse_series(tr_neg, p),
        "E0": collapse_series(simulate_flow(init_zero_invariant(p, rng=rng), ts, p), p),
    }
    for name, ser in series.items():
        log_series(run, ts, ser, f"{name}/")
    plot_collapse_panels(run, ts, series, "negative_invariant", m=p.n_per_class)
    end = State.unpack(tr_neg.ys[-1], p)
    w, V = np.linalg.eigh(invariant_tilde(end, p))
    S_pred = (V * np.clip(-w, 0.0, None)) @ V.T / p.n_per_class
    S = within_class_gram(end.H, p.n_classes)
    err = float(np.linalg.norm(S - S_pred) / max(float(np.linalg.norm(S_pred)), 1e-300))
    last = {k: {n: float(v[-1]) for n, v in ser.items()} for k, ser in series.items()}
    run.save_summary(
        {
            "final": last,
            "min_eig_E_initial": float(np.linalg.eigvalsh(invariant(s_neg, p)).min()),
            "within_gram_vs_prediction_rel_err": err,
            "claims": negative_invariant_claims(
                float(np.linalg.eigvalsh(invariant_tilde(s_neg, p)).min()),
                last["E_negative"],
                last["E0"],
                err,
            ),
        }
    )


def negative_invariant_claims(
    min_eig_tilde: float, negative: dict[str, float], zero: dict[str, float], rel_err: float
) -> list[dict[str, Any]]:
    """App. B.3 of [1] and our end-of-training limit, from the smallest eigenvalue of E~ (45)
    at the start, the final metrics of the E-negative and the E = 0 flows and the relative
    error of ``S -> max(-E~, 0)/m``."""
    b3 = claim(
        "When E~ of eq. (45) is not positive semidefinite, the flow still drives the loss to "
        "zero, but the within-class variability H2 does not vanish, so NC1 fails; from E = 0 "
        "the same flow does remove it.",
        "App. B.3, eq. (45)",
        [
            Part(
                "premise: E~ has a negative eigenvalue",
                "min eigenvalue of E~ at t = 0 < 0",
                min_eig_tilde,
                min_eig_tilde < 0,
            ),
            Part(
                "loss -> 0", "loss (4) at t_end < 1e-12", negative["loss"], negative["loss"] < 1e-12
            ),
            Part(
                "H2 does not vanish (no NC1)",
                "||H2 H2^T||_F at t_end > 1e-2",
                negative["h2_norm"],
                negative["h2_norm"] > 1e-2,
            ),
            Part(
                "contrast: from E = 0, H2 vanishes",
                "||H2 H2^T||_F of the E = 0 flow at t_end < 1e-2",
                zero["h2_norm"],
                zero["h2_norm"] < 1e-2,
            ),
        ],
    )
    limit = claim(
        "(Derived here, not in the paper.) At the end of training the within-class Gram "
        "reaches H2 H2^T = max(-E~, 0) / m.",
        "App. B.3, eqs. (44)-(49) corrected",
        [
            Part(
                "H2 H2^T -> max(-E~, 0) / m",
                "relative Frobenius error < 1e-6",
                rel_err,
                rel_err < 1e-6,
            )
        ],
    )
    return [b3, limit]
