"""App. B.3 of [1]: with E negative the loss vanishes without NC1:
``ntk_collapse.negative-invariant``.

Large features and a small classifier make E (and E~ of eq. (45)) negative definite on the
span of the features. Derived here (not in the paper): at the end of training the
within-class Gram reaches ``H2 H2^T -> max(-E~, 0) / m``.
"""

from __future__ import annotations

import numpy as np

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

__all__ = ["run_negative_invariant"]


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
            "claims": [
                {
                    "claim": "App. B.3: with E~ not PSD the loss -> 0 but H2 does not vanish (no NC1)",  # noqa: E501
                    "ours": {
                        "loss": last["E_negative"]["loss"],
                        "h2_norm": last["E_negative"]["h2_norm"],
                    },
                    "held": bool(
                        last["E_negative"]["loss"] < 1e-12 and last["E_negative"]["h2_norm"] > 1e-2
                    ),
                },
                {
                    "claim": "(derived here) H2 H2^T -> max(-E~, 0) / m at the end of training",
                    "ours": err,
                    "held": bool(err < 1e-6),
                },
            ],
        }
    )
