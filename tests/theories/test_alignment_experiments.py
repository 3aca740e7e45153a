"""Training recorder, analysis helpers and experiments of the alignment theory (O17 slow)."""

import numpy as np
import pytest
import torch

from ncdynamics.data import load
from ncdynamics.probes.geometry import pair_observables, squared_distances
from ncdynamics.theories.alignment.experiments.fig07_blobs import classical_mds, collapse_index
from ncdynamics.theories.alignment.experiments.trials import net_config
from ncdynamics.theories.alignment.training import TABLE1, build_net, train_recording

TINY = net_config("shallow", width=16, epochs=40)


def _two_point():
    ds = load("two-point")
    return ds.x_train, ds.info["targets_train"]


def test_records_match_direct_measurement_at_start_and_end():
    x, t = _two_point()
    h = train_recording(TINY, x, t, seed=3, keep_model=True)
    fresh = build_net(TINY, 1, 1, seed=3)
    start = pair_observables(fresh, torch.from_numpy(x), t)
    end = pair_observables(h.model, torch.from_numpy(x), t)
    np.testing.assert_allclose([h.a[0], h.b[0], h.w[0]], [start.a, start.b, start.w], rtol=1e-5)
    np.testing.assert_allclose([h.a[-1], h.b[-1], h.w[-1]], [end.a, end.b, end.w], rtol=1e-5)
    assert h.pair_loss[-1] == pytest.approx(end.loss, rel=1e-5)
    assert h.a.shape == (41,) and h.state.shape == (41, 3)
    assert h.X == pytest.approx(0.25) and h.Y == pytest.approx(1.0)


def test_half_mse_at_double_rate_equals_mse():
    x, t = _two_point()
    h1 = train_recording(TINY, x, t, seed=0, loss="mse", lr=0.01)
    h2 = train_recording(TINY, x, t, seed=0, loss="half-mse", lr=0.02)
    np.testing.assert_allclose(h1.state, h2.state, rtol=1e-4, atol=1e-9)


def test_same_seed_same_numbers_with_dropout_and_minibatches():
    x, t = _two_point()
    cfg = net_config("dropout", width=16, depth=2, epochs=10)
    h1 = train_recording(cfg, x, t, seed=5, batch_size=1)
    h2 = train_recording(cfg, x, t, seed=5, batch_size=1)
    np.testing.assert_array_equal(h1.state, h2.state)


def test_all_layer_recording_matches_single_layer():
    x, t = _two_point()
    cfg = net_config("default", width=16, depth=4, epochs=5)
    h_all = train_recording(cfg, x, t, seed=1, layer="all")
    h_two = train_recording(cfg, x, t, seed=1, layer=2)
    assert h_all.a.shape == (6, 4)
    np.testing.assert_allclose(h_all.a[:, 1], h_two.a, rtol=1e-6)


def test_table1_rows_follow_the_paper():
    assert len(TABLE1) == 15
    assert TABLE1["default"].depth == 20 and TABLE1["default"].width == 500
    assert TABLE1["swish"].gain == 1.7 and TABLE1["elu"].lr == 0.00045
    assert TABLE1["convolution"].conv and TABLE1["dropout"].dropout == 0.1


def test_classical_mds_recovers_planar_distances(rng):
    z = rng.normal(size=(20, 2))
    d2 = squared_distances(z)
    np.testing.assert_allclose(squared_distances(classical_mds(d2)), d2, atol=1e-10)


def test_collapse_index_extremes(rng):
    rel, irr = rng.uniform(size=200), rng.uniform(size=200)
    W = rng.normal(size=(1, 8))
    assert collapse_index(rel[:, None] * W, rel, irr) < 1e-2
    assert collapse_index(irr[:, None] * W, rel, irr) > 0.99


def test_bad_training_arguments_are_rejected():
    x, t = _two_point()
    with pytest.raises(ValueError, match="optimizer"):
        train_recording(TINY, x, t, seed=0, optimizer="rmsprop")
    with pytest.raises(ValueError, match="targets"):
        train_recording(TINY, x, t[:1], seed=0)
    with pytest.raises(ValueError, match="pair"):
        train_recording(TINY, x, t, seed=0, pair=(0, 2))


def test_universality_smoke_writes_fit_and_claims(tmp_path):
    from ncdynamics.experiments._registry import run

    r = run("alignment.universality", "smoke", out=tmp_path / "r", progress=False)
    s = r.summary
    arch = s["architectures"]["shallow"]
    assert arch["inv_tau_h"] > 0 and arch["inv_tau_y"] > 0
    assert np.isfinite(arch["fit_loss_49"])
    assert len(s["claims"]) == 1 and isinstance(s["claims"][0]["held"], bool)
    assert any(p.name.startswith("fig2") for p in r.figures())


@pytest.mark.slow
def test_o17_shallow_final_distance_follows_theory(tmp_path):
    # O17: Pearson(final a, eq. 10) > 0.9 and median actual/predicted in [0.7, 1.4]
    from ncdynamics.experiments._registry import run

    r = run(
        "alignment.final-distance",
        "cpu",
        out=tmp_path / "r",
        progress=False,
        archs=("shallow",),
        n_fit_seeds=2,
    )
    arch = r.summary["architectures"]["shallow"]
    assert arch["pearson_r"] > 0.9
    assert 0.7 <= arch["median_actual_over_predicted"] <= 1.4


@pytest.mark.slow
@pytest.mark.xfail(
    reason="measured at the paper's settings: the low-init blob net is still on "
    "the plateau after 1500 epochs (collapse index 0.499); see docs",
    strict=False,
)
def test_o17_blobs_low_init_collapse(tmp_path):
    from ncdynamics.experiments._registry import run

    r = run("alignment.blobs", "cpu", out=tmp_path / "r", progress=False, configs=("blobs-low",))
    c = r.summary["configs"]["blobs-low"]
    assert max(c["collapse_index_ctx0"], c["collapse_index_ctx1"]) < 0.2


@pytest.mark.slow
@pytest.mark.xfail(
    reason="measured at the paper's settings: the low-init XOR net is still on "
    "the plateau after 1000 epochs (L = 0.125); see docs",
    strict=False,
)
def test_o17_xor_rich_regime_merges_same_output_pairs(tmp_path):
    # O17: same-output distances < 0.1 x different-output distances (20 x 500, low init);
    # rho does not enter this check, so it is fixed instead of fitted.
    from ncdynamics.experiments._registry import run

    r = run(
        "alignment.xor",
        "cpu",
        out=tmp_path / "r",
        progress=False,
        configs=("xor-low",),
        rho=1.0,
        workers=1,
    )
    c = r.summary["configs"]["xor-low"]
    assert max(c["final_same"]) < 0.1 * min(c["final_diff"])


def test_digits_experiment_runs_on_mnist_files_when_given(tmp_path):
    import gzip

    from ncdynamics import experiments

    rng = np.random.default_rng(0)
    raw = tmp_path / "mnist"
    raw.mkdir()
    for prefix, n in (("train", 40), ("t10k", 10)):
        labels = np.arange(n) % 10
        images = rng.integers(0, 256, (n, 28, 28)).astype(np.uint8)
        for kind, arr in (("images-idx3", images), ("labels-idx1", labels.astype(np.uint8))):
            header = bytes([0, 0, 8, arr.ndim]) + b"".join(
                int(d).to_bytes(4, "big") for d in arr.shape
            )
            with gzip.open(raw / f"{prefix}-{kind}-ubyte.gz", "wb") as fh:
                fh.write(header + arr.tobytes())
    run = experiments.run(
        "alignment.digits", preset="smoke", out=tmp_path / "run", progress=False, root=str(raw)
    )
    assert run.summary["dataset"] == "mnist"
