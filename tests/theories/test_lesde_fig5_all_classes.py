"""LE-SDE Fig. 5 draws every class and reports the relative distance per class (issue 19)."""

import json

import numpy as np
from matplotlib.colors import to_rgba

from ncdynamics import runs
from ncdynamics.theories.experiment import config_to_dict
from ncdynamics.theories.lesde.experiments import EXPERIMENTS
from ncdynamics.theories.lesde.experiments.fig5_leode_imitation import plot_fig5

K, T = 3, 60
KEYS = [("l", "L"), ("l", "l"), ("L", "L"), ("L", "l")]


def _inputs(rng):
    real = np.cumsum(rng.normal(size=(T, K, K)), axis=0)
    sims = {key: (real + rng.normal(size=real.shape), np.ones_like(real)) for key in KEYS}
    # a distinct RD per class and pairing, so that the titles and legends can be checked
    rds = {key: np.tile(0.01 * (1 + i) * (1 + np.arange(K)), (T, 1)) for i, key in enumerate(KEYS)}
    return real, sims, rds


def test_fig5_has_a_row_per_class_with_real_and_leode_logits(rng):
    real, sims, rds = _inputs(rng)
    fig = plot_fig5(real, sims, rds, tail=10)
    axes = fig.axes
    assert len(axes) == 3 * K
    for k in range(K):
        for col, est in enumerate(("l", "L")):
            ax = axes[3 * k + col]
            assert f"class {k}" in ax.get_title()
            assert f"{est}-est" in ax.get_title()
            # the class's terminal RD (mean over the last `tail` iterations) is in the title
            assert f"{rds[(est, 'L')][-1, k]:.3g}" in ax.get_title()
            lines = ax.get_lines()
            assert len(lines) == 2 * K  # K real logits and K LE-ODE means
            real_lines = [ln for ln in lines if ln.get_linestyle() == "-"]
            assert len(real_lines) == K
            np.testing.assert_allclose(real_lines[0].get_ydata(), real[:, k, 0])
            colours = {to_rgba(ln.get_color()) for ln in real_lines}
            assert len(colours) == K
            labels = [t.get_text() for t in ax.get_legend().get_texts()]
            assert any("LE-ODE" in lab for lab in labels)
        rd_ax = axes[3 * k + 2]
        assert f"class {k}" in rd_ax.get_title()
        assert len(rd_ax.get_lines()) == len(KEYS)
        labels = [t.get_text() for t in rd_ax.get_legend().get_texts()]
        for est, model in KEYS:
            want = f"{rds[(est, model)][-1, k]:.3g}"
            assert any(
                f"{model}-model" in lab and f"{est}-est" in lab and want in lab for lab in labels
            )


def test_fig5_summary_records_terminal_rd_per_class(tmp_path):
    spec = {s.name: s for s in EXPERIMENTS}["lesde.fig5"]
    cfg = spec.make_config("smoke")
    run = runs.create(
        tmp_path / "run", config=config_to_dict(cfg), seed=0, experiment=spec.name, preset="smoke"
    )
    spec.run(cfg, run, seed=0, progress=False)
    run.mark_completed()
    summary = json.loads((run.path / "summary.json").read_text())
    per_class = summary["terminal_rd_per_class"]
    assert set(per_class) == set(summary["terminal_rd"])
    for key, values in per_class.items():
        assert len(values) == 3
        assert np.isclose(np.nanmean(values), summary["terminal_rd"][key])


def test_fig5_rescales_the_l_estimator_imitation_on_logit_1(tmp_path, monkeypatch):
    # zjiayao/le_sde "LE-SDE Data Analysis.ipynb": viz_leode(..., 'I', align0=1) for the
    # l-estimator's rates, align0=0 for the L-estimator's (src/plotter.py line 240)
    from ncdynamics import experiments
    from ncdynamics.theories.lesde.experiments import fig5_leode_imitation as f5

    seen = []
    real = f5.rescale_to_real

    def spy(sim, means, **kw):
        seen.append(kw.get("logit", 0))
        return real(sim, means, **kw)

    monkeypatch.setattr(f5, "rescale_to_real", spy)
    experiments.run("lesde.fig5", "smoke", tmp_path / "r", progress=False)
    # (l, L) x (L-model, l-model) imitations, then the two real-start runs, in that order
    assert seen == [1, 1, 0, 0, 1, 0]
