"""Representation geometry: pair observables, distance matrices and Taylor terms.

The pair observables are the state of the two-point alignment theory (van Rossem & Saxe,
ICML 2024, eq. (8)) measured on a network, for a hidden layer ``H``::

    dh = h(x2) - h(x1),  a = |dh|^2,  dy = f(x2) - f(x1),  b = |dy|^2,
    w = b - dy.(y2 - y1),  ybar = (f(x1) + f(x2)) / 2,
    L = mean_i |f(x_i) - y_i|^2 / 2                  (eq. (1) normalisation)

The layer ``H`` is chosen with ``layer=``, as everywhere in ncdynamics, by **module name**
(a key of ``model.named_modules()``, e.g. ``"3"`` in an ``nn.Sequential`` or
``"layers.1"``): ``h`` is that module's output, flattened to ``(n, width)``, captured by a
forward hook, so any ``nn.Module`` works. Without ``layer``, models that number their hidden
layers (``hidden_layers(x, pre_activation=False) -> (list of depth tensors (n, width),
output)`` and ``depth``: the Table 1 family, and :class:`ncdynamics.models.MLP`) use the
middle one (``depth // 2``, post-activation), and any other model the input of its
classifier (the Recorder's features: ``model.classifier`` or the last ``nn.Linear``). An int
``layer`` is the earlier convention, kept for those numbered models: hidden layer 1..depth.
Everything is computed under ``torch.no_grad()`` in eval mode (dropout off) and returned in
float64.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from numpy.typing import ArrayLike, NDArray
from torch import nn

from .._validation import check_array, check_int
from ..models.features import FeatureExtractor
from ..models.modes import eval_mode
from ._base import ProbeInput, ProbeOutput, register_probe

__all__ = [
    "PairAlignmentProbe",
    "PairObservables",
    "TaylorTerms",
    "hidden_and_output",
    "model_depth",
    "pair_observables",
    "pair_observables_from",
    "squared_distances",
    "taylor_terms",
]


def _mlp_hidden(model: nn.Module, x: torch.Tensor) -> tuple[list[torch.Tensor], torch.Tensor]:
    body = model.get_submodule("body")
    if not isinstance(body, nn.Sequential):  # checked by the callers
        raise TypeError(f"`model.body` must be an nn.Sequential; got {type(body).__name__}.")
    h = x.flatten(1)
    outs = []
    for i, m in enumerate(body):
        h = m(h)
        if i % 2 == 1:  # after each activation
            outs.append(h)
    return outs, model.get_submodule("classifier")(h)


def _all_hidden(
    model: nn.Module, x: torch.Tensor, pre_activation: bool = False
) -> tuple[list[torch.Tensor], torch.Tensor]:
    hidden_layers = getattr(model, "hidden_layers", None)
    if hidden_layers is not None:
        out: tuple[list[torch.Tensor], torch.Tensor] = hidden_layers(
            x, pre_activation=pre_activation
        )
        return out
    if hasattr(model, "body") and isinstance(model.body, nn.Sequential) and not pre_activation:
        return _mlp_hidden(model, x)
    raise _not_numbered(model)


def _module_names(model: nn.Module) -> str:
    names = [n for n, _ in model.named_modules() if n]
    shown = ", ".join(names[:40]) + (f", ... ({len(names)} in all)" if len(names) > 40 else "")
    return shown or "none"


def _not_numbered(model: nn.Module) -> TypeError:
    return TypeError(
        "a numbered `layer` needs a model with `hidden_layers(x, pre_activation=False)` "
        "returning (list of hidden tensors, output) and `depth`, or an ncdynamics MLP; got "
        f"{type(model).__name__}. Name a module instead: layer='<name>' with a name among "
        f"{_module_names(model)}."
    )


def _is_numbered(model: nn.Module) -> bool:
    numbered = callable(getattr(model, "hidden_layers", None)) and hasattr(model, "depth")
    return numbered or isinstance(getattr(model, "body", None), nn.Sequential)


def model_depth(model: nn.Module) -> int:
    """Number of hidden layers of a model that numbers them (see the module docstring)."""
    depth = getattr(model, "depth", None)
    if depth is not None:
        return int(depth)
    if hasattr(model, "body") and isinstance(model.body, nn.Sequential):
        return len(model.body) // 2
    raise _not_numbered(model)


def _named_output(
    model: nn.Module, x: torch.Tensor, name: str
) -> tuple[torch.Tensor, torch.Tensor]:
    """The output of submodule ``name`` (forward hook) and the model's output."""
    modules = dict(model.named_modules())
    if name not in modules or not name:
        raise ValueError(
            f"`layer` must name a module of the model (a key of named_modules()); got "
            f"{name!r}. Modules: {_module_names(model)}."
        )
    store: list[torch.Tensor] = []

    def hook(_m: nn.Module, _inputs: tuple[torch.Tensor, ...], output: object) -> None:
        if not isinstance(output, torch.Tensor):
            raise TypeError(
                f"`layer` {name!r} must output a tensor; it returned {type(output).__name__}."
            )
        store.append(output)

    handle = modules[name].register_forward_hook(hook)
    try:
        out = model(x)
    finally:
        handle.remove()
    if not store:
        raise ValueError(
            f"`layer` {name!r} was not called in the forward pass; name a module the "
            f"forward pass uses. Modules: {_module_names(model)}."
        )
    return store[-1].flatten(1), out


def hidden_and_output(
    model: nn.Module,
    x: torch.Tensor,
    *,
    layer: str | int | None = None,
    pre_activation: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The representation at ``layer`` and the output of ``model`` in one forward pass.

    Parameters
    ----------
    model : nn.Module
    x : torch.Tensor of shape (n, *input_shape)
    layer : str or int, optional
        A module name (its output, flattened); the default and the int form (hidden layer
        1..depth of numbered models) are described in the module docstring.
    pre_activation : bool, default=False
        For numbered layers: the affine pre-activation instead of the layer's output. With
        a module name, name the pre-activation module itself (e.g. the ``nn.Linear``).

    Returns
    -------
    h : torch.Tensor of shape (n, width)
    out : torch.Tensor of shape (n, n_outputs)

    Raises
    ------
    ValueError
        If ``layer`` names no module (the message lists them), a module the forward pass
        does not call, or a numbered layer out of range; if ``pre_activation`` is given
        with a module name.
    TypeError
        If ``layer`` is neither a string nor an int, or an int for a model that does not
        number its hidden layers.
    """
    if isinstance(layer, str):
        if pre_activation:
            raise ValueError(
                "`pre_activation` applies to numbered layers; with a module name, name the "
                f"pre-activation module itself (e.g. its nn.Linear); got layer={layer!r}."
            )
        return _named_output(model, x, layer)
    if layer is not None and (isinstance(layer, bool) or not isinstance(layer, int)):
        raise TypeError(
            f"`layer` must be a module name (str) or a hidden-layer number (int); got "
            f"{type(layer).__name__}. Modules: {_module_names(model)}."
        )
    if layer is None and not _is_numbered(model):
        if pre_activation:
            raise ValueError("`pre_activation` needs a numbered `layer`; got layer=None.")
        h, out = FeatureExtractor()(model, x)
        return h, out
    depth = model_depth(model)
    number = max(1, depth // 2) if layer is None else check_int(layer, "layer", low=1, high=depth)
    hidden, out = _all_hidden(model, x, pre_activation)
    return hidden[number - 1], out


@dataclass(frozen=True)
class PairObservables:
    """Pair observables at one time (scalars) or over layers (arrays of shape (n_layers,)).

    Attributes
    ----------
    a, b, w : float or ndarray
    ybar : ndarray of shape (n_outputs,)
    loss : float
        Eq. (1) loss of the pair (half the mean squared error).
    """

    a: Any
    b: float
    w: float
    ybar: NDArray[np.float64]
    loss: float


def pair_observables_from(h: ArrayLike, out: ArrayLike, targets: ArrayLike) -> PairObservables:
    """Pair observables from hidden activations and outputs of the two points.

    Parameters
    ----------
    h : array of shape (2, width) or (n_layers, 2, width)
    out : array of shape (2, n_outputs)
    targets : array of shape (2, n_outputs)
    """
    h = np.asarray(h.detach().cpu() if torch.is_tensor(h) else h, dtype=np.float64)
    out = np.asarray(out.detach().cpu() if torch.is_tensor(out) else out, dtype=np.float64)
    t = check_array(targets, "targets", shape=out.shape, dtype=np.float64)
    dh = h[..., 1, :] - h[..., 0, :]
    dy, dt = out[1] - out[0], t[1] - t[0]
    b = float(dy @ dy)
    loss = 0.5 * float(np.mean(np.sum((out - t) ** 2, axis=1)))
    return PairObservables(
        np.sum(dh * dh, axis=-1), b, b - float(dy @ dt), 0.5 * (out[0] + out[1]), loss
    )


@torch.no_grad()
def pair_observables(
    model: nn.Module,
    x_pair: torch.Tensor,
    targets: ArrayLike,
    *,
    layer: str | int | None = None,
    pre_activation: bool = False,
) -> PairObservables:
    """Measure ``a, b, w, ybar`` and the loss for a pair of inputs (eval mode).

    Parameters
    ----------
    model : nn.Module
    x_pair : torch.Tensor of shape (2, *input_shape)
    targets : array of shape (2, n_outputs)
    layer : str or int, optional
        Module name, or hidden-layer number of numbered models (see
        :func:`hidden_and_output`).
    pre_activation : bool, default=False
    """
    if x_pair.shape[0] != 2:
        raise ValueError(f"`x_pair` must hold 2 inputs; got shape {tuple(x_pair.shape)}.")
    with eval_mode(model):
        h, out = hidden_and_output(model, x_pair, layer=layer, pre_activation=pre_activation)
    return pair_observables_from(h, out, targets)


def squared_distances(z: ArrayLike) -> NDArray[np.float64]:
    """Matrix of squared Euclidean distances (float64), shape (n, n), zero diagonal.

    Parameters
    ----------
    z : array of shape (n, d)
    """
    z = np.asarray(z.detach().cpu() if torch.is_tensor(z) else z, dtype=np.float64)
    z = check_array(z, "z", ndim=2)
    sq = np.sum(z * z, axis=1)
    d = sq[:, None] + sq[None, :] - 2.0 * (z @ z.T)
    np.fill_diagonal(d, 0.0)
    return np.maximum(d, 0.0)


@dataclass(frozen=True)
class TaylorTerms:
    """Norms of the first- and second-order Taylor terms for each pair.

    ``first = |J f(m) v|``, ``second = |v^T H f(m) v| / 2``, with ``m`` the midpoint and
    ``v`` half the difference of the pair. Arrays of shape (n_pairs,).
    """

    first: NDArray[np.float64]
    second: NDArray[np.float64]

    @property
    def ratio(self) -> NDArray[np.float64]:
        return self.first / np.maximum(self.second, np.finfo(np.float64).tiny)


def taylor_terms(
    fn: Callable[[torch.Tensor], torch.Tensor],
    xi: torch.Tensor,
    xj: torch.Tensor,
    *,
    method: str = "difference",
) -> TaylorTerms:
    """First- against second-order Taylor terms of ``fn`` between pairs (Fig. 14, App. C.4).

    Expanding ``fn`` around the midpoint ``m = (xi + xj)/2`` along ``v = (xj - xi)/2``,
    ``fn(m + v) = fn(m) + J v + v^T H v / 2 + ...``. The paper gives no formula; two are
    offered:

    * ``"difference"`` (default): ``first = |fn(xj) - fn(xi)| / 2`` and
      ``second = |fn(xj) + fn(xi) - 2 fn(m)| / 2``, the odd and even parts of the
      expansion. Exact for quadratic maps, and meaningful for piecewise-linear networks
      (leaky ReLU), whose autodiff Hessian is zero almost everywhere.
    * ``"autodiff"``: ``J v`` and ``v^T H v / 2`` from ``torch.func.jvp`` (forward over
      forward), for smooth maps.

    Both are vectorised over pairs with ``vmap``.

    Parameters
    ----------
    fn : callable
        Maps a single input of shape ``input_shape`` to a tensor.
    xi, xj : torch.Tensor of shape (n_pairs, *input_shape)
    method : {"difference", "autodiff"}
    """
    from torch.func import jvp, vmap

    from .._validation import check_option

    check_option(method, "method", ("difference", "autodiff"))
    if xi.shape != xj.shape:
        raise ValueError(
            f"`xi` and `xj` must have the same shape; got {tuple(xi.shape)} and {tuple(xj.shape)}."
        )
    m, v = 0.5 * (xi + xj), 0.5 * (xj - xi)
    if method == "difference":
        with torch.no_grad():
            fi, fj, fm = vmap(fn)(xi), vmap(fn)(xj), vmap(fn)(m)
        d1, d2 = 0.5 * (fj - fi), fj + fi - 2.0 * fm
    else:

        def both(x: torch.Tensor, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            out = jvp(lambda y: jvp(fn, (y,), (u,))[1], (x,), (u,))
            return out[0], out[1]  # f'(x) u and u^T f''(x) u

        d1, d2 = vmap(both)(m, v)
    first = torch.linalg.vector_norm(d1.flatten(1), dim=1)
    second = 0.5 * torch.linalg.vector_norm(d2.flatten(1), dim=1)
    return TaylorTerms(
        first.detach().cpu().double().numpy(), second.detach().cpu().double().numpy()
    )


class PairAlignmentProbe:
    """Recorder probe: pair observables of two probe-set points at one hidden layer.

    Scalars ``pair_a``, ``pair_b``, ``pair_w``, ``pair_loss`` and the constants ``pair_X``,
    ``pair_Y`` (squared input and target distances); array ``pair_ybar``.

    Parameters
    ----------
    pair : (int, int)
        Indices into the probe set.
    targets : array of shape (2, n_outputs), optional
        Targets of the pair; one-hot of the labels by default.
    layer : str or int, optional
        Name of the module whose output is the representation (``"3"``, ``"body.1"``), as
        ``layer=`` everywhere; by default the middle hidden layer of models that number
        theirs, else the classifier's input. An int is the earlier convention: hidden layer
        1..depth of numbered models (see :func:`hidden_and_output`).
    """

    name = "pair_alignment"

    def __init__(
        self,
        pair: tuple[int, int] = (0, 1),
        targets: ArrayLike | None = None,
        layer: str | int | None = None,
    ) -> None:
        self.pair = (check_int(pair[0], "pair[0]", low=0), check_int(pair[1], "pair[1]", low=0))
        self.targets = None if targets is None else check_array(targets, "targets", ndim=2)
        self.layer = layer

    def __call__(self, inp: ProbeInput) -> ProbeOutput:
        idx = list(self.pair)
        x = inp.x[idx]
        if self.targets is None:
            t = np.eye(inp.num_classes)[np.asarray(inp.y[idx].cpu())]
        else:
            t = self.targets
        obs = pair_observables(inp.model, x, t, layer=self.layer)
        dx = (x[1] - x[0]).detach().cpu().double().flatten()
        dt = np.asarray(t[1], dtype=np.float64) - np.asarray(t[0], dtype=np.float64)
        scalars = {"pair_a": float(obs.a), "pair_b": obs.b, "pair_w": obs.w, "pair_loss": obs.loss}
        # the squared input and target distances X, Y of eq. (7), constant over training
        scalars.update({"pair_X": float(dx @ dx), "pair_Y": float(dt @ dt)})
        return ProbeOutput(scalars, {"pair_ybar": obs.ybar})


@register_probe("pair_alignment")
def _make_pair_alignment(**options: Any) -> PairAlignmentProbe:
    return PairAlignmentProbe(**options)
