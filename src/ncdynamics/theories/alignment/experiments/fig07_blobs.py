"""Figs. 7, 8 and 13 of [1] (Fig. 17 with ``optimizer="adam"``): feature collapse on
orthogonal blobs.

The Table 2 blob networks (tanh, 4 x 100, full batch) learn a context-dependent task: in each
context one input direction is relevant and the other is not. At low initial weights the
irrelevant direction should collapse in the hidden layer (Fig. 8), at very low weights the two
contexts should merge into one line (Fig. 13), and at high weights both directions are kept.
The hidden representations are shown by classical MDS.

``setting="authors-code"`` (the default) follows the authors' notebook
(loekvanrossem/universality ``experiments/orthogonal.ipynb``): blobs of sigma two pixel
spacings normalised to sum 1 (cell 1, ``data.load_orthogonal_blobs``), minibatches of 64 and
``0.5 * mse_loss`` (cells 5-6), hidden layer index 2 of ``orthogonal.txt``, i.e. layer 3 of 4,
and leaky-ReLU nets: cell 4 builds the ``MLP`` without passing the file's ``tanh``, so the
class default ``leaky_relu`` is used. ``setting="paper-text"`` keeps Table 2's tanh, full
batch, ``MSELoss``, sigma 1 pixel at peak 1, and the middle layer (2).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

from ....data import load
from ....models.table1 import middle_layer
from ....probes.geometry import squared_distances
from ....training import run_trials
from ...claims import Part, claim
from ...experiment import RunWriter
from ..training import PairHistory
from .pair_records import record_pair
from .plotting import pyplot
from .trials import Optimizer, dataset_trial, net_config
from .two_point import two_point_setting

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = [
    "COLLAPSED",
    "BlobsConfig",
    "blobs_claims",
    "classical_mds",
    "collapse_index",
    "plot_embeddings",
    "run_blobs",
]

#: A context's task-irrelevant direction has collapsed when its collapse index is below this
#:, and is kept when it is above.
COLLAPSED = 0.2


def classical_mds(d2: NDArray[np.float64], k: int = 2) -> NDArray[np.float64]:
    """Classical MDS of a squared-distance matrix: top-``k`` eigenvectors of ``-J D J / 2``.

    Parameters
    ----------
    d2 : ndarray of shape (n, n)
    k : int
        Output dimension.

    Returns
    -------
    ndarray of shape (n, k)
    """
    n = d2.shape[0]
    J = np.eye(n) - 1.0 / n
    B = -0.5 * J @ d2 @ J
    vals, vecs = np.linalg.eigh(B)
    top = np.argsort(vals)[::-1][:k]
    return vecs[:, top] * np.sqrt(np.maximum(vals[top], 0.0))


def _r2_single(h: NDArray[np.float64], f: NDArray[np.float64]) -> float:
    """Share of the total variance of ``h`` (n, d) explained by a linear fit on ``f`` (n,)."""
    hc, fc = h - h.mean(0), f - f.mean()
    beta = fc @ hc / (fc @ fc)  # (d,)
    return float(np.sum((fc[:, None] * beta[None]) ** 2) / max(np.sum(hc**2), 1e-300))


def collapse_index(
    h: NDArray[np.float64], relevant: NDArray[np.float64], irrelevant: NDArray[np.float64]
) -> float:
    """``R^2_irrelevant / (R^2_relevant + R^2_irrelevant)`` within one context ([1] Figs. 7, 8).

    Parameters
    ----------
    h : ndarray of shape (n, d)
        Hidden representations of the points of one context.
    relevant, irrelevant : ndarray of shape (n,)
        The task-relevant and the task-irrelevant input feature.
    """
    r_rel, r_irr = _r2_single(h, relevant), _r2_single(h, irrelevant)
    return r_irr / max(r_rel + r_irr, 1e-300)


@dataclass(frozen=True)
class BlobsConfig:
    """Table 2 blob nets (4 x 100), MDS of a hidden layer; ``setting`` as the module says."""

    configs: tuple[str, ...] = ("blobs-very-low", "blobs-low", "blobs-high")
    n_positions: int = 30
    optimizer: Optimizer = "sgd"
    adam_lr: float = 1e-3
    n_mds: int = 600
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2
    #: ``"authors-code"`` or ``"paper-text"`` (module docstring).
    setting: str = "authors-code"


def run_blobs(config: BlobsConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Train the blob nets; collapse indices and figure ``fig8_fig13_blobs_mds``."""
    authors = two_point_setting(config.setting).layer == "authors"
    ds = load(
        "orthogonal-blobs",
        n_positions=config.n_positions,
        sigma=2.0 if authors else 1.0,
        normalize=authors,
    )
    x, t, info = ds.x_train, ds.info["targets_train"], ds.info
    cfgs = [
        net_config(c, width=config.width, depth=config.depth, epochs=config.epochs)
        for c in config.configs
    ]
    if authors:
        cfgs = [replace(c, activation="leaky-relu") for c in cfgs]
    lr = config.adam_lr if config.optimizer == "adam" else None
    layer = None if authors else middle_layer(cfgs[0].depth)
    batch, loss = (64, "half-mse") if authors else (None, "mse")
    hs: list[PairHistory] = run_trials(
        dataset_trial,
        [(c, seed, x, t, (0, 1), config.optimizer, lr, batch, loss, layer) for c in cfgs],
        workers=config.workers,
        progress=progress,
        desc="blob nets",
    )
    ctx = info["context"]
    rng = np.random.default_rng(seed)
    sub = np.sort(rng.choice(len(x), size=min(config.n_mds, len(x)), replace=False))
    per: dict[str, dict[str, float]] = {}
    emb: dict[str, NDArray[np.float64]] = {}
    for name, h in zip(config.configs, hs, strict=True):
        record_pair(run, name, h)  # points 0 and 1, for the confrontation (ncdyn compare)
        z = h.hidden_final.astype(np.float64)
        mx, my = info["mu_x"], info["mu_y"]
        idx = {
            0: collapse_index(z[ctx == 0], mx[ctx == 0], my[ctx == 0]),  # relevant: x
            1: collapse_index(z[ctx == 1], my[ctx == 1], mx[ctx == 1]),
        }  # relevant: y
        cent = [z[ctx == c].mean(0) for c in (0, 1)]
        spread = float(np.mean([np.sum(z[ctx == c].var(0)) for c in (0, 1)]))
        sep = float(np.sum((cent[0] - cent[1]) ** 2) / max(spread, 1e-300))
        per[name] = {
            "collapse_index_ctx0": idx[0],
            "collapse_index_ctx1": idx[1],
            "context_separation": sep,
            "final_loss": float(h.loss[-1]),
        }
        emb[name] = classical_mds(squared_distances(z[sub]))
    colors = np.where(ctx == 0, info["mu_x"], info["mu_y"])[sub]
    run.save_figure(
        plot_embeddings(
            emb,
            colors,
            ctx[sub],
            title="Figs. 8/13: MDS of hidden layer 2 (colour: task-relevant feature)",
        ),
        "fig8_fig13_blobs_mds",
    )
    run.save_summary({"configs": per, "claims": blobs_claims(per, optimizer=config.optimizer)})


def _not_run(part: str, criterion: str, name: str) -> Part:
    """The part of a net the preset did not train: reported as not held, never dropped."""
    return Part(part, criterion, f"{name} not run at this preset", False)


def blobs_claims(
    per: Mapping[str, Mapping[str, float]], *, optimizer: Optimizer = "sgd"
) -> list[dict[str, Any]]:
    """The claim records of Figs. 8 and 13 of [1] (Fig. 17 with Adam) from ``per``.

    Parameters
    ----------
    per : mapping
        ``{config: {"collapse_index_ctx0", "collapse_index_ctx1", "context_separation"}}``
        for the nets trained (``blobs-very-low``, ``blobs-low``, ``blobs-high``); a part of a
        net that is missing is reported as not held.
    optimizer : {"sgd", "adam"}
        With Adam the Fig. 8 claim is the paper's Fig. 17.
    """
    crit_low = f"collapse index < {COLLAPSED}"
    crit_high = f"collapse index > {COLLAPSED}"
    parts = []
    for ctx in (0, 1):
        key = f"collapse_index_ctx{ctx}"
        part = f"low weights: irrelevant direction collapses in context {ctx}"
        if "blobs-low" in per:
            v = per["blobs-low"][key]
            parts.append(Part(part, crit_low, v, bool(v < COLLAPSED)))
        else:
            parts.append(_not_run(part, crit_low, "blobs-low"))
    for ctx in (0, 1):
        key = f"collapse_index_ctx{ctx}"
        part = f"high weights: irrelevant direction kept in context {ctx}"
        if "blobs-high" in per:
            v = per["blobs-high"][key]
            parts.append(Part(part, crit_high, v, bool(v > COLLAPSED)))
        else:
            parts.append(_not_run(part, crit_high, "blobs-high"))
    fig8 = "Fig. 17" if optimizer == "adam" else "Fig. 8"
    claims = [
        claim(
            f"{fig8}: on the orthogonal-feature task a tanh net with 100 units per layer "
            "collapses, within each context, the direction of the task-irrelevant input "
            "feature in its hidden representation when trained from small initial weights, "
            "and keeps that direction when trained from large initial weights"
            + (" (with Adam as the optimiser)." if optimizer == "adam" else "."),
            f"{fig8}, Sec. 4.5, App. B.3" + (", C.5" if optimizer == "adam" else ""),
            parts,
        )
    ]
    sep_part = "very low weights: the two contexts merge"
    sep_crit = "context separation (very low) < context separation (low)"
    line_part = "very low weights: one line (irrelevant direction collapsed in both contexts)"
    if "blobs-very-low" in per and "blobs-low" in per:
        s_vl = per["blobs-very-low"]["context_separation"]
        s_low = per["blobs-low"]["context_separation"]
        merge = Part(sep_part, sep_crit, {"very_low": s_vl, "low": s_low}, bool(s_vl < s_low))
    else:
        merge = _not_run(sep_part, sep_crit, "blobs-very-low or blobs-low")
    if "blobs-very-low" in per:
        vl = per["blobs-very-low"]
        ci = max(vl["collapse_index_ctx0"], vl["collapse_index_ctx1"])
        line = Part(line_part, f"max over contexts of the {crit_low}", ci, bool(ci < COLLAPSED))
    else:
        line = _not_run(line_part, f"max over contexts of the {crit_low}", "blobs-very-low")
    claims.append(
        claim(
            "Fig. 13: at very small initial weights the 4-layer tanh net's representation of "
            "the orthogonal-feature task collapses onto a single line: the two contexts merge "
            "and the task-irrelevant direction collapses.",
            "Fig. 13, App. C.3",
            [merge, line],
        )
    )
    return claims


def plot_embeddings(
    points: Mapping[str, NDArray[np.float64]],
    colors: NDArray[np.float64],
    markers: NDArray[np.int64],
    *,
    title: str,
) -> Figure:
    """2-D MDS projections, coloured by the task-relevant feature, marker per context."""
    plt = pyplot()
    fig, axes = plt.subplots(1, len(points), figsize=(3.6 * len(points), 3.4), squeeze=False)
    for ax, (name, z) in zip(axes[0], points.items(), strict=True):
        for ctx, mk in ((0, "o"), (1, "^")):
            m = markers == ctx
            ax.scatter(z[m, 0], z[m, 1], c=colors[m], s=5, marker=mk, cmap="coolwarm")
        ax.set_title(name, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    return fig
