"""App. B.4 of [1]: equal biases give NC2 without NC3, with the corrected theta:
``ntk_collapse.equal-bias``.

From a symmetric state with E = 0, ``H2 = 0`` and ``b = beta 1``, the flow reaches the
limits of eqs. (60), (62) and (66)/(68): ``H1^T H1 -> sqrt(mu_class / m)(I - theta 1 1^T)``
holds with the corrected ``theta = (1 - |1 - beta C| / sqrt(1 - alpha C)) / C``, not with the
printed one (:func:`~ncdynamics.theories.ntk_collapse.limits.equal_bias_coefficients`).
"""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from numpy.typing import NDArray

from ....probes.collapse import collapse_metrics
from ...claims import Part, claim
from ...experiment import RunWriter
from ...labels import class_major_labels
from ..initial import init_equal_bias
from ..limits import equal_bias_coefficients, predict_limits
from ..model import State
from ..simulate import simulate_flow
from ._theory_demos import TheoryConfig, block_params, flow_times, log_series

__all__ = ["equal_bias_claims", "run_equal_bias"]


def run_equal_bias(config: TheoryConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """App. B.4: b = beta 1 with E = 0 gives NC2 without NC3; the corrected theta holds."""
    p = block_params(config)
    rng = np.random.default_rng(seed)
    ts = flow_times(config)
    s0 = init_equal_bias(p, rng=rng, beta=config.beta)
    tr = simulate_flow(s0, ts, p)
    labels = class_major_labels(p.n_classes, p.n_per_class)
    jitter = 1e-9 * rng.standard_normal((p.n_samples, p.n_features))  # H2 = 0 exactly
    nc2, nc3 = [], []
    for y in tr.ys:
        s = State.unpack(y, p)
        nc = collapse_metrics(s.H.T + jitter, labels, s.W, s.b)
        nc2.append(nc["nc2_etf"])
        nc3.append(nc["nc3"])
    bias = State.unpack(tr.ys, p).b[:, 0]
    log_series(run, ts, {"nc2_etf": np.array(nc2), "nc3": np.array(nc3), "bias": bias}, "")
    s = State.unpack(tr.ys[-1], p)
    C, m = p.n_classes, p.n_per_class
    H1 = s.H.reshape(p.n_features, C, m).mean(axis=2)
    co = equal_bias_coefficients(p.alpha, float(s.b[0]), C)
    target = lambda th: np.sqrt(p.mu_class / m) * (np.eye(C) - th)
    err_ours = float(np.linalg.norm(H1.T @ H1 - target(co.theta)))
    err_paper = float(np.linalg.norm(H1.T @ H1 - target(co.theta_paper)))
    lim = predict_limits(p, s.b)
    err_w = float(np.linalg.norm(s.W @ s.W.T - lim.WWt))
    _plot(run, ts, np.array(nc2), np.array(nc3), bias)
    run.save_summary(
        {
            "final_bias": float(s.b[0]),
            "alpha": p.alpha,
            "gamma": co.gamma,
            "theta": co.theta,
            "theta_paper": co.theta_paper,
            "H1tH1_error_corrected_theta": err_ours,
            "H1tH1_error_paper_theta": err_paper,
            "WWt_error_eq60": err_w,
            "claims": equal_bias_claims(nc2[-1], nc3[-1], err_w, err_paper, err_ours),
        }
    )


def equal_bias_claims(
    nc2: float, nc3: float, err_wwt: float, err_printed: float, err_corrected: float
) -> list[dict[str, Any]]:
    """App. B.4 of [1] from the final NC2 and NC3 of the equal-bias flow and the errors of
    the limits: ``W W^T`` of eq. (60), ``H1^T H1`` with the printed and the corrected theta
    of eqs. (66)/(68)."""
    b4 = claim(
        "From E = 0 and H2 = 0 with all biases equal, b = beta 1 with beta != 1/C, the flow "
        "reaches NC2 (the class means form a simplex ETF) but not NC3 (the classifier does "
        "not align with the class means), and W W^T reaches the limit of eq. (60).",
        "App. B.4, eqs. (60)-(62)",
        [
            # a distance decaying to 0: its last digits are the solver's rounding
            Part("NC2 reached", "NC2 ETF distance < 1e-6", nc2, nc2 < 1e-6, noise=1e-8),
            Part("NC3 not reached", "NC3 > 0.05", nc3, nc3 > 0.05),
            Part("W W^T limit (60)", "||W W^T - (60)||_F < 1e-6", err_wwt, err_wwt < 1e-6),
        ],
    )
    printed = claim(
        "The class-mean Gram H1^T H1 tends to sqrt(mu_class / m)(I - theta 1 1^T) with theta "
        "as printed, (1 - |1 - beta C| / (2 - sqrt(1 - alpha C))) / C.",
        "App. B.4, eqs. (66)/(68) as printed",
        [
            Part(
                "printed theta gives the limit",
                "||H1^T H1 - limit||_F < 1e-6",
                err_printed,
                err_printed < 1e-6,
            )
        ],
    )
    corrected = claim(
        "(Erratum, derived here.) The same limit holds with the corrected theta = "
        "(1 - |1 - beta C| / sqrt(1 - alpha C)) / C.",
        "App. B.4, eqs. (66)/(68) corrected",
        [
            Part(
                "corrected theta gives the limit",
                "||H1^T H1 - limit||_F < 1e-6",
                err_corrected,
                err_corrected < 1e-6,
            )
        ],
    )
    return [b4, printed, corrected]


def _plot(
    run: RunWriter,
    ts: NDArray[np.float64],
    nc2: NDArray[np.float64],
    nc3: NDArray[np.float64],
    b: NDArray[np.float64],
) -> None:
    """NC2 and NC3 (left) and the common bias (right) against flow time."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    t = np.maximum(ts, ts[1] / 2)
    axes[0].loglog(t, np.maximum(nc2, 1e-16), label="NC2 (ETF distance)")
    axes[0].loglog(t, nc3, label="NC3 (duality)")
    axes[0].legend()
    axes[0].set_xlabel("flow time")
    axes[1].semilogx(t, b)
    axes[1].set_xlabel("flow time")
    axes[1].set_ylabel("bias beta")
    run.save_figure(fig, "equal_bias")
