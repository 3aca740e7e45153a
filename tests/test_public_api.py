import importlib
import pkgutil

import pytest

import ncdynamics

PACKAGES = ["ncdynamics"] + [
    f"ncdynamics.{m.name}" for m in pkgutil.iter_modules(ncdynamics.__path__) if m.ispkg
]


@pytest.mark.parametrize("name", PACKAGES)
def test_every_all_name_resolves(name):
    mod = importlib.import_module(name)
    for attr in getattr(mod, "__all__", []):
        assert hasattr(mod, attr), f"{name}.__all__ lists missing {attr!r}"


def test_version_is_exposed():
    assert isinstance(ncdynamics.__version__, str) and ncdynamics.__version__


def test_design_public_names_exist():
    from ncdynamics import data, experiments, probes, runs, training

    for obj in (
        data.load,
        data.Dataset,
        probes.collapse_metrics,
        probes.CollapseAccumulator,
        training.train,
        training.Recorder,
        runs.open,
        experiments.run,
    ):
        assert callable(obj)
