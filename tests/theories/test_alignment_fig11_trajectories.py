"""Alignment Fig. 11 draws the trajectories of (a, b, w) for every dynamics (issue 19)."""

import numpy as np
from matplotlib.colors import to_rgba

from ncdynamics.theories.alignment.experiments.fig11_alternatives import plot_fig11
from ncdynamics.theories.alignment.model import VARIANTS


def _inputs(rng):
    epochs = np.arange(41, dtype=np.float64)
    measured = np.stack([np.exp(-epochs / 10), 1 - np.exp(-epochs / 5), 0.1 * epochs], axis=1)
    theories = {
        v: measured + 0.01 * (i + 1) * rng.normal(size=measured.shape)
        for i, v in enumerate(VARIANTS)
    }
    losses = {v: 0.5 * (i + 1) for i, v in enumerate(VARIANTS)}
    return epochs, measured, theories, losses


def test_fig11_has_a_trajectory_panel_per_observable_with_every_dynamics(rng):
    epochs, measured, theories, losses = _inputs(rng)
    fig = plot_fig11(epochs, measured, theories, losses, title="Default")
    traj_axes = fig.axes[:3]
    for col, ax in enumerate(traj_axes):
        lines = ax.get_lines()
        assert len(lines) == len(VARIANTS) + 1  # one line per dynamics plus the measured one
        labels = [ln.get_label() for ln in lines]
        assert sum("measured" in lab for lab in labels) == 1
        for v in VARIANTS:
            assert sum(v in lab for lab in labels) == 1
        measured_line = next(ln for ln in lines if "measured" in ln.get_label())
        np.testing.assert_allclose(measured_line.get_ydata(), measured[:, col])
        np.testing.assert_allclose(measured_line.get_xdata(), epochs)
        for v in VARIANTS:
            line = next(ln for ln in lines if v in ln.get_label())
            np.testing.assert_allclose(line.get_ydata(), theories[v][:, col])
        colours = {to_rgba(ln.get_color()) for ln in lines}
        assert len(colours) == len(lines)
    labels = (
        [t.get_text() for t in fig.legends[0].get_texts()]
        if fig.legends
        else [t.get_text() for t in traj_axes[0].get_legend().get_texts()]
    )
    for v in VARIANTS:  # the legend gives each dynamics' fit loss
        assert any(v in lab and f"{losses[v]:.3g}" in lab for lab in labels)


def test_fig11_has_the_fit_loss_bars_as_a_second_panel(rng):
    epochs, measured, theories, losses = _inputs(rng)
    fig = plot_fig11(epochs, measured, theories, losses, title="Default")
    bar_ax = fig.axes[3]
    heights = [p.get_height() for p in bar_ax.patches]
    assert len(heights) == len(VARIANTS)
    np.testing.assert_allclose(sorted(heights), sorted(losses.values()))
    ticks = [t.get_text() for t in bar_ax.get_xticklabels()]
    assert all(any(v in tick for tick in ticks) for v in VARIANTS)


def test_fig11_marks_the_papers_losses_only_when_given(rng):
    from ncdynamics.theories.alignment.experiments.fig11_alternatives import PAPER_ALT_LOSS

    epochs, measured, theories, losses = _inputs(rng)
    with_paper = plot_fig11(epochs, measured, theories, losses, title="d", paper=PAPER_ALT_LOSS)
    (ticks,) = [ln for ln in with_paper.axes[3].get_lines() if ln.get_label() == "paper"]
    np.testing.assert_allclose(ticks.get_ydata(), [PAPER_ALT_LOSS[v] for v in VARIANTS])
    without = plot_fig11(epochs, measured, theories, losses, title="s")
    assert not [ln for ln in without.axes[3].get_lines() if ln.get_label() == "paper"]
