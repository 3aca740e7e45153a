"""Fast path: hand-written forward, backward and SGD step of R stacked LeNets at batch size 1.

The reference for the same step is :mod:`.reference_lenet_step` (autograd, ``vmap`` over
the nets); ``tests/theories/test_lesde_fast_lenet_step.py`` compares the two.

At batch size 1 each network's convolution is one matrix product,
``(out, in k k) @ (in k k, positions)``, so the R networks' convolutions are one ``bmm``
over R on an im2col matrix. How that matrix is laid out decides the speed:

- conv1 (:func:`_shifted_planes`, :func:`_pool_ordered_weight`): the input is split into
  its four parity planes (space-to-depth) and the product is taken with 36 shifted planes
  instead of 25 shifted images, so the output comes with the four members of every 2x2
  pooling window in four contiguous blocks (max-pool and its backward pass are then
  elementwise on contiguous memory) and the patch matrix is 2.8x smaller than im2col's;
- conv2 (:func:`_im2col`): "wide" rows (each column block a contiguous run of the input,
  a few filler columns per row), so the copy is fast and the input gradient
  (:func:`_conv_input_grad`) is k^2 contiguous additions instead of ``F.fold``, done one
  kernel row at a time while the partial products are in cache;
- no autograd graph; the linear layers' weight updates are delayed rank-1 factors
  (:class:`LeNetSGD`); the large activations live in buffers kept from step to step.

Max-pool ties go to the first window member in row-major order, as in PyTorch's CPU
kernel, so the step equals a loop over ``nn.Module`` copies trained by
``torch.optim.SGD`` (checked in float64 in ``tests/theories/test_lesde_fast_lenet_step.py``).
"""

from __future__ import annotations

import torch

__all__ = ["LeNetSGD"]


class _Workspace:
    """Buffers kept from step to step, by name.

    Fresh multi-megabyte tensors every step cost page faults (the allocator hands large
    blocks back to the system), which made up a good part of the step time.
    """

    def __init__(self) -> None:
        self._bufs: dict[str, torch.Tensor] = {}

    def __call__(self, name: str, shape: tuple[int, ...], like: torch.Tensor) -> torch.Tensor:
        """A buffer of this shape, dtype and device; zero-filled when first made."""
        buf = self._bufs.get(name)
        if buf is None or buf.shape != shape or buf.dtype != like.dtype:
            buf = self._bufs[name] = like.new_zeros(shape)
        return buf


def _im2col(x: torch.Tensor, k: int, ws: _Workspace, name: str) -> torch.Tensor:
    """Patches of a stride-1, unpadded ``k x k`` convolution, in the "wide" layout.

    x (R, C, S, S) -> (R, C k k, o S) with o = S - k + 1, rows in the order of a
    (O, C, k, k) weight. Column ``i S + j`` holds the patch of output (i, j) for ``j < o``;
    the columns ``j >= o`` run over into the next row (finite filler whose outputs are
    never used). Each row of the result is then one contiguous run of the input, so the
    copy is fast and its adjoint (in :func:`_conv_input_grad`) is k^2 contiguous additions.
    """
    r, c, s, _ = x.shape
    n, o = x.numel(), s - k + 1
    flat = ws(f"{name}.in", (n + k - 1,), x)  # k - 1 zeros of padding for the last overrun
    flat[:n].view_as(x).copy_(x)
    view = flat.as_strided((r, c, k, k, o * s), (c * s * s, s * s, s, 1, 1))  # (R, C, u, v, p)
    out = ws(name, (r, c * k * k, o * s), x)
    out.view(r, c, k, k, o * s).copy_(view)
    return out


def _conv_input_grad(
    w: torch.Tensor, g: torch.Tensor, side: int, ws: _Workspace, name: str
) -> torch.Tensor:
    """Gradient of a wide-layout convolution with respect to its input.

    w (R, O, C, k, k), g (R, O, o S) (zero filler columns) -> (R, C, S, S): the product
    ``w^T g`` is taken one kernel row ``u`` at a time, (R, C k, o S) each, and its columns
    are added into place (the adjoint of :func:`_im2col`; filler columns of ``g`` are zero)
    while it is still in cache, instead of materialising the whole (R, C k k, o S) matrix.
    """
    r, o_ch, c, k, _ = w.shape
    o = side - k + 1
    n = r * c * side * side
    wt = ws(f"{name}.w", (r, k, c * k, o_ch), w)  # (R, u, (c, v), O)
    wt.view(r, k, c, k, o_ch).copy_(w.permute(0, 3, 2, 4, 1))
    part = ws(f"{name}.part", (r, c * k, g.shape[-1]), g)
    flat = ws(name, (n + k - 1,), g).zero_()
    for u in range(k):
        rows = torch.bmm(wt[:, u], g, out=part).view(r, c, k, -1)  # (R, C, v, o S)
        for v in range(k):
            dst = flat.as_strided((r, c, o * side), (c * side * side, side * side, 1), u * side + v)
            dst += rows[:, :, v]  # input (i + u, j + v) gets output (i, j)
    return flat[:n].view(r, c, side, side)


def _conv_map(wide: torch.Tensor, o: int) -> torch.Tensor:
    """The (R, O, o, o) valid part (a strided view) of a wide conv output (R, O, o S)."""
    return wide.view(wide.shape[0], wide.shape[1], o, -1)[..., :o]


def _subgrids(c: torch.Tensor) -> list[torch.Tensor]:
    """The four (R, O, P, P) strided views of c (R, O, S, S) holding the members
    (0, 0), (0, 1), (1, 0), (1, 1) of every 2x2 pooling window (floor mode: P = S // 2)."""
    r, o, s, _ = c.shape
    p = s // 2
    sr, so, sh, sw = c.stride()
    base = c.storage_offset()
    return [
        c.as_strided((r, o, p, p), (sr, so, 2 * sh, 2 * sw), base + dy * sh + dx * sw)
        for dy in (0, 1)
        for dx in (0, 1)
    ]


def _pool(
    members: list[torch.Tensor], ws: _Workspace, name: str
) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """2x2 max-pool, given the four members of every window in row-major order.

    Returns the pooled map and, for the first three members, a 0/1 float map that is 1
    where the member is *not* the window's maximum (``sign(max - member)``, exact).
    """
    a, b, cc, d = members
    shape = tuple(a.shape)
    pooled, tmp = ws(name, shape, a), ws(f"{name}.tmp", shape, a)
    torch.maximum(a, b, out=pooled)
    torch.maximum(pooled, torch.maximum(cc, d, out=tmp), out=pooled)
    miss = [
        torch.sub(pooled, m, out=ws(f"{name}.miss{i}", shape, a)) for i, m in enumerate((a, b, cc))
    ]
    return pooled, [m.sign_() for m in miss]


def _unpool(
    grad: torch.Tensor,
    miss: list[torch.Tensor],
    members: list[torch.Tensor],
    ws: _Workspace,
    name: str,
) -> None:
    """Backward of :func:`_pool`: write ``grad`` into the four member views.

    The gradient goes to the *first* window member equal to the maximum, as in PyTorch's
    CPU kernel; the other members get zero.
    """
    rest = grad
    for i, (view, not_max) in enumerate(zip(members[:3], miss, strict=True)):
        # what no member up to this one has taken
        passed = torch.mul(rest, not_max, out=ws(f"{name}.{i % 2}", tuple(grad.shape), grad))
        torch.sub(rest, passed, out=view)
        rest = passed
    members[3].copy_(rest)


def _shifted_planes(
    x: torch.Tensor, k: int, ws: _Workspace, name: str
) -> tuple[torch.Tensor, int, int]:
    """Input of a stride-1 ``k x k`` convolution followed by a 2x2 max-pool, rearranged so
    that the convolution is one product whose output has the four members of every pooling
    window in four contiguous column blocks (see :func:`_pool_ordered_weight`).

    x (R, C, S, S) -> T (R, C (k+1)^2, L), P, W with P = (S - k + 1) // 2 pooled rows,
    W = ceil(S / 2), L = P W. With the parity planes ``E[a, b][I, J] = x[2I + a, 2J + b]``,
    row (c, A, B) of T is plane (A % 2, B % 2) of channel c shifted by (A // 2, B // 2):
    ``T[c, A, B, py W + px] = x[c, 2 py + A, 2 px + B]``, a contiguous run of one plane
    (columns ``px >= P`` are finite filler whose outputs are never used).
    """
    r, c, s, _ = x.shape
    w = (s + 1) // 2
    p = (s - k + 1) // 2
    n_l = p * w
    planes = ws(f"{name}.planes", (r * c * 4 * w * w + k * w,), x)  # zero padding at the end
    e = planes[: r * c * 4 * w * w].view(r, c, 2, 2, w, w)
    for a in (0, 1):
        for b in (0, 1):
            src = x[:, :, a::2, b::2]
            e[:, :, a, b, : src.shape[2], : src.shape[3]] = src
    t = ws(name, (r, c, k + 1, k + 1, n_l), x)
    se = (c * 4 * w * w, 4 * w * w)
    for a in (0, 1):
        for b in (0, 1):
            m, n = (k - a) // 2 + 1, (k - b) // 2 + 1
            src = planes.as_strided((r, c, m, n, n_l), (*se, w, 1, 1), (2 * a + b) * w * w)
            t[:, :, a::2, b::2] = src  # A = 2 m + a, B = 2 n + b
    return t.view(r, c * (k + 1) ** 2, n_l), p, w


def _pool_ordered_weight(w: torch.Tensor, ws: _Workspace, name: str) -> torch.Tensor:
    """The weight that multiplies :func:`_shifted_planes`: w (R, O, C, k, k) ->
    (R, O 4, C (k+1)^2), row (o, member (dy, dx)), column (c, A, B), holding
    ``w[o, c, A - dy, B - dx]`` (zero where that is outside the kernel): conv output
    (2 py + dy, 2 px + dx) = sum over (c, A, B) of it times ``x[c, 2 py + A, 2 px + B]``."""
    r, o, c, k, _ = w.shape
    out = ws(name, (r, o, 4, c, k + 1, k + 1), w)  # zero where never written
    for dy in (0, 1):
        for dx in (0, 1):
            out[:, :, 2 * dy + dx, :, dy : dy + k, dx : dx + k] = w
    return out.view(r, 4 * o, -1)


def _relu_grad(grad: torch.Tensor, act: torch.Tensor) -> torch.Tensor:
    """``grad * (act > 0)`` for ``act = relu(.)`` (non-negative), in float arithmetic."""
    return grad * act.sign()


_LINEAR = ("body.7", "body.9", "classifier")


class LeNetSGD:
    """Plain SGD at batch size 1 on R stacked LeNets, one hand-written step for all.

    The linear layers' rank-1 weight updates ``W -= lr d^T a`` are not applied at once:
    up to ``delay`` of them are kept as factors (``lr d`` and ``a``) and the products with
    the weights are corrected by them, ``a W_eff^T = a W^T - (a A^T) D``; every ``delay``
    steps they are added to the weights by one batched GEMM. This reads the largest weight
    matrix (R x 120 x 400) twice per step instead of four times, and is the same SGD up to
    rounding. The large activations live in buffers kept from step to step.

    The nets are stepped in groups of at most ``group`` (each group's whole forward and
    backward pass before the next group's), and the groups share one set of buffers: the
    working set of 100 nets (about 45 MB by our count, 19 MB of it the first linear layer's
    weights) is more than the cache keeps through a step. On the development machine one
    step took 118.7 µs per net at R = 50 against 152.8 µs at R = 100 in one group, and
    groups of 50 were the fastest split of 100 (``docs/theories/lesde.md``). The nets are
    independent, so the grouping changes no number.

    Parameters
    ----------
    params : dict of str to tensor
        Stacked LeNet state (leading axis R), keys of
        :class:`ncdynamics.models.lenet.LeNet`; updated in place. Call :meth:`flush`
        before reading the linear weights.
    lr : float
    delay : int, default=16
    group : int, default=50
        Most nets stepped together; R is split into near-equal groups no larger than this.
    """

    def __init__(
        self, params: dict[str, torch.Tensor], *, lr: float, delay: int = 16, group: int = 50
    ) -> None:
        self.params, self.lr, self.delay = params, float(lr), int(delay)
        w = params["classifier.weight"]
        r = w.shape[0]
        self._pending = {
            name: (
                w.new_empty(r, self.delay, params[f"{name}.weight"].shape[1]),  # lr d: (R, T, out)
                w.new_empty(r, self.delay, params[f"{name}.weight"].shape[2]),  # a: (R, T, in)
            )
            for name in _LINEAR
        }
        self._count = 0
        n_groups = -(-r // max(1, int(group)))
        bounds = [round(i * r / n_groups) for i in range(n_groups + 1)]
        self._groups = [slice(a, b) for a, b in zip(bounds[:-1], bounds[1:], strict=True)]
        # one set of buffers per group size (at most two sizes): groups of a size share it
        self._ws = {b - a: _Workspace() for a, b in zip(bounds[:-1], bounds[1:], strict=True)}

    def flush(self) -> None:
        """Add the pending rank-1 updates to the linear weights."""
        t = self._count
        if t:
            for name, (dbuf, abuf) in self._pending.items():
                w = self.params[f"{name}.weight"]
                w.baddbmm_(dbuf[:, :t].transpose(1, 2), abuf[:, :t], alpha=-1.0)
        self._count = 0

    def step(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """One SGD step of every net on its own sample.

        x (R, C, S, S), y (R,) -> pre-update logits (R, K) and losses (R,).
        """
        if len(self._groups) == 1:
            (ws,) = self._ws.values()
            out = _step(self.params, self._pending, ws, self._count, x, y, self.lr)
        else:
            parts = [
                _step(
                    {name: v[g] for name, v in self.params.items()},
                    {name: (d[g], a[g]) for name, (d, a) in self._pending.items()},
                    self._ws[g.stop - g.start],
                    self._count,
                    x[g],
                    y[g],
                    self.lr,
                )
                for g in self._groups
            ]
            out = (torch.cat([p[0] for p in parts]), torch.cat([p[1] for p in parts]))
        self._count += 1
        if self._count == self.delay:
            self.flush()
        return out


def _step(
    p: dict[str, torch.Tensor],
    pend: dict[str, tuple[torch.Tensor, torch.Tensor]],
    ws: _Workspace,
    t: int,
    x: torch.Tensor,
    y: torch.Tensor,
    lr: float,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Forward, hand-written backward and SGD update of R LeNets (batch size 1).

    Parameters
    ----------
    p : dict of str to tensor
        Stacked LeNet state (leading axis R); the convolutions and all biases are updated
        in place.
    pend : dict of str to (tensor (R, T, out), tensor (R, T, in))
        Per linear layer, the pending factors ``lr d`` and ``a``; slots ``[0, t)`` are in
        use and slot ``t`` receives this step's.
    ws : _Workspace
        Buffers for the large activations; their contents are overwritten.
    t : int
        Number of pending updates.
    x : tensor of shape (R, C, S, S)
        Net r's sample.
    y : tensor of shape (R,), int64

    Returns
    -------
    logits : tensor of shape (R, K), pre-update
    loss : tensor of shape (R,), pre-update cross-entropy
    """
    r = x.shape[0]
    w1, b1 = p["body.0.weight"], p["body.0.bias"]  # (R, 6, C, k, k), (R, 6)
    w2, b2 = p["body.3.weight"], p["body.3.bias"]  # (R, 16, 6, k, k), (R, 16)
    (o1, k1), (o2, k2) = (w1.shape[1], w1.shape[-1]), (w2.shape[1], w2.shape[-1])
    w2m = w2.view(r, o2, -1)  # (R, 16, 6 k k), a view: updated in place
    # forward, keeping what the backward pass needs
    x1, p1, w1w = _shifted_planes(x, k1, ws, "x1")  # (R, C (k+1)^2, L1), L1 = P1 W1
    w1p = _pool_ordered_weight(w1, ws, "w1p")  # (R, 6 4, C (k+1)^2)
    bias1 = b1[:, :, None, None].expand(r, o1, 4, 1).reshape(r, 4 * o1, 1)
    c1 = torch.baddbmm(bias1, w1p, x1, out=ws("c1", (r, 4 * o1, x1.shape[-1]), x))
    h1w, miss1 = _pool(list(c1.view(r, o1, 4, -1).unbind(2)), ws, "h1")  # (R, 6, L1)
    h1w.clamp_(min=0.0)  # relu after the pool (they commute)
    h1 = h1w.view(r, o1, p1, w1w)[..., :p1]  # (R, 6, P1, P1), a view
    s2 = p1
    q2 = s2 - k2 + 1
    x2 = _im2col(h1, k2, ws, "x2")  # (R, 6 k k, q2 s2)
    c2 = torch.baddbmm(b2[:, :, None], w2m, x2, out=ws("c2", (r, o2, q2 * s2), x))
    h2, miss2 = _pool(_subgrids(_conv_map(c2, q2)), ws, "h2")
    h2 = h2.clamp_(min=0.0).view(r, 1, -1)  # (R, 1, 16 P2 P2), LeNet's flatten order
    acts = [h2]
    for name in _LINEAR:
        w, b = p[f"{name}.weight"], p[f"{name}.bias"]  # (R, out, in), (R, out)
        z = torch.baddbmm(b[:, None, :], acts[-1], w.transpose(1, 2))  # (R, 1, out)
        if t:  # pending updates: a W_eff^T = a W^T - (a A^T) D
            dbuf, abuf = pend[name][0][:, :t], pend[name][1][:, :t]  # (R, t, out), (R, t, in)
            z.sub_(torch.bmm(torch.bmm(acts[-1], abuf.transpose(1, 2)), dbuf))
        acts.append(z if name == "classifier" else z.clamp_(min=0.0))
    logits = acts[-1][:, 0].clone()  # (R, K)
    loss = torch.nn.functional.cross_entropy(logits, y, reduction="none")
    # backward of the softmax cross-entropy: softmax - onehot
    d = torch.softmax(acts[-1], dim=-1)
    d[torch.arange(r, device=d.device), 0, y] -= 1.0  # (R, 1, K)
    for i, name in reversed(list(enumerate(_LINEAR))):
        w, b = p[f"{name}.weight"], p[f"{name}.bias"]
        d_in = torch.bmm(d, w)  # (R, 1, in), with the pre-update weight
        dbuf, abuf = pend[name]
        if t:  # d W_eff = d W - (d D^T) A
            d_in.sub_(torch.bmm(torch.bmm(d, dbuf[:, :t].transpose(1, 2)), abuf[:, :t]))
        torch.mul(d[:, 0], lr, out=dbuf[:, t])  # this step's update, W -= lr d^T a, pending
        abuf[:, t] = acts[i][:, 0]
        b.sub_(d[:, 0], alpha=lr)
        d = _relu_grad(d_in, acts[i])
    # second convolution: d is the gradient w.r.t. h2, already through its relu
    g2 = ws("g2", (r, o2, q2 * s2), x)  # zero where _unpool never writes
    _unpool(d.view(r, o2, *miss2[0].shape[-2:]), miss2, _subgrids(_conv_map(g2, q2)), ws, "g2")
    gh1_in = _conv_input_grad(w2, g2, s2, ws, "gh1")  # (R, 6, P1, P1), pre-update weight
    w2m.baddbmm_(g2, x2.transpose(1, 2), alpha=-lr)
    b2.sub_(g2.sum(-1), alpha=lr)
    gh1w = ws("gh1w", tuple(h1w.shape), x)  # (R, 6, L1), zero filler columns
    gh1 = gh1w.view(h1.shape[0], o1, p1, w1w)[..., :p1]
    relu_mask = torch.sign(h1, out=ws("h1.sign", tuple(h1.shape), x))
    torch.mul(gh1_in, relu_mask, out=gh1)  # through the relu
    # first convolution
    g1 = ws("g1", (r, o1, 4, x1.shape[-1]), x)  # (R, 6, 4, L1)
    _unpool(gh1w, miss1, list(g1.unbind(2)), ws, "g1")
    gw1 = torch.bmm(g1.view(r, 4 * o1, -1), x1.transpose(1, 2), out=ws("gw1", w1p.shape, x))
    gw1 = gw1.view(r, o1, 4, w1.shape[2], k1 + 1, k1 + 1)
    for dy in (0, 1):
        for dx in (0, 1):
            w1.sub_(gw1[:, :, 2 * dy + dx, :, dy : dy + k1, dx : dx + k1], alpha=lr)
    b1.sub_(g1.sum((2, 3)), alpha=lr)
    return logits, loss
