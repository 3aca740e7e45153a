"""Sweep figures: labelled panels, NC1 on a log axis, grid values as sensible ticks."""

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ncdynamics.report import sweep_figures


def _table(grid_key, values, seeds=2):
    rows = []
    for v in values:
        for s in range(seeds):
            rows.append(
                {
                    "run_id": f"{grid_key}={v}_seed={s}",
                    grid_key: v,
                    "seed": s,
                    "status": "completed",
                    "summary.table.mse.nc/nc1": 500.0 / float(v) ** 2 * (1 + s),
                    "summary.table.cross-entropy.nc/nc1": 5.0 / float(v) * (1 + s),
                    "summary.table.mse.epochs": 10,
                    "final.mse/test/accuracy": 0.5 + 0.01 * float(v) + 0.001 * s,
                }
            )
    return pd.DataFrame(rows)


def test_integer_grid_values_are_categories_and_nc1_is_log():
    ((name, fig),) = sweep_figures(_table("width", [16, 24, 32]), ["width"])
    assert name == "width"
    axes = {ax.get_title(): ax for ax in fig.axes if ax.get_visible()}
    assert set(axes) == {"NC1: within-class variability", "Test accuracy"}  # epochs: constant
    nc1 = axes["NC1: within-class variability"]
    assert nc1.get_yscale() == "log" and nc1.get_xlabel() == "width"
    assert [t.get_text() for t in nc1.get_xticklabels()] == ["16", "24", "32"]
    assert list(nc1.get_xticks()) == [0, 1, 2]
    labels = sorted(t.get_text() for t in nc1.get_legend().get_texts())
    assert labels == ["cross-entropy", "mse"]
    plt.close(fig)


def test_float_grid_values_get_a_tick_at_each_value_and_a_log_axis_when_wide():
    ((_, fig),) = sweep_figures(_table("lr", [0.001, 0.01, 0.1]), ["lr"])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert np.allclose(ax.get_xticks(), [0.001, 0.01, 0.1])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.001", "0.01", "0.1"]
    assert len(ax.xaxis.get_minorticklocs()) == 0
    plt.close(fig)
