"""Figures (matplotlib, PNG) and the self-contained HTML report of a run.

The figure functions return ``(name, matplotlib Figure)`` pairs, to show in a notebook or
save with ``run.save_figure(fig, name)``: :func:`metric_figures` (a run's scalar metrics,
one figure per family), :func:`comparison_figures` (several runs overlaid, seeds as bands),
:func:`class_means_figures` (recorded class means), :func:`kernel_figures` (the NTK probes'
kernels, block norms and alignment) and :func:`sweep_figures` (a sweep's summary);
:func:`overview_figure` is one small figure; :func:`write_atlas_report` draws the page of a
regime atlas. :func:`metric_groups` and
:func:`static_metrics` say how metrics are grouped into panels and which are only listed.
Display names and units of every metric come from :mod:`ncdynamics.report.labels`.

The writers return the path of what they wrote; :func:`write_report` and
:func:`write_comparison_report` return a :class:`Report`, a path that shows the report
inline in Jupyter. See docs/reports.md.
"""

from .atlas import write_atlas_report as write_atlas_report
from .comparison import write_comparison_report as write_comparison_report
from .confront import write_compare_report as write_compare_report
from .confront import write_forecast_report as write_forecast_report
from .confront import write_summary_report as write_summary_report
from .figures import class_means_figures as class_means_figures
from .figures import comparison_figures as comparison_figures
from .figures import metric_figures as metric_figures
from .figures import metric_groups as metric_groups
from .figures import overview_figure as overview_figure
from .figures import static_metrics as static_metrics
from .html import Report as Report
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
    "Report",
    "class_means_figures",
    "comparison_figures",
    "overview_figure",
    "static_metrics",
    "write_atlas_report",
    "write_comparison_report",
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
    "write_summary_report",
    "write_sweep_report",
]
