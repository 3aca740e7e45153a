"""The atlas on the Ray backend: the same cells as on the local process pool, and a second
call on Ray does nothing new (skipped without the ``ray`` extra)."""

from __future__ import annotations

import pandas as pd
import pytest

from ncdynamics.experiments import atlas as atlas_module
from ncdynamics.experiments.atlas import AtlasPlan, Block
from ncdynamics.experiments.executors import LocalExecutor

_PLAN = AtlasPlan(
    "atlas",
    "smoke",
    {"epochs": 12, "record_every": 2, "width": 8},
    (Block("core", {"loss": ("mse", "cross-entropy"), "lr": (0.2,)}),),
    seeds=1,
)


def _comparable(cells: pd.DataFrame) -> pd.DataFrame:
    return cells.sort_values(["loss", "theory"]).reset_index(drop=True)


@pytest.mark.slow  # starting Ray takes a minute or more on a loaded machine
def test_the_ray_backend_gives_the_cells_of_the_process_pool(tmp_path):
    pytest.importorskip("ray", reason="ray is not installed (pip install '.[ray]')")
    from ncdynamics.experiments.executors import RayExecutor

    local = LocalExecutor(workers=2)
    try:
        pool = atlas_module(out=tmp_path / "local", plan=_PLAN, executor=local)
    finally:
        local.close()
    ray = RayExecutor(workers=2)
    try:
        on_ray = atlas_module(out=tmp_path / "ray", plan=_PLAN, executor=ray)
        assert on_ray.attrs["atlas"]["runs_now"] == 2
        assert on_ray.attrs["atlas"]["confronted_now"] == 2
        again = atlas_module(out=tmp_path / "ray", plan=_PLAN, executor=ray)
        assert again.attrs["atlas"]["runs_now"] == 0 and again.attrs["atlas"]["confronted_now"] == 0
    finally:
        ray.close()
    pd.testing.assert_frame_equal(_comparable(pool), _comparable(on_ray))
