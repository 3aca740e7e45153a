"""LE-SDE Fig. 1's 3-D panel tells the classes apart by colour (issue 19)."""

import numpy as np

from ncdynamics.theories.lesde.experiments.fig1_logit_separation import NAMES, plot_fig1


def _figure(rng):
    T, K, S, R = 200, 3, 20, 4
    means = np.cumsum(rng.normal(size=(T, K, K)), axis=0)
    snaps = np.linspace(0, T - 1, S).astype(np.int64)
    labels = np.tile(np.arange(R) % K, (S, 1))
    proj = rng.normal(size=(S, R)).astype(np.float32)
    nu = np.array([1.0, -1.0, 0.0]) / np.sqrt(2)
    return plot_fig1(snaps, proj, labels, means, means + 0.1, nu, (0, 1)), means


def _class_scatters(ax):
    return {c.get_label(): c for c in ax.collections if c.get_label() in NAMES}


def test_3d_panel_has_one_coloured_scatter_per_class_and_a_legend(rng):
    fig, _ = _figure(rng)
    ax3 = fig.axes[1]
    assert ax3.name == "3d"
    legend = [t.get_text() for t in ax3.get_legend().get_texts()]
    assert set(NAMES) <= set(legend)
    scatters = _class_scatters(ax3)
    assert set(scatters) == set(NAMES)
    rgb = {
        name: {tuple(row) for row in np.round(sc.get_facecolors()[:, :3], 6)}
        for name, sc in scatters.items()
    }
    for name in NAMES:  # one colour per class ...
        assert len(rgb[name]) == 1
    assert len(set.union(*rgb.values())) == len(NAMES)  # ... and distinct across classes


def test_3d_panel_shows_time_by_opacity(rng):
    fig, _ = _figure(rng)
    scatters = _class_scatters(fig.axes[1])
    assert set(scatters) == set(NAMES)
    for sc in scatters.values():
        alpha = sc.get_facecolors()[:, 3]
        assert len(alpha) > 2
        assert np.all(np.diff(alpha) >= 0) and alpha[-1] > 2 * alpha[0]
