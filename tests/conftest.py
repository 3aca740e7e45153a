"""Shared fixtures: float64 torch default, deterministic algorithms, a seeded rng."""

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import numpy as np
import pytest
import torch


def pytest_collection_modifyitems(config, items):
    """Tests marked ``gpu`` run where CUDA is present and are skipped, with the reason,
    where it is not (the default suite selects them; ``make test-gpu`` runs only them)."""
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="needs CUDA, which this machine does not have")
    for item in items:
        # the marker itself: `"gpu" in item.keywords` also matches a test, class or module
        # whose name holds "gpu" (test_gpu_presets.py), which then never ran on a CPU
        if item.get_closest_marker("gpu") is not None:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _deterministic_torch():
    torch.manual_seed(0)
    torch.use_deterministic_algorithms(True, warn_only=True)
    torch.set_num_threads(1)
    yield


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture
def float64_torch():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(old)
