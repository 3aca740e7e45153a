"""Figures (matplotlib, PNG) and the self-contained HTML report of a run.

The figure functions return ``(name, matplotlib Figure)`` pairs, to show in a notebook or
save with ``run.save_figure(fig, name)``: :func:`metric_figures` (a run's scalar metrics,
one figure per family), :func:`metric_groups` (how metrics are grouped into panels),
:func:`kernel_figures` (the NTK probes' kernels, block norms and alignment) and
:func:`sweep_figures` (a sweep's summary). See docs/runs.md.
"""

from .confront import write_compare_report as write_compare_report
from .confront import write_forecast_report as write_forecast_report
from .figures import metric_figures as metric_figures
from .figures import metric_groups as metric_groups
from .html import write_figures as write_figures
from .html import write_report as write_report
from .index import IndexEntry as IndexEntry
from .index import find_entries as find_entries
from .index import write_index as write_index
from .kernels import kernel_figures as kernel_figures
from .sweep import sweep_figures as sweep_figures
from .sweep import write_sweep_report as write_sweep_report

__all__ = [
    "IndexEntry",
    "find_entries",
    "kernel_figures",
    "metric_figures",
    "metric_groups",
    "sweep_figures",
    "write_figures",
    "write_index",
    "write_report",
    "write_compare_report",
    "write_forecast_report",
    "write_sweep_report",
]
