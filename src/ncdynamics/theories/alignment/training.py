"""Full-batch training of the Table 1 / Table 2 networks of [1], recording pair observables.

One epoch is one full-batch step (the datasets here are small). Before every step and after
the last one, the tracked pair's ``a`` (at the chosen hidden layer, or at every layer),
``b``, ``w``, ``ybar`` and the eq. (1) losses are recorded, giving arrays of length
``epochs + 1`` (float64). When the net has no dropout the record reuses the training
forward pass (train and eval modes agree); otherwise an eval-mode pass is added.

Training loss: ``"mse"`` is PyTorch's ``MSELoss`` (mean over all entries, no
1/2), which the pilot found to reproduce the paper's convergence within 6000 epochs;
``"half-mse"`` is eq. (1) exactly; ``"half-mean"`` is the authors' ``0.5 * mse_loss`` (half
the ``"mse"`` objective: the same as ``"half-mse"`` for one output, ``1/d_out`` of it for
more, as the authors' 10-output MNIST nets); ``"sum-mse"`` sums the squared errors over points and
outputs (``n * d_out`` times the ``"mse"`` objective, so for plain SGD the same as ``"mse"`` at
``n * d_out`` times the learning rate). The recorded ``loss`` is always eq. (1).

Readings the paper leaves open, as keyword options with defaults that keep the
behaviour above: ``representation`` reads ``a`` from the post-activation layer output (the
default), from the affine pre-activation ``W_l h_{l-1} + b_l``, or records both
(``PairHistory.a_pre``); ``negative_slope`` sets the leaky-ReLU slope (PyTorch's 0.01 by
default).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np
import torch
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_option, check_scalar
from ...models.table1 import Table1Net, authors_layer
from ...training.devices import current_device

__all__ = [
    "AUTHORS_CODE_ROWS",
    "LOSSES",
    "REPRESENTATIONS",
    "TABLE1",
    "TABLE2",
    "NetConfig",
    "PairHistory",
    "build_net",
    "train_recording",
]

#: Training objectives of :func:`train_recording` (module docstring).
LOSSES = ("mse", "half-mse", "half-mean", "sum-mse")
#: Which tensor of a hidden layer ``a`` is read from.
REPRESENTATIONS = ("post-activation", "pre-activation", "both")


@dataclass(frozen=True)
class NetConfig:
    """One row of Table 1 / Table 2 of [1] (architecture and optimiser settings)."""

    activation: str = "leaky-relu"
    gain: float = 1.0
    lr: float = 0.005
    epochs: int = 6000
    width: int = 500
    depth: int = 20
    skip: str = "none"
    dropout: float = 0.0
    conv: bool = False
    #: The authors' unpadded convolutions (``Table1Net`` ``conv_layout``); rows with conv only.
    conv_layout: str = "authors"
    #: Dropout on the input too, as the authors' ``Dropout`` net; rows with dropout only.
    dropout_input: bool = True

    @property
    def authors_layer(self) -> int:
        """The hidden layer the authors' code reads (1-indexed; ``models.table1.authors_layer``)."""
        return authors_layer(self.depth, dropout=self.dropout > 0)


#: Table 1 of [1]: the two-point architectures.
TABLE1: dict[str, NetConfig] = {
    "default": NetConfig(),
    "convolution": NetConfig(gain=0.95, lr=0.002, depth=10, conv=True),
    "skip": NetConfig(gain=0.1, lr=0.01, skip="two-back"),
    "shallow": NetConfig(gain=0.35, lr=0.01, depth=2),
    "narrow": NetConfig(gain=1.05, lr=0.005, width=50),
    "dropout": NetConfig(lr=0.005, depth=10, dropout=0.1),
    "linear": NetConfig(activation="linear", gain=0.85, lr=0.00125),
    "relu": NetConfig(activation="relu"),
    "elu": NetConfig(activation="elu", gain=0.95, lr=0.00045),
    "tanh": NetConfig(activation="tanh", gain=0.85, lr=0.00125),
    "swish": NetConfig(activation="swish", gain=1.7, lr=0.0025),
    "low-init": NetConfig(gain=0.9, lr=0.015),
    "intermediate-init": NetConfig(gain=1.1, lr=0.0025),
    "high-init": NetConfig(gain=1.3, lr=0.00075),
    "very-high-init": NetConfig(gain=1.4, lr=0.00025),
}

#: Table 2 of [1]: XOR, orthogonal blobs (tanh, 4 x 100) and MNIST (4 x 200).
TABLE2: dict[str, NetConfig] = {
    "xor-low": NetConfig(gain=0.7, lr=0.015, epochs=1000),
    "xor-intermediate": NetConfig(gain=1.25, lr=0.002, epochs=1000),
    "xor-high": NetConfig(gain=2.0, lr=3e-9, epochs=1000),
    "xor-2-layers": NetConfig(gain=0.0015, lr=0.03, epochs=40000, depth=1),
    "blobs-very-low": NetConfig(
        activation="tanh", gain=0.275, lr=0.05, epochs=2000, width=100, depth=4
    ),
    "blobs-low": NetConfig(activation="tanh", gain=0.5, lr=0.015, epochs=1500, width=100, depth=4),
    "blobs-high": NetConfig(activation="tanh", gain=2.0, lr=0.0015, epochs=750, width=100, depth=4),
    "mnist-pair": NetConfig(gain=0.5, lr=0.003, epochs=200, width=200, depth=4),
    "mnist-structure": NetConfig(gain=0.5, lr=0.005, epochs=200, width=200, depth=4),
}


#: Rows whose settings in the authors' code (loekvanrossem/universality at c4f4956) differ
#: from Table 2 of [1]; applied by the experiments' ``setting="authors-code"``.
#: ``experiments/model_settings/XOR.txt`` lines 3 and 7 give the "rich" net gain 0.85 and
#: 3000 epochs and the one-hidden-layer net 2000 epochs; ``experiments/XOR.ipynb`` cell 4
#: builds every XOR net with ``non_linearity=relu`` although the file says leaky ReLU, and
#: trains with ``nn.MSELoss()`` at the file's rate (cell 6; our ``"mse"``, the default).
AUTHORS_CODE_ROWS: dict[str, dict[str, Any]] = {
    "xor-low": {"gain": 0.85, "epochs": 3000, "activation": "relu"},
    "xor-intermediate": {"activation": "relu"},
    "xor-high": {"activation": "relu"},
    "xor-2-layers": {"epochs": 2000, "activation": "relu"},
}


def build_net(
    cfg: NetConfig,
    in_features: int,
    n_outputs: int,
    *,
    seed: int,
    negative_slope: float | None = None,
) -> Table1Net:
    """The network of ``cfg`` with Xavier-normal weights drawn from ``seed``.

    ``negative_slope`` replaces the leaky-ReLU slope (0.01, PyTorch's default; [1] does not
    state it) of a ``"leaky-relu"`` row; the weights drawn are the same for every slope.
    """
    gen = torch.Generator().manual_seed(check_int(seed, "seed", low=0))
    if negative_slope is not None:
        negative_slope = check_scalar(negative_slope, "negative_slope", low=0.0, closed="left")
        if cfg.activation != "leaky-relu":
            raise ValueError(
                "`negative_slope` applies to leaky-ReLU nets only; got activation "
                f"{cfg.activation!r}."
            )
    net = Table1Net(
        in_features,
        n_outputs,
        depth=cfg.depth,
        width=cfg.width,
        activation=cfg.activation,
        gain=cfg.gain,
        skip=cfg.skip,  # type: ignore[arg-type]
        dropout=cfg.dropout,
        conv=cfg.conv,
        conv_layout=cfg.conv_layout,  # type: ignore[arg-type]
        dropout_input=cfg.dropout_input,
        generator=gen,
    )
    if negative_slope is not None:
        net.act = torch.nn.LeakyReLU(negative_slope)
    return net


@dataclass(frozen=True)
class PairHistory:
    """Recorded training of one network.

    Attributes
    ----------
    epochs : ndarray of shape (n_records,)
    a : ndarray of shape (n_records,) or (n_records, depth)
        ``|dh|^2`` at the chosen layer, or at every hidden layer (``layers="all"``).
    b, w : ndarray of shape (n_records,)
    ybar : ndarray of shape (n_records, n_outputs)
    pair_loss, loss : ndarray of shape (n_records,)
        Eq. (1) loss of the pair and of the whole training set.
    X, Y : float
        Squared input and target distance of the pair.
    layer : int
        The chosen hidden layer (1-indexed into ``Table1Net.hidden_layers``; 0 for all).
    hidden_init, hidden_final : ndarray of shape (n, width)
        The chosen layer's representation of every training point, at the start and end.
    out_init, out_final : ndarray of shape (n, n_outputs)
    model : Table1Net or None
        The trained network (``keep_model=True``), in eval mode.
    a_pre : ndarray shaped like ``a``, or None
        ``|dh|^2`` of the affine pre-activations at the same layer(s), recorded with
        ``representation="both"`` (``a`` then reads the post-activation outputs).
    """

    epochs: NDArray[np.float64]
    a: NDArray[np.float64]
    b: NDArray[np.float64]
    w: NDArray[np.float64]
    ybar: NDArray[np.float64]
    pair_loss: NDArray[np.float64]
    loss: NDArray[np.float64]
    X: float
    Y: float
    layer: int
    hidden_init: NDArray[np.float32]
    hidden_final: NDArray[np.float32]
    out_init: NDArray[np.float32]
    out_final: NDArray[np.float32]
    model: Table1Net | None = None
    a_pre: NDArray[np.float64] | None = None

    @property
    def state(self) -> NDArray[np.float64]:
        """``(a, b, w)`` of shape (n_records, 3) (chosen layer)."""
        return np.stack([self.a, self.b, self.w], axis=1)

    def converged(self, *, loss_tol: float = 1e-4, b_tol: float = 0.01) -> bool:
        """Final eq. (1) loss below ``loss_tol`` and ``|b - Y| < b_tol max(Y, 0.01)``.

        Our reading of "converged", which [1] leaves undefined (docs/theories/alignment.md).
        """
        return bool(
            self.loss[-1] < loss_tol and abs(self.b[-1] - self.Y) < b_tol * max(self.Y, 0.01)
        )


def _keep_output(store: list[torch.Tensor | None], k: int) -> Callable[..., None]:
    """A forward hook that keeps its module's output in ``store[k]``."""

    def hook(_module: torch.nn.Module, _args: object, output: torch.Tensor) -> None:
        store[k] = output

    return hook


def _captured(store: list[torch.Tensor | None]) -> list[torch.Tensor]:
    """The hooked layer outputs of the last forward pass (all present by then)."""
    out = [t for t in store if t is not None]
    if len(out) != len(store):
        raise RuntimeError("a layer's pre-activation was not captured by its forward hook.")
    return out


def _pair_distances(hidden: list[torch.Tensor], pair: list[int], layer: int) -> torch.Tensor:
    """``|h(x_j) - h(x_i)|^2`` at ``layer`` (1-indexed), or at every layer (``layer=0``)."""
    i, j = pair
    hs = hidden if layer == 0 else [hidden[layer - 1]]
    return torch.stack([((h[j] - h[i]).double() ** 2).sum() for h in hs])  # (n_a,)


def _stacked_a(rec: list[torch.Tensor], layer: int) -> NDArray[np.float64] | None:
    """The recorded pre-activation distances as ``PairHistory.a_pre`` (None if not recorded)."""
    if not rec:
        return None
    A = torch.stack(rec).cpu().numpy()  # (n_rec, n_a)
    if not np.all(np.isfinite(A)):
        raise FloatingPointError("training diverged (non-finite pre-activation record).")
    return A if layer == 0 else A[:, 0]


def _record(
    hidden: list[torch.Tensor], out: torch.Tensor, t: torch.Tensor, pair: list[int], layer: int
) -> torch.Tensor:
    """``(a..., b, w, pair_loss, loss, ybar...)`` as one float64 vector."""
    i, j = pair
    a = _pair_distances(hidden, pair, layer)  # (n_a,)
    o, tt = out.double(), t.double()
    dy, dt = o[j] - o[i], tt[j] - tt[i]
    b = (dy * dy).sum()
    full = 0.5 * ((o - tt) ** 2).sum(1)  # (n,)
    ybar = 0.5 * (o[i] + o[j])
    return torch.cat(
        [a, torch.stack([b, b - (dy * dt).sum(), 0.5 * (full[i] + full[j]), full.mean()]), ybar]
    )


def train_recording(
    cfg: NetConfig,
    x: NDArray[np.floating],
    targets: NDArray[np.floating],
    *,
    seed: int,
    pair: tuple[int, int] = (0, 1),
    layer: int | Literal["all"] | None = None,
    optimizer: Literal["sgd", "adam"] = "sgd",
    loss: Literal["mse", "half-mse", "half-mean", "sum-mse"] = "mse",
    epochs: int | None = None,
    lr: float | None = None,
    adam_betas: tuple[float, float] = (0.9, 0.999),
    batch_size: int | None = None,
    keep_model: bool = False,
    representation: Literal["post-activation", "pre-activation", "both"] = "post-activation",
    negative_slope: float | None = None,
    stop_below: float | None = None,
) -> PairHistory:
    """Train ``cfg``'s network full-batch on ``(x, targets)`` and record the pair.

    Parameters
    ----------
    cfg : NetConfig
    x : ndarray of shape (n, d_in)
    targets : ndarray of shape (n, d_out)
    seed : int
        Seed of the initial weights (and dropout masks).
    pair : (int, int)
        Indices of the tracked points.
    layer : int, "all" or None
        Hidden layer for ``a`` (1-indexed into ``Table1Net.hidden_layers``); None is the one
        the authors' code reads (``NetConfig.authors_layer``: 11 of 20, 2 of 2, 3 of 4);
        "all" records every one.
    optimizer : {"sgd", "adam"}
        Plain SGD (no momentum) or Adam with ``adam_betas``.
    loss : {"mse", "half-mse", "half-mean", "sum-mse"}
        ``mean``, ``1/2 mean_i |f(x_i) - y_i|^2`` (eq. (1)) or the sum of squared errors
        (module docstring).
    epochs, lr : optional
        Override ``cfg.epochs`` / ``cfg.lr``.
    adam_betas : (float, float)
    batch_size : int, optional
        Minibatch size (shuffled each epoch); full batch by default. Records are then taken
        once per epoch, before its first step.
    keep_model : bool, default=False
        Return the trained network in ``PairHistory.model``.
    representation : {"post-activation", "pre-activation", "both"}
        The layer's output (after activation, dropout and skip) or its affine
        pre-activation ``W_l h_{l-1} + b_l`` as the representation ``h`` of ``a``,
        ``hidden_init`` and ``hidden_final``; ``"both"`` reads ``a`` post-activation and also
        records the pre-activation one in ``PairHistory.a_pre``.
    negative_slope : float, optional
        Leaky-ReLU slope (:func:`build_net`); PyTorch's 0.01 by default.
    stop_below : float, optional
        Stop once the recorded eq. (1) loss of the training set is below this (the authors'
        ``conv_thresh``, Fig. 5's grid trials); the history then ends at that record.
    """
    x = check_array(x, "x", ndim=2, dtype=np.float32)
    if stop_below is not None:
        stop_below = check_scalar(stop_below, "stop_below", low=0.0, closed="neither")
    t_np = check_array(targets, "targets", shape=(x.shape[0], None), dtype=np.float32)
    check_option(optimizer, "optimizer", ("sgd", "adam"))
    check_option(loss, "loss", LOSSES)
    check_option(representation, "representation", REPRESENTATIONS)
    cfg = replace(
        cfg,
        epochs=cfg.epochs if epochs is None else check_int(epochs, "epochs", low=0),
        lr=cfg.lr if lr is None else check_scalar(lr, "lr", low=0.0, closed="neither"),
    )
    p = [
        check_int(pair[0], "pair[0]", low=0, high=x.shape[0] - 1),
        check_int(pair[1], "pair[1]", low=0, high=x.shape[0] - 1),
    ]
    n = x.shape[0]
    bs = n if batch_size is None else check_int(batch_size, "batch_size", low=1)
    device = current_device()  # the run's device (ncdyn run --device); weights drawn on the CPU
    net = build_net(cfg, x.shape[1], t_np.shape[1], seed=seed, negative_slope=negative_slope).to(
        device
    )
    lay = _resolve_layer(layer, cfg, net.n_hidden)
    recording = _Recording(net, representation, p, lay, cfg.authors_layer, net.n_hidden)
    xt, tt = torch.from_numpy(x).to(device), torch.from_numpy(t_np).to(device)
    opt = (
        torch.optim.SGD(net.parameters(), lr=cfg.lr)
        if optimizer == "sgd"
        else torch.optim.Adam(net.parameters(), lr=cfg.lr, betas=adam_betas)
    )
    # Dropout and shuffling draw from this local generator; dropout masks come from torch's
    # global generator, so each step runs inside fork_rng with a seed drawn from it.
    gen = torch.Generator().manual_seed(seed + 1)
    step = _Step(net, opt, loss, t_np.shape[1], gen)
    reuse_forward = bs >= n and cfg.dropout == 0
    for epoch in range(cfg.epochs + 1):
        last = epoch == cfg.epochs
        out = recording.take(xt, tt, train_mode_forward=reuse_forward and not last)
        if last or (stop_below is not None and recording.loss() < stop_below):
            break
        if reuse_forward:
            step(xt, tt, out)
            continue
        order = torch.randperm(n, generator=gen) if bs < n else torch.arange(n)
        for k in range(0, n, bs):
            idx = order[k : k + bs].to(device)
            step(xt[idx], tt[idx])
    recording.close()
    return recording.history(
        cfg, float(np.sum((x[p[1]] - x[p[0]]).astype(np.float64) ** 2)),
        float(np.sum((t_np[p[1]] - t_np[p[0]]).astype(np.float64) ** 2)), keep_model,
    )  # fmt: skip


def _resolve_layer(layer: int | Literal["all"] | None, cfg: NetConfig, n_hidden: int) -> int:
    """The recorded hidden layer, 1-indexed into ``Table1Net.hidden_layers``; 0 for
    ``"all"``, the one the authors' code reads for None (``NetConfig.authors_layer``)."""
    if layer == "all":
        return 0
    if layer is None:
        return cfg.authors_layer
    return check_int(layer, "layer", low=1, high=n_hidden)


class _Step:
    """One optimiser step on a batch; the forward pass (with its dropout mask, drawn from
    torch's global generator inside ``fork_rng``, seeded from ``gen``) unless ``out`` is
    given."""

    def __init__(
        self,
        net: Table1Net,
        opt: torch.optim.Optimizer,
        loss: str,
        d_out: int,
        gen: torch.Generator,
    ) -> None:
        self.net, self.opt, self.gen = net, opt, gen
        self.reduction = "sum" if loss == "sum-mse" else "mean"
        self.scale = {"half-mse": 0.5 * d_out, "half-mean": 0.5}.get(loss, 1.0)

    def __call__(self, xb: torch.Tensor, tb: torch.Tensor, out: torch.Tensor | None = None) -> None:
        if out is None:
            with torch.random.fork_rng(devices=[]):
                torch.manual_seed(int(torch.randint(0, 2**31 - 1, (1,), generator=self.gen)))
                out = self.net.hidden_layers(xb)[1]
        obj = self.scale * torch.nn.functional.mse_loss(out, tb, reduction=self.reduction)
        self.opt.zero_grad(set_to_none=True)
        obj.backward()
        self.opt.step()


class _Recording:
    """The records of one training: a row per epoch (:func:`_record`), the pre-activation
    pair distances when asked for, and the first and last representations and outputs.
    Pre-activations are captured by forward hooks on the layers (removed by :meth:`close`).
    """

    def __init__(
        self,
        net: Table1Net,
        representation: str,
        pair: list[int],
        lay: int,
        shown: int,
        n_hidden: int,
    ) -> None:
        self.net, self.representation, self.pair, self.lay = net, representation, pair, lay
        self.show = lay if lay else shown
        self.n_hidden = n_hidden
        self.pres: list[torch.Tensor | None] = [None] * n_hidden
        self.hooks = (
            [m.register_forward_hook(_keep_output(self.pres, k)) for k, m in enumerate(net.layers)]
            if representation != "post-activation"
            else []
        )
        self.rows: list[torch.Tensor] = []
        self.rows_pre: list[torch.Tensor] = []
        self.init: tuple[torch.Tensor, torch.Tensor] | None = None
        self.hidden: list[torch.Tensor] = []
        self.out: torch.Tensor | None = None

    def take(self, xt: torch.Tensor, tt: torch.Tensor, *, train_mode_forward: bool) -> torch.Tensor:
        """Record the network on ``xt``; return its output (attached to the graph when the
        forward pass ran in train mode, for the step to reuse)."""
        net = self.net
        if train_mode_forward:
            hidden, out = net.hidden_layers(xt)  # train mode == eval mode here
        else:
            net.eval()
            with torch.no_grad():
                hidden, out = net.hidden_layers(xt)
            net.train()
        with torch.no_grad():
            if self.representation == "pre-activation":
                hidden = _captured(self.pres)
            self.rows.append(_record(hidden, out, tt, self.pair, self.lay))
            if self.representation == "both":
                self.rows_pre.append(_pair_distances(_captured(self.pres), self.pair, self.lay))
            if self.init is None:
                self.init = (hidden[self.show - 1].detach().clone(), out.detach().clone())
        self.hidden, self.out = hidden, out
        return out

    def loss(self) -> float:
        """The eq. (1) loss of the training set at the last record."""
        n_a = self.n_hidden if self.lay == 0 else 1
        return float(self.rows[-1][n_a + 3])

    def close(self) -> None:
        for handle in self.hooks:  # the returned model carries no recording hooks
            handle.remove()

    def history(self, cfg: NetConfig, X: float, Y: float, keep_model: bool) -> PairHistory:
        """The :class:`PairHistory` of the records, for input and target distances X, Y."""
        assert self.init is not None and self.out is not None  # epoch 0 is always recorded
        lay = self.lay
        R = torch.stack(self.rows).cpu().numpy()  # (n_rec, n_a + 4 + d_out)
        n_a = self.n_hidden if lay == 0 else 1
        a = R[:, :n_a] if lay == 0 else R[:, 0]
        if not np.all(np.isfinite(R)):
            raise FloatingPointError(
                f"training diverged (non-finite record) for {cfg} at lr {cfg.lr}."
            )
        return PairHistory(
            np.arange(R.shape[0], dtype=np.float64),
            a,
            R[:, n_a],
            R[:, n_a + 1],
            R[:, n_a + 4 :],
            R[:, n_a + 2],
            R[:, n_a + 3],
            X,
            Y,
            lay,
            self.init[0].cpu().numpy(),
            self.hidden[self.show - 1].detach().cpu().numpy(),
            self.init[1].cpu().numpy(),
            self.out.detach().cpu().numpy(),
            self.net.eval() if keep_model else None,
            _stacked_a(self.rows_pre, lay),
        )
