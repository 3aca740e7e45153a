"""Reference SGD step of R stacked networks at batch size 1, by autograd.

The readable definition of what :class:`~ncdynamics.theories.lesde.fast_lenet_step.LeNetSGD`
computes with its hand-written backward pass: every net r takes one plain SGD step on its
own sample,

    w_r <- w_r - lr * grad_w CE(f(w_r, x_r), y_r),

with the logits and the loss read before the update. The R nets are stacked (leading axis
R on every parameter) and the per-net gradient is ``torch.func.vmap`` over
``torch.func.grad`` of a ``functional_call`` of one template module; nothing here is
specific to LeNet. ``tests/theories/test_lesde_fast_lenet_step.py`` compares the fast step
with this one, and :class:`~ncdynamics.theories.lesde.trials.BatchedTrainer` uses it as its
``method="vmap"``.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.func import functional_call, grad, vmap

__all__ = ["StackedGradients", "sgd_step", "stacked_gradients"]

Params = dict[str, torch.Tensor]
# (params, x, y) -> (gradients, (loss, logits)), each with leading axis R
StackedGradients = Callable[
    [Params, torch.Tensor, torch.Tensor], tuple[Params, tuple[torch.Tensor, torch.Tensor]]
]


def stacked_gradients(template: nn.Module) -> StackedGradients:
    """Per-net cross-entropy gradients of R stacked copies of ``template``, batch size 1.

    Parameters
    ----------
    template : nn.Module
        The architecture; its own parameters are not used (it may live on the ``meta``
        device). It must have no buffers that the stacked parameters do not replace.

    Returns
    -------
    callable
        ``fn(params, x, y) -> (grads, (loss, logits))`` with ``params`` the stacked
        parameters (leading axis R, names of ``template.named_parameters()``), ``x`` of
        shape (R, *input_shape) (net r's sample), ``y`` of shape (R,) int64; ``grads``
        like ``params``, ``loss`` of shape (R,) and ``logits`` of shape (R, K), both
        detached and taken before any update.
    """

    def loss_fn(
        p: Params, x: torch.Tensor, y: torch.Tensor
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        out = functional_call(template, p, (x[None],))[0]  # (K,)
        loss = F.cross_entropy(out[None], y[None])
        return loss, (loss.detach(), out.detach())

    fn: StackedGradients = vmap(grad(loss_fn, has_aux=True))
    return fn


def sgd_step(
    template: nn.Module, params: Params, x: torch.Tensor, y: torch.Tensor, *, lr: float
) -> tuple[Params, torch.Tensor, torch.Tensor]:
    """One plain SGD step of every stacked net on its own sample; ``params`` is not changed.

    Parameters
    ----------
    template : nn.Module
        See :func:`stacked_gradients`.
    params : dict of str to tensor
        Stacked parameters, leading axis R.
    x : tensor of shape (R, *input_shape)
    y : tensor of shape (R,), int64
    lr : float

    Returns
    -------
    new_params : dict of str to tensor
        ``params[name] - lr * grad[name]``.
    logits : tensor of shape (R, K), pre-update
    loss : tensor of shape (R,), pre-update
    """
    grads, (loss, logits) = stacked_gradients(template)(params, x, y)
    new = {name: torch.add(value, grads[name], alpha=-lr) for name, value in params.items()}
    return new, logits, loss
