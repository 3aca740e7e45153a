"""Figures (matplotlib, PNG) and the self-contained HTML report of a run."""

from .confront import write_compare_report as write_compare_report
from .confront import write_forecast_report as write_forecast_report
from .figures import metric_figures as metric_figures
from .html import write_figures as write_figures
from .html import write_report as write_report
from .index import IndexEntry as IndexEntry
from .index import find_entries as find_entries
from .index import write_index as write_index
from .sweep import sweep_figures as sweep_figures
from .sweep import write_sweep_report as write_sweep_report

__all__ = [
    "IndexEntry",
    "find_entries",
    "metric_figures",
    "sweep_figures",
    "write_figures",
    "write_index",
    "write_report",
    "write_compare_report",
    "write_forecast_report",
    "write_sweep_report",
]
