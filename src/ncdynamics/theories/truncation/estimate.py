"""Confronting the effective flow with gradient descent on the real layered ReLU network.

The reference is the network of [1] (1.1) built from the cumulative parameters
(``W_l = W^(l) (W^(l-1))^{-1}``, ``b_l = W^(l)(beta^(l) - beta^(l-1))``), its cost read off the
last hidden layer through ``I^(L)(x) = (W^(L))^{-1} x^(L) - beta^(L)``, and its
gradients taken by torch float64 autograd. The Riemannian generator is then
``Omega = -pi_-(G R^T)`` and the update the same Lie-Euler step as the effective flow, so the
two trajectories can be compared step by step. Also here: decay-rate fits and trajectory gaps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

import numpy as np
from numpy.typing import NDArray

from ..._validation import check_array, check_int, check_scalar
from ..integrate import Trajectory
from .integrators import FlowResult, Retraction, expm_antisymmetric, lie_euler, pack_state
from .model import SeparatedRates, _separated, pack_clusters, riemannian_generator
from .network import AdaptedParams, ClusterData, Weighting, cumulative_to_layers, euclidean_cost

__all__ = [
    "LayerDescentResult",
    "NetworkGradients",
    "TrajectoryGap",
    "finite_difference_gradients",
    "fit_log_rate",
    "layer_descent",
    "network_descent",
    "network_gradients",
    "output_descent",
    "OutputDescentResult",
    "trajectory_gap",
]


@dataclass(frozen=True)
class NetworkGradients:
    """Autograd gradients of a cost evaluated through the layered network.

    Attributes
    ----------
    grad_beta : ndarray of shape (L, Q)
    grad_R : ndarray of shape (L, Q, Q)
        Euclidean gradient in the embedding ``R^{Q x Q}``.
    omega : ndarray of shape (L, Q, Q)
        ``-pi_-(grad_R R^T)``.
    grad_W_out : ndarray of shape (Q, Q) or None
        Only for the standard cost.
    cost : float
    """

    grad_beta: NDArray[np.float64]
    grad_R: NDArray[np.float64]
    omega: NDArray[np.float64]
    grad_W_out: NDArray[np.float64] | None
    cost: float


def network_gradients(
    params: AdaptedParams,
    data: ClusterData,
    *,
    W_out: NDArray[np.float64] | None = None,
    y: NDArray[np.float64] | None = None,
    weighting: Weighting = "per_cluster",
) -> NetworkGradients:
    """Gradients of the Euclidean ([1] (2.26)) or standard ([1] (2.22)) cost by autograd.

    The cost is computed by the forward pass ``x^(l) = relu(W_l x^(l-1) + b_l)`` of the real
    network whose layer parameters are derived from ``params`` (including ``wstar``).
    With ``W_out`` and ``y`` given, the standard cost with output ``W_out I^(L)(x)`` is used
    and its gradient in ``W_out`` returned too.
    """
    import torch  # network code only; keeps the theory importable without loading torch

    if (W_out is None) != (y is None):
        raise ValueError("`W_out` and `y` must be given together (standard cost) or not at all.")
    w = torch.as_tensor(data.point_weights(weighting), dtype=torch.float64)
    x = torch.as_tensor(data.x, dtype=torch.float64)
    R = torch.tensor(params.R, dtype=torch.float64, requires_grad=True)
    beta = torch.tensor(params.beta, dtype=torch.float64, requires_grad=True)
    wstar = torch.as_tensor(params.wstar, dtype=torch.float64)
    w_cum = wstar[:, :, None] * R  # (L, Q, Q)
    q = params.dim
    h = x
    prev_w, prev_b = torch.eye(q, dtype=torch.float64), torch.zeros(q, dtype=torch.float64)
    for l in range(params.n_layers):  # noqa: E741
        w_l = w_cum[l] @ torch.linalg.inv(prev_w)  # W_l = W^(l) (W^(l-1))^{-1}
        b_l = w_cum[l] @ (beta[l] - prev_b)  # b_l = W^(l)(beta^(l) - beta^(l-1))
        h = torch.relu(h @ w_l.T + b_l)  # (n, Q)
        prev_w, prev_b = w_cum[l], beta[l]
    images = torch.linalg.solve(w_cum[-1], h.T).T - beta[-1]  # I^(L)(x): (n, Q)
    labels = torch.as_tensor(data.labels)
    wo = None
    if W_out is None:
        res = images - torch.as_tensor(data.ytilde, dtype=torch.float64)[labels]
    else:
        wo = torch.tensor(
            check_array(W_out, "W_out", shape=(q, q), dtype=np.float64), requires_grad=True
        )
        yy = torch.as_tensor(check_array(y, "y", shape=data.ytilde.shape, dtype=np.float64))
        res = images @ wo.T - yy[labels]
    cost = 0.5 * torch.sum(w * torch.sum(res**2, dim=1))
    inputs = [R, beta] + ([wo] if wo is not None else [])
    grads = torch.autograd.grad(cost, inputs)
    g_r, g_b = grads[0].numpy(), grads[1].numpy()
    g_w = grads[2].numpy() if wo is not None else None
    omega = riemannian_generator(g_r, params.R)
    return NetworkGradients(g_b, g_r, omega, g_w, float(cost.detach()))


def network_descent(
    params: AdaptedParams,
    data: ClusterData,
    *,
    eta: float,
    n_steps: int,
    retraction: Retraction = "expm",
    record_every: int = 1,
) -> FlowResult:
    """Lie-Euler gradient descent of the Euclidean cost on the real network.

    Same scheme as :func:`~ncdynamics.theories.truncation.integrators.separated_flow`, with
    the gradient from :func:`network_gradients` (all clusters, no separation assumed). The
    recorded ``j0perp`` and ``btilde`` are the cluster-``l``-in-layer-``l`` monitors.
    """
    packed = pack_clusters(data)

    def rates(R: NDArray[np.float64], beta: NDArray[np.float64]) -> SeparatedRates:
        p = AdaptedParams(R, beta, params.wstar)
        g = network_gradients(p, data)
        mon = _separated(R, beta, packed, "corrected")
        return SeparatedRates(-g.grad_beta, g.omega, mon.j0perp, mon.btilde, g.cost)

    return lie_euler(
        params, rates, eta=eta, n_steps=n_steps, retraction=retraction, record_every=record_every
    )


@dataclass(frozen=True, kw_only=True)
class OutputDescentResult(Trajectory):
    """Gradient descent of the standard cost through the network, output map trained.

    A :class:`~ncdynamics.theories.integrate.Trajectory` of the output map: ``ts = k eta``
    and ``ys = W^(Q+1)`` of shape ``(n_steps + 1, Q, Q)``, every step recorded.

    Attributes
    ----------
    hidden : ndarray of shape (n_steps + 1, L, Q + 1, Q)
        ``(R, beta)`` at each step in the layout of
        :func:`~ncdynamics.theories.truncation.integrators.pack_state` (constant when the
        hidden parameters are not trained).
    cost : ndarray of shape (n_steps + 1,)
        Standard cost ([1] (2.22)) from the network's forward pass.
    max_abs_omega : ndarray of shape (n_steps + 1,)
        ``max |Omega|`` of the autograd Riemannian generator at each step.
    max_abs_grad_beta : ndarray of shape (n_steps + 1,)
        ``max |dC/dbeta|`` at each step.
    """

    hidden: NDArray[np.float64]
    cost: NDArray[np.float64]
    max_abs_omega: NDArray[np.float64]
    max_abs_grad_beta: NDArray[np.float64]


def output_descent(
    params: AdaptedParams,
    data: ClusterData,
    W_out: NDArray[np.float64],
    y: NDArray[np.float64],
    *,
    eta: float,
    n_steps: int,
    train_hidden: bool = True,
    weighting: Weighting = "per_cluster",
) -> OutputDescentResult:
    """Gradient descent of the standard cost ([1] (2.22)) with a trained output map.

    Each step takes the autograd gradients of :func:`network_gradients` at the current
    ``(R, beta, W)`` and updates, with the old values::

        W <- W - eta dC/dW,
        beta <- beta - eta dC/dbeta,   R <- exp(eta Omega) R      (if ``train_hidden``)

    (``R`` is left bitwise unchanged while every ``Omega`` is exactly zero). This is the
    network-level check of [1] Sec. 8 (``train_hidden=True``, fully truncated clusters, where
    it must equal :func:`~ncdynamics.theories.truncation.output_layer.bilinear_gd`) and of
    Sec. 9 (``train_hidden=False``, untruncated clusters, where the hidden gradients vanish).

    Parameters
    ----------
    params : AdaptedParams
        Initial hidden parameters (``wstar`` is not trained).
    data : ClusterData
    W_out : ndarray of shape (Q, Q)
        Initial output map ``W^(Q+1)``.
    y : ndarray of shape (n_classes, Q)
        Labels (rows).
    eta : float
        Step size, ``> 0``.
    n_steps : int
    train_hidden : bool, default=True
    weighting : {"per_cluster", "global"}, default="per_cluster"

    Returns
    -------
    OutputDescentResult
    """
    eta = check_scalar(eta, "eta", low=0, closed="neither")
    n_steps = check_int(n_steps, "n_steps", low=0)
    W = check_array(W_out, "W_out", shape=(params.dim, params.dim), dtype=np.float64).copy()
    R, beta = params.R.copy(), params.beta.copy()
    hidden = np.empty((n_steps + 1, params.n_layers, params.dim + 1, params.dim))
    ws = np.empty((n_steps + 1, *W.shape))
    cost, max_omega, max_gb = np.empty(n_steps + 1), np.empty(n_steps + 1), np.empty(n_steps + 1)
    for k in range(n_steps + 1):
        g = network_gradients(
            AdaptedParams(R, beta, params.wstar), data, W_out=W, y=y, weighting=weighting
        )
        hidden[k], ws[k], cost[k] = pack_state(R, beta), W, g.cost
        max_omega[k] = float(np.abs(g.omega).max())
        max_gb[k] = float(np.abs(g.grad_beta).max())
        if k == n_steps:
            break
        grad_W = cast(NDArray[np.float64], g.grad_W_out)  # standard cost: not None
        if train_hidden:
            if np.any(g.omega != 0):
                R = expm_antisymmetric(eta * g.omega) @ R
            beta = beta - eta * g.grad_beta
        W = W - eta * grad_W
    ts = np.asarray(np.arange(n_steps + 1) * eta, dtype=np.float64)
    return OutputDescentResult(
        ts=ts,
        ys=ws,
        n_evals=n_steps + 1,
        hidden=hidden,
        cost=cost,
        max_abs_omega=max_omega,
        max_abs_grad_beta=max_gb,
    )


@dataclass(frozen=True)
class TrajectoryGap:
    """Largest differences between two recorded trajectories on common times.

    Attributes
    ----------
    beta : float
        ``max_k max |beta_a - beta_b|``.
    R : float
        ``max_k max |R_a - R_b|``.
    cost : float
        ``max_k |C_a - C_b|``.
    per_time : ndarray of shape (n_common,)
        ``max(|beta_a - beta_b|, |R_a - R_b|)`` per common time.
    s : ndarray of shape (n_common,)
    """

    beta: float
    R: float
    cost: float
    per_time: NDArray[np.float64]
    s: NDArray[np.float64]


def trajectory_gap(a: FlowResult, b: FlowResult, *, atol: float = 1e-9) -> TrajectoryGap:
    """Compare two :class:`FlowResult` at the times they share (to ``atol``)."""
    common_a, common_b = [], []
    for i, s in enumerate(a.s):
        j = int(np.argmin(np.abs(b.s - s)))
        if abs(b.s[j] - s) <= atol:
            common_a.append(i)
            common_b.append(j)
    if not common_a:
        raise ValueError("the two trajectories share no recorded time.")
    ia, ib = np.asarray(common_a), np.asarray(common_b)
    db = np.abs(a.beta[ia] - b.beta[ib]).reshape(ia.size, -1).max(axis=1)
    dr = np.abs(a.R[ia] - b.R[ib]).reshape(ia.size, -1).max(axis=1)
    dc = np.abs(a.cost[ia] - b.cost[ib])
    return TrajectoryGap(
        float(db.max()), float(dr.max()), float(dc.max()), np.maximum(db, dr), a.s[ia]
    )


def fit_log_rate(s: NDArray[np.float64], values: NDArray[np.float64]) -> float:
    """Decay rate ``-d log(values)/ds`` by least squares on ``log(values)``.

    ``values`` must be positive. Use it on a window where a single rate applies (for
    instance after ``s1``, where [1] (4.36) predicts rate 1 and Lie-Euler gives
    ``-log(1 - eta)/eta``).
    """
    s = check_array(s, "s", ndim=1, dtype=np.float64, min_size=2)
    values = check_array(values, "values", shape=s.shape, dtype=np.float64)
    if np.any(values <= 0):
        raise ValueError(f"`values` must be > 0; got minimum {values.min():.3g}.")
    slope = np.polyfit(s, np.log(values), 1)[0]
    return float(-slope)


def finite_difference_gradients(
    params: AdaptedParams, data: ClusterData, *, step: float = 1e-6
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Central finite differences of the Euclidean cost ([1] (2.26)), the slow oracle.

    ``beta`` is perturbed coordinate by coordinate; ``Omega`` comes from curves
    ``exp(t (E_ab - E_ba)) R_l``, along which ``dC/dt = -2 Omega_ab`` (experiment E1).

    Returns
    -------
    grad_beta : ndarray of shape (L, Q)
    omega : ndarray of shape (L, Q, Q)
    """
    n_layers, q = params.beta.shape

    def cost(R: NDArray[np.float64], b: NDArray[np.float64]) -> float:
        return euclidean_cost(AdaptedParams(R, b, params.wstar), data)

    g_beta = np.zeros((n_layers, q))
    omega = np.zeros((n_layers, q, q))
    for l in range(n_layers):  # noqa: E741
        for a in range(q):
            bp, bm = params.beta.copy(), params.beta.copy()
            bp[l, a] += step
            bm[l, a] -= step
            g_beta[l, a] = (cost(params.R, bp) - cost(params.R, bm)) / (2 * step)
            for b in range(a + 1, q):
                gen = np.zeros((q, q))
                gen[a, b], gen[b, a] = step, -step
                rp, rm = params.R.copy(), params.R.copy()
                rp[l] = expm_antisymmetric(gen) @ params.R[l]
                rm[l] = expm_antisymmetric(-gen) @ params.R[l]
                d = (cost(rp, params.beta) - cost(rm, params.beta)) / (2 * step)
                omega[l, a, b], omega[l, b, a] = -0.5 * d, 0.5 * d
    return g_beta, omega


@dataclass(frozen=True, kw_only=True)
class LayerDescentResult(Trajectory):
    """Plain gradient descent on the layer parameters ``(W_l, b_l)`` (experiment E8).

    A :class:`~ncdynamics.theories.integrate.Trajectory`: ``ts = k eta`` at the recorded steps
    and ``ys`` of shape ``(n_rec, L, Q + 1, Q)`` with ``W_l`` in rows ``:Q`` and ``b_l`` in
    row ``Q`` (the layout of
    :func:`~ncdynamics.theories.truncation.integrators.pack_state`). The monitors below are
    the ones the step computes anyway, through the torch forward pass.

    Attributes
    ----------
    cost : ndarray of shape (n_rec,)
        Euclidean input-space cost ([1] (2.26)).
    defect : ndarray of shape (n_rec, L)
        Adaptedness defect ``||offdiag(W^(l) W^(l)T)||_F / ||W^(l)||_F^2``: zero iff the
        rows of ``W^(l)`` are orthogonal, i.e. ``W^(l) = diag(w*) R`` ([1] Def. 2.2).
    diameter : ndarray of shape (n_rec, n_classes)
        Largest pairwise distance within ``I^(L)(X_l)``.
    """

    cost: NDArray[np.float64]
    defect: NDArray[np.float64]
    diameter: NDArray[np.float64]

    @property
    def s(self) -> NDArray[np.float64]:
        """Recorded times, shape (n_rec,) (the same array as ``ts``)."""
        return self.ts


def layer_descent(
    params: AdaptedParams,
    data: ClusterData,
    *,
    eta: float,
    n_steps: int,
    record_every: int = 1,
) -> LayerDescentResult:
    """Ordinary gradient descent on ``(W_l, b_l)`` of the Euclidean cost, by autograd.

    Starts from the layer parameters of ``params`` (an adapted initialisation) and lets
    them move freely, so the cumulative weights need not stay adapted: this measures how
    restrictive the adaptedness assumption of [1] (2.31) is along real training.
    The cost is ``1/2 sum_j 1/N_j sum_i |I^(L)(x) - ytilde_j|^2`` with
    ``I^(L)(x) = (W^(L))^{-1} x^(L) - beta^(L)``.
    """
    import torch

    W0, b0 = cumulative_to_layers(params.cumulative_weights(), params.beta)
    W = torch.tensor(W0, requires_grad=True)
    b = torch.tensor(b0, requires_grad=True)
    x = torch.as_tensor(data.x, dtype=torch.float64)
    w = torch.as_tensor(data.point_weights(), dtype=torch.float64)
    target = torch.as_tensor(data.ytilde, dtype=torch.float64)[torch.as_tensor(data.labels)]
    n_layers = params.n_layers
    rec_s: list[float] = []
    rec_c: list[float] = []
    rec_d: list[list[float]] = []
    rec_m: list[list[float]] = []
    rec_y: list[NDArray[np.float64]] = []
    for k in range(n_steps + 1):
        h, w_cum, beta = x, torch.eye(params.dim, dtype=torch.float64), 0.0
        cums = []
        for l in range(n_layers):  # noqa: E741
            h = torch.relu(h @ W[l].T + b[l])  # (n, Q)
            w_cum = W[l] @ w_cum  # W^(l)
            beta = beta + torch.linalg.solve(w_cum, b[l])  # beta^(l)
            cums.append(w_cum)
        images = torch.linalg.solve(w_cum, h.T).T - beta  # I^(L)(x): (n, Q)
        cost = 0.5 * torch.sum(w * torch.sum((images - target) ** 2, dim=1))
        if k % record_every == 0 or k == n_steps:
            with torch.no_grad():
                rec_y.append(pack_state(W.detach().numpy(), b.detach().numpy()))  # a copy
                rec_s.append(k * eta)
                rec_c.append(float(cost))
                d = []
                for wc in cums:
                    gram = wc @ wc.T
                    off = gram - torch.diag(torch.diag(gram))
                    d.append(float(torch.linalg.norm(off) / torch.linalg.norm(wc) ** 2))
                rec_d.append(d)
                img = images.numpy()
                rec_m.append([_diameter(img[data.labels == j]) for j in range(data.n_classes)])
        if k == n_steps:
            break
        gW, gb = torch.autograd.grad(cost, [W, b])
        with torch.no_grad():
            W -= eta * gW
            b -= eta * gb
    return LayerDescentResult(
        ts=np.asarray(rec_s),
        ys=np.asarray(rec_y),
        n_evals=n_steps + 1,
        cost=np.asarray(rec_c),
        defect=np.asarray(rec_d),
        diameter=np.asarray(rec_m),
    )


def _diameter(pts: NDArray[np.float64]) -> float:
    d = pts[:, None, :] - pts[None, :, :]
    return float(np.sqrt(np.max(np.sum(d * d, axis=2))))
