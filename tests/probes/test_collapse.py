import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import ortho_group

from ncdynamics.probes import CollapseAccumulator, collapse_metrics

SCALE_FREE = (
    "nc1",
    "cdnv",
    "nc2_equinorm",
    "nc2_equiangular",
    "nc2_maxangle",
    "nc2_etf",
    "nc3",
    "nc4",
)


def etf_means(C, d, r=1.0, rng=None):
    m = np.eye(C) - 1.0 / C
    m = m / np.linalg.norm(m, axis=1, keepdims=True) * r  # (C, C), rows of norm r
    q = (
        ortho_group.rvs(d, random_state=0)[:C]
        if rng is None
        else ortho_group.rvs(d, random_state=rng)[:C]
    )
    return m @ q  # (C, d)


def noisy_features(rng, C=4, d=12, n=50, sigma=0.1, r=1.0):
    mu = etf_means(C, d, r)
    y = np.repeat(np.arange(C), n)
    return mu[y] + sigma * rng.standard_normal((y.size, d)), y, mu


def test_exact_simplex_etf_with_zero_spread_gives_zero():
    C, d = 5, 9
    mu = etf_means(C, d, 2.0)
    y = np.repeat(np.arange(C), 3)
    m = collapse_metrics(mu[y], y, weight=3.0 * mu, bias=np.zeros(C))
    for key in (
        "nc1",
        "nc1_std",
        "cdnv",
        "nc2_equinorm",
        "nc2_equiangular",
        "nc2_maxangle",
        "nc2_etf",
        "nc3",
        "nc3_papyan",
        "nc4",
    ):
        assert abs(m[key]) < 1e-12, key


def test_nc1_matches_closed_form_for_etf_means_plus_isotropic_noise(rng):
    C, d, n, sigma, r = 4, 10, 5000, 0.3, 2.0
    h, y, _ = noisy_features(rng, C, d, n, sigma, r)
    m = collapse_metrics(h, y)
    expected = sigma**2 * (C - 1) ** 2 / (C * r**2)
    assert m["nc1"] == pytest.approx(expected, rel=0.03)
    assert m["within_trace"] == pytest.approx(d * sigma**2, rel=0.02)
    assert m["nc1_std"] == pytest.approx(sigma, rel=0.02)
    # without the /C switch the value is C times larger
    assert collapse_metrics(h, y, nc1_divide_by_classes=False)["nc1"] == pytest.approx(C * m["nc1"])


def test_metrics_are_invariant_to_rotation_and_scaling(rng):
    h, y, mu = noisy_features(rng)
    w = mu + 0.05 * rng.standard_normal(mu.shape)
    base = collapse_metrics(h, y, w)
    q = ortho_group.rvs(h.shape[1], random_state=1)
    turned = collapse_metrics(7.0 * h @ q.T, y, w @ q.T)
    for key in SCALE_FREE:
        assert turned[key] == pytest.approx(base[key], rel=1e-9, abs=1e-12), key
    assert turned["nc1_std"] != pytest.approx(base["nc1_std"])  # per-feature std is not


@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(4))))
def test_metrics_are_invariant_to_class_relabelling(perm):
    rng = np.random.default_rng(7)
    h, y, mu = noisy_features(rng, C=4)
    w = mu + 0.1 * rng.standard_normal(mu.shape)
    perm = np.array(perm)
    base = collapse_metrics(h, y, w)
    w_perm = np.empty_like(w)
    w_perm[perm] = w
    moved = collapse_metrics(h, perm[y], w_perm)
    for key in SCALE_FREE + ("nc1_std",):
        assert moved[key] == pytest.approx(base[key], rel=1e-9, abs=1e-12), key


def test_streaming_accumulator_matches_one_shot_to_1e_10(rng):
    h, y, mu = noisy_features(rng, C=5, d=16, n=400, sigma=0.5)
    one_shot = collapse_metrics(h, y, mu, np.zeros(5))
    acc = CollapseAccumulator(5, weight=mu, bias=np.zeros(5))
    order = rng.permutation(y.size)
    chunks = np.array_split(order, 13)
    for idx in chunks:
        acc.update(h[idx], y[idx])
    for idx in chunks:
        acc.update_nc4(torch.from_numpy(h[idx]), torch.from_numpy(y[idx]))
    streamed = acc.compute()
    for key, value in one_shot.items():
        assert streamed[key] == pytest.approx(value, rel=1e-10, abs=1e-13), key


def test_float32_features_stay_accurate_near_collapse(rng):
    # class means 1e3 times the spread: raw second moments would lose NC1 in float32
    h, y, _ = noisy_features(rng, C=4, d=8, n=3000, sigma=1e-3, r=1.0)
    h = h + 5.0  # a large common offset, as after a ReLU
    exact = collapse_metrics(h, y)
    single = collapse_metrics(h.astype(np.float32), y)
    assert single["nc1"] == pytest.approx(exact["nc1"], rel=1e-3)


def test_nc4_counts_disagreement_with_nearest_class_mean(rng):
    h, y, mu = noisy_features(rng, C=3, d=6, n=40, sigma=0.01)
    assert collapse_metrics(h, y, mu)["nc4"] == 0.0
    assert collapse_metrics(h, y, -mu)["nc4"] == 1.0


@pytest.mark.parametrize(
    ("args", "kwargs", "exc", "match"),
    [
        ((np.full((6, 2), np.nan), np.array([0, 0, 0, 1, 1, 1])), {}, ValueError, "finite"),
        ((np.full((6, 2), np.inf), np.array([0, 0, 0, 1, 1, 1])), {}, ValueError, "finite"),
        ((np.full((6, 2), 1e308), np.array([0, 0, 0, 1, 1, 1])), {}, ValueError, "overflow"),
        (
            (np.ones((6, 2)), np.array([0, 0, 0, 1, 1, 7])),
            {"num_classes": 2},
            ValueError,
            "num_classes=2",
        ),
        ((np.ones((6, 2)), np.array([0, 0, 0, 0, 0, 1])), {}, ValueError, "class 1 has 1"),
        ((np.ones((6, 2)), np.array([0, 1, 0, 1])), {}, ValueError, "length 6"),
        (
            (np.ones((6, 2)), np.array([0, 0, 0, 1, 1, 1]), np.ones((2, 3))),
            {},
            ValueError,
            "3 columns|2 columns|one per feature",
        ),
        (
            (np.ones((6, 2)), np.array([0, 0, 0, 1, 1, 1]), np.ones((3, 2))),
            {"num_classes": 2},
            ValueError,
            "num_classes=2",
        ),
        ((np.ones(6), np.array([0, 0, 0, 1, 1, 1])), {}, ValueError, "2 dimension"),
    ],
)
def test_bad_input_is_rejected(args, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        collapse_metrics(*args, **kwargs)


def test_empty_accumulator_refuses_to_compute():
    with pytest.raises(ValueError, match="no features were added"):
        CollapseAccumulator(3).compute()


def test_degenerate_geometry_gives_inf_or_nan_without_warnings():
    import warnings

    h = np.ones((6, 3))  # every class has the same mean: separation is undefined
    y = np.repeat(np.arange(3), 2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        m = collapse_metrics(h, y, weight=np.zeros((3, 3)))
    assert not np.isfinite(m["cdnv"]) and not np.isfinite(m["nc3"])
    assert m["nc1_std"] == 0.0


def test_collapse_probe_reuses_labels_only_while_they_are_equal(rng):
    from ncdynamics.probes import ProbeInput, make_probe

    h, y, mu = noisy_features(rng, C=4, d=12, n=30, sigma=0.3)
    probe = make_probe("collapse")
    labels = torch.from_numpy(y.copy())

    def record():
        inp = ProbeInput(model=None, x=None, y=labels, features=torch.from_numpy(h),
                         logits=None, classifier=None, num_classes=4)  # fmt: skip
        return probe(inp).scalars["nc/nc1"]

    assert record() == pytest.approx(collapse_metrics(h, y)["nc1"], rel=1e-12)
    labels[:10] = 3  # in place: the cached labels must not be used
    expected = collapse_metrics(h, labels.numpy())["nc1"]
    assert record() == pytest.approx(expected, rel=1e-12)
    assert expected != pytest.approx(collapse_metrics(h, y)["nc1"], rel=1e-3)


EMPTY = np.empty((0, 3))


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: collapse_metrics(EMPTY, np.empty(0, int)), "`features` must hold at least one"),
        (lambda: collapse_metrics(EMPTY, np.empty(0, int), np.ones((2, 3))), "`features`"),
        (lambda: collapse_metrics(np.ones((4, 3)), np.empty(0, int)), "`labels`"),
        (lambda: collapse_metrics(np.ones((4, 0)), np.array([0, 0, 1, 1])), "`features`.*column"),
        (lambda: CollapseAccumulator(2).update(EMPTY, np.empty(0, int)), "`features`"),
        (lambda: CollapseAccumulator(2).update(np.ones((4, 0)), [0, 0, 1, 1]), "column"),
    ],
)
def test_empty_arrays_are_refused_in_one_line(call, match):
    with pytest.raises(ValueError, match=match) as info:
        call()
    assert "\n" not in str(info.value)


@pytest.mark.parametrize("n_features", [3, 512])
def test_a_huge_label_is_refused_before_class_buffers_are_allocated(n_features):
    h = np.ones((4, n_features))
    y = np.array([0, 0, 1, 10**9])
    with pytest.raises(
        ValueError, match=r"1000000001 classes \(largest label 1000000000\).*GiB"
    ) as info:
        collapse_metrics(h, y)
    assert "\n" not in str(info.value)


def test_an_accumulator_for_a_huge_class_count_is_refused():
    with pytest.raises(ValueError, match=r"1000000000 classes.*GiB"):
        CollapseAccumulator(10**9)


@pytest.mark.parametrize("power", [-1000, -600])
def test_features_near_the_ends_of_float64_give_the_metrics_of_their_shape(power):
    """Features of size ~1e-301: their squares leave float64, yet every scale-free metric
    is that of the same features at size ~1, and the traces are the exact float64 rounding
    of theirs (0), never NaN without a word."""
    import numpy as np

    from ncdynamics.probes import collapse_metrics

    rng = np.random.default_rng(0)
    f = rng.normal(size=(60, 5))
    y = np.repeat(np.arange(3), 20)
    w, b = rng.normal(size=(3, 5)), rng.normal(size=3)
    s = 2.0**power
    want = collapse_metrics(f, y, w, b)
    got = collapse_metrics(f * s, y, w, b * s)
    for key in want:
        if key in ("within_trace", "between_trace"):
            assert got[key] == want[key] * s * s, key
        elif key == "nc1_std":
            np.testing.assert_allclose(got[key], want[key] * s, rtol=1e-12)
        else:
            np.testing.assert_allclose(got[key], want[key], rtol=1e-10, err_msg=key)
