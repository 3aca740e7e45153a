"""Figures (matplotlib, PNG) and the self-contained HTML report of a run."""

from .figures import metric_figures as metric_figures
from .html import write_figures as write_figures
from .html import write_report as write_report

__all__ = ["metric_figures", "write_figures", "write_report"]
