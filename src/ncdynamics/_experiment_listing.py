# ruff: noqa: E501  (generated summaries, one per line)
"""What ``ncdyn list`` prints for the built-in experiments, without importing them.

Listing the experiments through the registry imports every theory and every experiment
module (torch, pandas, matplotlib: seconds of CPU) to print a few lines. This module holds
the built-in experiments' names, theories and summaries as data; ``ncdyn list`` reads it and
loads only theories that installed packages add. ``tests/test_cli_listing.py`` checks that
it matches the registry; regenerate it with ``python -m ncdynamics._experiment_listing``.
"""

from __future__ import annotations

import pkgutil
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

__all__ = ["BUILTIN", "BUILTIN_THEORIES", "listing"]

#: The theories of ``ncdynamics.theories`` this table was generated from.
BUILTIN_THEORIES = ("alignment", "hadamard", "lesde", "ntk_collapse", "truncation")

#: ``(name, theory, presets, summary)`` of every built-in experiment, in ``ncdyn list``'s
#: order (``presets`` the preset names joined by spaces).
BUILTIN: tuple[tuple[str, str, str, str], ...] = (
    (
        "demo",
        "core",
        "smoke cpu paper",
        "MLP on digits, MSE vs cross-entropy: NC1-NC4 at every epoch",
    ),
    (
        "alignment.adam",
        "alignment",
        "smoke cpu paper",
        "Fig. 15: the theory fitted to Adam training",
    ),
    (
        "alignment.alternatives",
        "alignment",
        "smoke cpu paper",
        "Fig. 11: eq. (7) against the alternative dynamics (51)",
    ),
    (
        "alignment.blobs",
        "alignment",
        "smoke cpu paper",
        "Figs. 7/8/13: feature collapse on orthogonal blobs",
    ),
    (
        "alignment.depth",
        "alignment",
        "smoke cpu paper gpu",
        "Fig. 10: fit quality and rates per hidden layer",
    ),
    (
        "alignment.digits",
        "alignment",
        "smoke cpu paper gpu",
        "Figs. 4/9/14: digit pair trajectory, representational structure, Taylor terms",
    ),
    (
        "alignment.final-distance",
        "alignment",
        "smoke cpu paper",
        "Fig. 5: final representational distance against eq. (10)",
    ),
    (
        "alignment.init-sweep",
        "alignment",
        "smoke cpu paper",
        "Fig. 3: plateau at small initial weights, lazy decay at large ones",
    ),
    (
        "alignment.readings",
        "alignment",
        "smoke cpu paper gpu",
        "Figs. 2/11 under the readings the paper leaves unstated (MSE, pre/post, layer, slope, lr)",
    ),
    (
        "alignment.universality",
        "alignment",
        "smoke cpu paper gpu",
        "Fig. 2/12: the fitted two-point theory across the Table 1 architectures",
    ),
    (
        "alignment.xor",
        "alignment",
        "smoke cpu paper",
        "Fig. 6: XOR representational structure vs eq. (10)",
    ),
    (
        "atlas",
        "core",
        "smoke cpu paper",
        "one cell of the regime atlas: a network trained and recorded for every theory",
    ),
    (
        "hadamard.fig1",
        "hadamard",
        "smoke cpu paper",
        "Fig. 1: reduced ODE for K=8, M rises while the KL falls",
    ),
    (
        "hadamard.fig10",
        "hadamard",
        "smoke cpu paper",
        "Fig. 10: normalised vs regular reduced flow from the Fig. 1 start",
    ),
    (
        "hadamard.fig2",
        "hadamard",
        "smoke cpu paper",
        "Fig. 2: Random vs Hadamard vs ODE, K=4, d=4, infinitesimal init (δ=6)",
    ),
    (
        "hadamard.fig3",
        "hadamard",
        "smoke cpu paper",
        "Fig. 3: normalised logit matrices, uniform-on-support vs max-min margin",
    ),
    (
        "hadamard.fig4",
        "hadamard",
        "smoke cpu paper",
        "Fig. 4: Random vs Hadamard vs ODE, K=8, d=8, infinitesimal init (δ=6)",
    ),
    (
        "hadamard.fig5",
        "hadamard",
        "smoke cpu paper",
        "Fig. 5: Random vs Hadamard vs ODE, K=16, d=16, infinitesimal init (δ=6)",
    ),
    (
        "hadamard.fig6",
        "hadamard",
        "smoke cpu paper",
        "Fig. 6: Random vs Hadamard vs ODE, K=4, d=4, standard init (δ=0)",
    ),
    (
        "hadamard.fig7",
        "hadamard",
        "smoke cpu paper",
        "Fig. 7: Random vs Hadamard vs ODE, K=8, d=8, standard init (δ=0)",
    ),
    (
        "hadamard.fig8",
        "hadamard",
        "smoke cpu paper",
        "Fig. 8: Random vs Hadamard vs ODE, K=4, d=20, infinitesimal init (δ=6)",
    ),
    (
        "hadamard.fig9",
        "hadamard",
        "smoke cpu paper",
        "Fig. 9: Random vs Hadamard vs ODE, K=8, d=80, infinitesimal init (δ=6)",
    ),
    (
        "hadamard.thm8",
        "hadamard",
        "smoke cpu paper",
        "Thm 8: small Gaussian init drives Z(t*) toward the simplex ETF",
    ),
    (
        "lesde.fig1",
        "lesde",
        "smoke cpu paper",
        "Fig. 1: logits of R GEOMNIST LeNets separate (1-D on nu, 3-D class means)",
    ),
    (
        "lesde.fig1_cifar",
        "lesde",
        "smoke cpu paper",
        "Fig. 1(c)-(d): logits of R CIFAR-10 LeNets (3 classes) separate",
    ),
    (
        "lesde.fig3",
        "lesde",
        "smoke cpu paper gpu",
        "Fig. 3: A, B, alpha, beta by the l/L/projection estimators and direct probes",
    ),
    (
        "lesde.fig3_cifar",
        "lesde",
        "smoke cpu paper",
        "Fig. 3 (CIFAR-10, 3 classes): A, B, alpha, beta estimated, E measured directly",
    ),
    (
        "lesde.fig4",
        "lesde",
        "smoke cpu paper gpu",
        "Fig. 4: phase transition in label noise p_err (val curves, tail indices)",
    ),
    (
        "lesde.fig5",
        "lesde",
        "smoke cpu paper gpu",
        "Fig. 5: LE-ODE driven by estimated rates imitates real logits (RD)",
    ),
    (
        "lesde.fig5_cifar",
        "lesde",
        "smoke cpu paper",
        "Fig. 5(c)-(d): LE-ODE imitates the logits of CIFAR-10 LeNets (3 classes)",
    ),
    (
        "lesde.thm21",
        "lesde",
        "smoke cpu paper",
        "Theorem 2.1: binary separation iff alpha > beta (Monte Carlo)",
    ),
    (
        "lesde.thm31",
        "lesde",
        "smoke cpu paper",
        "Theorem 3.1: separation iff gamma(t) decays slower than 1/t (Monte Carlo)",
    ),
    (
        "ntk_collapse.equal-bias",
        "ntk_collapse",
        "smoke cpu paper",
        "App. B.4: equal biases give NC2 without NC3; corrected theta",
    ),
    (
        "ntk_collapse.fig1",
        "ntk_collapse",
        "smoke cpu paper gpu",
        "Fig. 1: traced kernels, block norms, kernel-label alignment vs epoch",
    ),
    (
        "ntk_collapse.fig12",
        "ntk_collapse",
        "smoke cpu paper gpu",
        "Fig. 12: Fig. 2 with cross-entropy loss",
    ),
    (
        "ntk_collapse.fig2",
        "ntk_collapse",
        "smoke cpu paper gpu",
        "Fig. 2: invariant norm/alignment and NC of NC vs non-NC models; LR sweep over three inits (MSE)",
    ),
    (
        "ntk_collapse.invariant",
        "ntk_collapse",
        "smoke cpu paper",
        "Theorem 5.1: E (26) conserved by the flow (19), O(eta) drift under GD",
    ),
    (
        "ntk_collapse.negative-invariant",
        "ntk_collapse",
        "smoke cpu paper",
        "App. B.3: E negative gives zero loss without NC1",
    ),
    (
        "ntk_collapse.phases",
        "ntk_collapse",
        "smoke cpu paper",
        "Residual phases (13)-(15): global, class, single at rates 1 - eta lambda",
    ),
    (
        "ntk_collapse.zero-invariant",
        "ntk_collapse",
        "smoke cpu paper",
        "Theorem 5.2: E = 0 and <h> = 0 give NC (NC1 like 1/(2mt))",
    ),
    (
        "truncation.e1",
        "truncation",
        "smoke cpu paper",
        "Gradient formulas (Thm 3.2/5.1, corrected Omega) vs finite differences",
    ),
    (
        "truncation.e2",
        "truncation",
        "smoke cpu paper",
        "Fixed-R truncation staircase: event times (4.49) and GD",
    ),
    (
        "truncation.e3",
        "truncation",
        "smoke cpu paper",
        "Coupled effective flow vs GD on the layered ReLU network; collapse",
    ),
    (
        "truncation.e4",
        "truncation",
        "smoke cpu paper",
        "Prop 4.2: finite-time full truncation and its bounds",
    ),
    (
        "truncation.e5",
        "truncation",
        "smoke cpu paper",
        "Paper Omega (3.22) vs corrected Omega on a marginal design",
    ),
    (
        "truncation.e6",
        "truncation",
        "smoke cpu paper",
        "Sec 8: conserved quantity and exponential cost bound (collapsed data)",
    ),
    (
        "truncation.e7",
        "truncation",
        "smoke cpu paper",
        "Sec 9: closed-form output-layer flow (untruncated data)",
    ),
    (
        "truncation.e8",
        "truncation",
        "smoke cpu paper",
        "Exploratory: plain GD on layer weights from an adapted start",
    ),
)


def _row(spec: Any) -> tuple[str, str, str, str]:
    return (spec.name, spec.theory, " ".join(spec.preset_names), spec.summary)


def listing() -> list[tuple[str, str, str, str]]:
    """Every experiment as ``(name, theory, presets, summary)``, the demo first, then by
    name.

    Reads :data:`BUILTIN` when the built-in theories are those it was generated from, and
    loads through the registry only the theories installed packages add; falls back to the
    registry for everything when the table is stale (a theory added to the source tree).
    """
    here = Path(__file__).parent / "theories"
    builtin = tuple(sorted(i.name for i in pkgutil.iter_modules([str(here)]) if i.ispkg))
    plugins = [ep for ep in entry_points(group="ncdynamics.theories")]
    if builtin != BUILTIN_THEORIES or not BUILTIN:
        from .experiments import list_experiments

        return [_row(s) for s in list_experiments()]
    rows = list(BUILTIN)
    if plugins:
        from . import theories

        for name in theories.available():
            if name not in BUILTIN_THEORIES:
                rows += [_row(s) for s in theories.get(name).load_experiments()]
    return sorted(rows, key=lambda r: (r[0] != "demo", r[0]))


def _generate() -> str:
    """This module's source with :data:`BUILTIN` taken from the registry."""
    from .experiments import list_experiments

    rows = [_row(s) for s in list_experiments() if s.theory in ("core", *BUILTIN_THEORIES)]
    body = "".join(f"    {row!r},\n" for row in rows)
    source = Path(__file__).read_text()
    head, _, rest = source.partition("BUILTIN: tuple[tuple[str, str, str, str], ...] = ")
    _, _, tail = rest.partition("\n\n\n")
    return f"{head}BUILTIN: tuple[tuple[str, str, str, str], ...] = (\n{body})\n\n\n{tail}"


if __name__ == "__main__":
    Path(__file__).write_text(_generate())
