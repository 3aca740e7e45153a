"""Simplex-ETF geometry shared by the theories (and by the NC2 probe).

The one implementation lives in :mod:`ncdynamics._simplex`, below the probes, so that the
collapse metrics and every theory use the same frame. See that module for the three
normalisations and which paper uses which.
"""

from .._simplex import centering_matrix as centering_matrix
from .._simplex import etf_gram as etf_gram
from .._simplex import simplex_etf as simplex_etf

__all__ = ["centering_matrix", "etf_gram", "simplex_etf"]
