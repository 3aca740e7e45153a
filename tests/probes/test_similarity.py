"""Representation similarity (linear CKA, debiased CKA, Procrustes) and its Recorder probe.

Oracles: invariance to rotation, isotropic scaling and translation; a value computed by hand
(one feature each: CKA is the squared correlation); slow references written from the
definitions (HSIC with centring matrices, the unbiased HSIC as an explicit U-statistic over
4-tuples, Procrustes through scipy's orthogonal_procrustes).
"""

import itertools

import numpy as np
import pytest
import torch
from scipy.linalg import orthogonal_procrustes
from scipy.stats import ortho_group
from torch import nn

from ncdynamics.probes import (
    SimilarityProbe,
    debiased_cka,
    linear_cka,
    make_probe,
    procrustes_distance,
    representation_similarity,
)
from ncdynamics.training import Recorder

RTOL = 1e-10  # float64 throughout

FUNCTIONS = [linear_cka, debiased_cka, procrustes_distance]
IDENTICAL = {linear_cka: 1.0, debiased_cka: 1.0, procrustes_distance: 0.0}


# ---------------------------------------------------------------------------- references
def _hsic_biased(k, l_):
    n = k.shape[0]
    h = np.eye(n) - np.ones((n, n)) / n
    return np.trace(k @ h @ l_ @ h) / (n - 1) ** 2


def reference_linear_cka(x, y):
    """[1]: CKA with linear kernels, HSIC = tr(K H L H) / (n-1)^2 with H the centring matrix."""
    k, l_ = x @ x.T, y @ y.T
    return _hsic_biased(k, l_) / np.sqrt(_hsic_biased(k, k) * _hsic_biased(l_, l_))


def _hsic_u_statistic(k, l_):
    """The unbiased HSIC as the U-statistic over ordered distinct 4-tuples (i, j, q, r)."""
    n = k.shape[0]
    total, count = 0.0, 0
    for i, j, q, r in itertools.permutations(range(n), 4):
        total += k[i, j] * l_[i, j] + k[i, j] * l_[q, r] - 2.0 * k[i, j] * l_[i, q]
        count += 1
    return total / count


def reference_debiased_cka(x, y):
    k, l_ = x @ x.T, y @ y.T  # not centred: the estimator must not depend on it
    return _hsic_u_statistic(k, l_) / np.sqrt(_hsic_u_statistic(k, k) * _hsic_u_statistic(l_, l_))


def reference_procrustes(x, y):
    xc, yc = x - x.mean(0), y - y.mean(0)
    xn, yn = xc / np.linalg.norm(xc), yc / np.linalg.norm(yc)
    d = max(xn.shape[1], yn.shape[1])
    xp = np.pad(xn, ((0, 0), (0, d - xn.shape[1])))
    yp = np.pad(yn, ((0, 0), (0, d - yn.shape[1])))
    rot, _ = orthogonal_procrustes(xp, yp)
    return np.linalg.norm(xp @ rot - yp) ** 2


# ---------------------------------------------------------------------------- oracles
@pytest.mark.parametrize("fn", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_measures_are_invariant_to_rotation_scaling_and_translation(fn, seed):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(40, 6))
    q = ortho_group.rvs(6, random_state=seed)
    y = 3.7 * x @ q + rng.normal(size=6)
    assert fn(x, y) == pytest.approx(IDENTICAL[fn], abs=1e-10)
    z = rng.normal(size=(40, 9))  # and a second pair: the value moves with neither
    base = fn(x, z)
    assert fn(2.5 * x @ q - 1.0, 0.1 * z + 4.0) == pytest.approx(base, rel=1e-9, abs=1e-12)


def test_one_feature_each_gives_the_squared_correlation():
    # x = 0,1,2,3 and y = 0,1,0,1: centred x = (-3,-1,1,3)/2, y = (-1,1,-1,1)/2,
    # x.y = 1, |x|^2 = 5, |y|^2 = 1, so CKA = 1/5 and Procrustes = 2 - 2/sqrt(5)
    x, y = [[0.0], [1.0], [2.0], [3.0]], [[0.0], [1.0], [0.0], [1.0]]
    assert linear_cka(x, y) == pytest.approx(0.2, rel=RTOL)
    assert procrustes_distance(x, y) == pytest.approx(2.0 - 2.0 / np.sqrt(5.0), rel=RTOL)


@pytest.mark.parametrize("shapes", [(7, 3, 5), (9, 4, 4), (6, 8, 2)])
def test_measures_match_slow_references(rng, shapes):
    n, d1, d2 = shapes
    x = rng.normal(size=(n, d1)) + 1.5
    y = x[:, :1] * rng.normal(size=(1, d2)) + rng.normal(size=(n, d2)) - 0.7
    np.testing.assert_allclose(linear_cka(x, y), reference_linear_cka(x, y), rtol=RTOL)
    np.testing.assert_allclose(debiased_cka(x, y), reference_debiased_cka(x, y), rtol=1e-9)
    np.testing.assert_allclose(procrustes_distance(x, y), reference_procrustes(x, y), atol=1e-10)


def test_debiased_cka_removes_the_bias_of_wide_random_representations(rng):
    # independent representations, 20 samples, width 500: linear CKA is far from 0, the
    # debiased one is near 0 (its expectation); sd of 30 repetitions bounds the check
    lin, deb = [], []
    for _ in range(30):
        x, y = rng.normal(size=(20, 500)), rng.normal(size=(20, 500))
        lin.append(linear_cka(x, y))
        deb.append(debiased_cka(x, y))
    assert np.mean(lin) > 0.7
    assert abs(np.mean(deb)) < 4 * np.std(deb) / np.sqrt(len(deb)) + 1e-3


def test_float32_tensors_are_accumulated_in_float64(rng):
    x = rng.normal(size=(30, 4))
    y = x @ ortho_group.rvs(4, random_state=3)
    xt, yt = torch.from_numpy(x).float(), torch.from_numpy(y).float()
    assert linear_cka(xt, yt) == pytest.approx(linear_cka(xt.double(), yt.double()), rel=1e-12)
    assert representation_similarity(xt, yt) == pytest.approx(
        {"cka": 1.0, "cka_debiased": 1.0, "procrustes": 0.0}, abs=1e-6
    )
    assert list(representation_similarity(x, y, measures=["procrustes"])) == ["procrustes"]


@pytest.mark.parametrize(
    "x, y, exc, match",
    [
        (np.ones((5,)), np.ones((5, 2)), ValueError, r"`x` must have shape \(n_samples"),
        (np.ones((5, 2, 1)), np.ones((5, 2)), ValueError, "Flatten each sample"),
        (np.zeros((5, 2)), np.ones((6, 2)), ValueError, "same number of rows"),
        (np.ones((1, 2)), np.ones((1, 2)), ValueError, "at least 2 samples"),
        (np.ones((5, 0)), np.ones((5, 2)), ValueError, "at least one feature"),
        (np.array([[np.nan, 1.0]] * 5), np.ones((5, 2)), ValueError, "`x` must be finite"),
        (np.arange(10.0).reshape(5, 2), np.ones((5, 2)), ValueError, "`y` must vary"),
        (np.array([["a"]] * 3), np.ones((3, 1)), TypeError, "real numeric"),
        (np.ones((3, 2), dtype=complex), np.ones((3, 1)), TypeError, "real numeric"),
    ],
)
def test_bad_input_is_rejected_by_name(x, y, exc, match):
    with pytest.raises(exc, match=match):
        linear_cka(x, y)


def test_debiased_cka_needs_four_samples_and_measures_are_checked(rng):
    with pytest.raises(ValueError, match="at least 4 samples"):
        debiased_cka(rng.normal(size=(3, 2)), rng.normal(size=(3, 2)))
    with pytest.raises(ValueError, match="`measures` must be one of"):
        representation_similarity(np.eye(4), np.eye(4), measures=["cca"])
    with pytest.raises(TypeError, match="`measures` must be a tuple or list"):
        representation_similarity(np.eye(4), np.eye(4), measures="cka")
    with pytest.raises(ValueError, match="at least one"):
        representation_similarity(np.eye(4), np.eye(4), measures=[])


# ---------------------------------------------------------------------------- the probe
class ListSink:
    def __init__(self):
        self.logged = []

    def log(self, step, values):
        self.logged.append((step, dict(values)))

    def save_array(self, name, step, array):
        return name

    def flush(self):
        pass


def _net():
    g = torch.Generator().manual_seed(0)
    net = nn.Sequential(nn.Linear(5, 16), nn.ReLU(), nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 3))
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=g) * 0.5)
    return net


def _probe_set(rng, n=30):
    return rng.normal(size=(n, 5)).astype(np.float32), np.arange(n) % 3


def test_probe_against_the_reference_step_starts_at_identity_then_moves(rng):
    x, y = _probe_set(rng)
    net, sink = _net(), ListSink()
    probe = SimilarityProbe(layer="2")
    rec = Recorder(sink, x, y, probes=[probe], layer="4")
    rec.record(net, 0)
    first = sink.logged[-1][1]
    assert first["similarity/cka"] == pytest.approx(1.0, abs=1e-12)
    assert first["similarity/procrustes"] == pytest.approx(0.0, abs=1e-12)
    with torch.no_grad():
        net[2].weight.add_(torch.randn(net[2].weight.shape, generator=torch.Generator()))
    rec.record(net, 1)
    later = sink.logged[-1][1]
    with torch.no_grad():
        h = net[:3](torch.from_numpy(x)).double().numpy()
    expected = representation_similarity(h, probe.reference)
    assert later["similarity/cka"] == pytest.approx(expected["cka"], rel=1e-12)
    assert later["similarity/cka"] < 0.999 and later["similarity/procrustes"] > 1e-3


def test_probe_compares_two_layers_and_defaults_to_the_features(rng):
    x, y = _probe_set(rng)
    net, sink = _net(), ListSink()
    probes = [
        SimilarityProbe(layer="1", other="3", key="l1_l3", measures=("cka",)),
        make_probe("similarity", key="feat"),
    ]
    rec = Recorder(sink, x, y, probes=probes, layer="4")
    rec.record(net, 0)
    logged = sink.logged[-1][1]
    xt = torch.from_numpy(x)
    with torch.no_grad():
        h1, h3 = net[:2](xt).double().numpy(), net[:4](xt).double().numpy()
    assert logged["l1_l3/cka"] == pytest.approx(linear_cka(h1, h3), rel=1e-12)
    assert "l1_l3/procrustes" not in logged
    assert logged["feat/cka"] == pytest.approx(1.0, abs=1e-12)  # the features against step 0


def test_probe_reference_step_waits_for_the_first_record_at_or_after_it(rng):
    x, y = _probe_set(rng)
    net, sink = _net(), ListSink()
    rec = Recorder(sink, x, y, probes=[SimilarityProbe(reference_step=2)], layer="4")
    for step in (0, 1, 3, 4):
        rec.record(net, step)
    assert [("similarity/cka" in v) for _, v in sink.logged] == [False, False, True, True]


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        ({"other": "1", "reference_step": 0}, ValueError, "Give one"),
        ({"reference_step": -1}, ValueError, "reference_step"),
        ({"key": ""}, ValueError, "`key` must be a non-empty str"),
        ({"layer": 3}, TypeError, "`layer` must be a module name"),
        ({"other": ""}, TypeError, "`other` must be a module name"),
        ({"measures": ("cka", "svcca")}, ValueError, "`measures` must be one of"),
    ],
)
def test_probe_rejects_bad_options(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        SimilarityProbe(**kwargs)


def test_probe_with_an_unknown_layer_lists_the_modules(rng):
    x, y = _probe_set(rng)
    rec = Recorder(ListSink(), x, y, probes=[SimilarityProbe(layer="fc9")], layer="4")
    with pytest.raises(ValueError, match="Modules: 0, 1, 2, 3, 4"):
        rec.record(_net(), 0)
