"""Measurements of a network: pure functions plus streaming accumulators and Recorder probes.

No training and no files here: probes turn features, labels, kernels and models into numbers.
"""

from ._base import Probe as Probe
from ._base import ProbeInput as ProbeInput
from ._base import ProbeOutput as ProbeOutput
from ._base import available_probes as available_probes
from ._base import make_probe as make_probe
from ._base import register_probe as register_probe
from .collapse import CollapseAccumulator as CollapseAccumulator
from .collapse import collapse_metrics as collapse_metrics
from .collapse_reference import reference_collapse_metrics as reference_collapse_metrics
from .elasticity import ElasticityProbe as ElasticityProbe
from .elasticity import measure_elasticity as measure_elasticity
from .geometry import PairAlignmentProbe as PairAlignmentProbe
from .invariant import InvariantProbe as InvariantProbe
from .invariant import invariant_metrics as invariant_metrics
from .kernels import BlockValues as BlockValues
from .kernels import KernelBlockStats as KernelBlockStats
from .kernels import block_norms as block_norms
from .kernels import block_values as block_values
from .kernels import kernel_alignment as kernel_alignment
from .kernels import kernel_block_stats as kernel_block_stats
from .kernels import logit_ntk_from_features as logit_ntk_from_features
from .kernels import trace_kernel as trace_kernel
from .means import ClassMeansProbe as ClassMeansProbe
from .means import class_means as class_means
from .ntk import Method as NTKMethod
from .ntk import clear_plan_cache as clear_plan_cache
from .ntk import empirical_ntk as empirical_ntk
from .ntk_probes import NTKAlignmentProbe as NTKAlignmentProbe
from .ntk_probes import NTKBlocksProbe as NTKBlocksProbe
from .ntk_reference import reference_ntk as reference_ntk
from .performance import PerformanceProbe as PerformanceProbe
from .performance import classification_loss as classification_loss
from .similarity import SimilarityProbe as SimilarityProbe
from .similarity import debiased_cka as debiased_cka
from .similarity import linear_cka as linear_cka
from .similarity import procrustes_distance as procrustes_distance
from .similarity import representation_similarity as representation_similarity

__all__ = [
    "ClassMeansProbe",
    "class_means",
    "BlockValues",
    "InvariantProbe",
    "invariant_metrics",
    "ElasticityProbe",
    "measure_elasticity",
    "KernelBlockStats",
    "NTKAlignmentProbe",
    "NTKBlocksProbe",
    "PairAlignmentProbe",
    "NTKMethod",
    "block_norms",
    "block_values",
    "clear_plan_cache",
    "empirical_ntk",
    "kernel_alignment",
    "kernel_block_stats",
    "logit_ntk_from_features",
    "trace_kernel",
    "CollapseAccumulator",
    "PerformanceProbe",
    "classification_loss",
    "collapse_metrics",
    "reference_collapse_metrics",
    "reference_ntk",
    "Probe",
    "ProbeInput",
    "ProbeOutput",
    "available_probes",
    "make_probe",
    "register_probe",
    "SimilarityProbe",
    "debiased_cka",
    "linear_cka",
    "procrustes_distance",
    "representation_similarity",
]
