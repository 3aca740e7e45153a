"""The invariant metrics (NTK-collapse paper, eqs. (26),
(28); oracle O9) and the ``ntk_invariant`` probe."""

import numpy as np
import pytest
import torch

from ncdynamics.models import MLP
from ncdynamics.probes import InvariantProbe, ProbeInput, invariant_metrics, make_probe

C, M, N_FEAT = 3, 4, 5


def _slow_invariant(H, W, kd, kc, kn):
    """E of [1] eq. (26) through an explicit basis Q (independent of the fast formula)."""
    n, N = H.shape
    mu_s = kd - kc
    mu_c = mu_s + M * (kc - kn)
    alpha = kn * M / (mu_c + C * kn * M)
    Q1 = np.kron(np.eye(C), np.ones((M, 1))) / np.sqrt(M)
    full, _ = np.linalg.qr(np.hstack([Q1, np.random.default_rng(0).standard_normal((N, N - C))]))
    Q2 = full[:, C:]
    H1 = H @ Q1 / np.sqrt(M)
    H2 = H @ Q2 / np.sqrt(M)
    one = np.ones((C, 1))
    return W.T @ W / M - H1 @ (np.eye(C) - alpha * one @ one.T) @ H1.T / mu_c - H2 @ H2.T / mu_s


def test_invariant_norm_equals_m_times_norm_of_eq26(rng):
    H = rng.standard_normal((N_FEAT, C * M)) + 0.5  # nonzero global mean
    W = rng.standard_normal((C, N_FEAT))
    y = np.repeat(np.arange(C), M)
    kd, kc, kn = 3.0, 1.1, 0.3
    met = invariant_metrics(H.T, y, W, [kd, kc, kn])
    E = _slow_invariant(H, W, kd, kc, kn)
    assert met.invariant_norm == pytest.approx(M * np.linalg.norm(E), rel=1e-12)
    np.testing.assert_allclose(met.lhs - met.rhs, M * E, atol=1e-12)
    # alpha: the code form equals the theory form
    mu_c = (kd - kc) + M * (kc - kn)
    assert met.alpha == pytest.approx(kn * M / (mu_c + C * kn * M), rel=1e-12)
    assert met.h2_norm == pytest.approx(
        np.linalg.norm(
            sum(
                np.outer(d, d)
                for d in (H - np.repeat(H.reshape(N_FEAT, C, M).mean(2), M, axis=1)).T
            )
        ),
        rel=1e-12,
    )


def test_invariant_metrics_ignore_sample_order(rng):
    H = rng.standard_normal((C * M, N_FEAT))
    W = rng.standard_normal((C, N_FEAT))
    y = np.repeat(np.arange(C), M)
    perm = rng.permutation(C * M)
    a = invariant_metrics(H, y, W, [2.0, 1.0, 0.1])
    b = invariant_metrics(H[perm], y[perm], W, [2.0, 1.0, 0.1])
    assert a.invariant_norm == pytest.approx(b.invariant_norm, rel=1e-12)
    assert a.invariant_alignment == pytest.approx(b.invariant_alignment, rel=1e-12)


def test_alignment_is_one_when_weights_match_the_feature_terms(rng):
    means = rng.standard_normal((C, N_FEAT))
    means -= means.mean(axis=0)
    H = np.repeat(means, M, axis=0)  # collapsed: S_W = 0, <h> = 0
    y = np.repeat(np.arange(C), M)
    kd, kc, kn = 2.0, 1.0, 0.2
    mu_c = (kd - kc) + M * (kc - kn)
    G = (M / mu_c) * means.T @ means  # W^T W must equal this
    w, V = np.linalg.eigh(G)
    W = (V[:, -C:] * np.sqrt(np.clip(w[-C:], 0, None))).T
    met = invariant_metrics(H, y, W, [kd, kc, kn])
    assert met.invariant_norm < 1e-10
    assert met.invariant_alignment == pytest.approx(1.0, abs=1e-12)


def _linear_input(n_per_class=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    model = MLP(6, C, depth=1, width=N_FEAT, activation="linear", generator=gen).double().eval()
    x = torch.randn(C * n_per_class + 2, 6, generator=gen, dtype=torch.float64)
    y = torch.tensor(list(np.arange(C).repeat(n_per_class)) + [0, 1])
    y = y[torch.randperm(y.numel(), generator=gen)]
    h = model.features(x)
    return ProbeInput(
        model=model,
        x=x,
        y=y,
        features=h.detach(),
        logits=model(x).detach(),
        classifier=model.classifier,
        num_classes=C,
    ), model


def test_probe_recovers_linear_feature_kernel_and_invariant():
    inp, model = _linear_input()
    out = InvariantProbe(per_class=3)(inp)
    y_np = inp.y.numpy()
    idx = np.concatenate([np.flatnonzero(y_np == c)[:3] for c in range(C)])
    x = inp.x.numpy()[idx]
    K = x @ x.T + 1.0  # Theta^h_pp of a linear layer with bias
    y = y_np[idx]
    same = (y[:, None] == y[None, :]) & ~np.eye(len(y), dtype=bool)
    diff = y[:, None] != y[None, :]
    assert out.scalars["ntk_kappa_d"] == pytest.approx(np.diag(K).mean(), rel=1e-10)
    assert out.scalars["ntk_kappa_c"] == pytest.approx(K[same].mean(), rel=1e-10)
    assert out.scalars["ntk_kappa_n"] == pytest.approx(K[diff].mean(), rel=1e-10)
    np.testing.assert_allclose(out.arrays["ntk_traced_features"], N_FEAT * K, rtol=1e-10)
    kap = [out.scalars[f"ntk_kappa_{s}"] for s in "dcn"]
    assert kap[0] > kap[1]
    ref = invariant_metrics(
        inp.features.numpy()[idx], y, model.classifier.weight.detach().numpy(), kap
    )
    assert out.scalars["invariant_norm"] == pytest.approx(ref.invariant_norm, rel=1e-12)
    np.testing.assert_allclose(out.arrays["invariant_gram_w"], ref.lhs)
    for key in ("ntk_gamma_d", "ntk_alignment_logits", "ntk_alignment_features"):
        assert np.isfinite(out.scalars[key])


def test_probe_is_registered():
    assert isinstance(make_probe("ntk_invariant", per_class=2), InvariantProbe)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda: invariant_metrics(
                np.ones((6, 2)), np.repeat([0, 1, 2], 2), np.ones((3, 2)), [1.0, 1.0, 0.0]
            ),
            "kappa_d - kappa_c",
        ),
        (
            lambda: invariant_metrics(
                np.ones((5, 2)), np.array([0, 0, 1, 1, 1]), np.ones((2, 2)), [2.0, 1.0, 0.0]
            ),
            "same count",
        ),
        (
            lambda: invariant_metrics(
                np.ones((4, 2)), np.array([0, 0, 1, 1]), np.ones((2, 3)), [2.0, 1.0, 0.0]
            ),
            "weight",
        ),
        (
            lambda: invariant_metrics(
                np.ones((4, 2)), np.array([0, 0, 1, 1]), np.ones((2, 2)), [2.0, np.nan, 0.0]
            ),
            "kappas",
        ),
        (lambda: InvariantProbe(per_class=1), "per_class"),
        (lambda: InvariantProbe(estimator="mean"), "estimator"),
    ],
)
def test_bad_input_is_rejected(call, match):
    with pytest.raises(ValueError, match=match):
        call()
