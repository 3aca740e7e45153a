"""The experiments of every theory, by name, and the runner that fills a run directory.

The experiments come from the theory registry (:func:`ncdynamics.theories.available`): each
theory's declaration names its experiments. The core ``demo`` and ``atlas`` (one cell of the
regime atlas, :mod:`ncdynamics.experiments.atlas`) belong to no theory.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import runs, theories
from .._reasons import one_line_reason
from .._validation import check_int, check_option
from ..runs._io import write_bytes
from ..runs._signals import interruption_reason
from ..theories.experiment import PRESETS, ExperimentSpec, config_to_dict

if TYPE_CHECKING:  # torch is imported by a run, not by listing or comparing experiments
    import torch

__all__ = ["get", "list_experiments", "run"]


def _core() -> tuple[ExperimentSpec, ...]:
    from .atlas_cell import EXPERIMENTS as ATLAS
    from .demo import EXPERIMENTS as DEMO

    return (*DEMO, *ATLAS)


def _collect() -> dict[str, ExperimentSpec]:
    found: dict[str, ExperimentSpec] = {}
    declared = [_core(), *(theories.get(n).load_experiments() for n in theories.available())]
    for specs in declared:
        for spec in specs:
            if spec.name in found:
                raise RuntimeError(f"experiment {spec.name!r} is registered twice.")
            found[spec.name] = spec
    return found


def list_experiments() -> list[ExperimentSpec]:
    """Every registered experiment, the demo first, then by name."""
    return sorted(_collect().values(), key=lambda s: (s.name != "demo", s.name))


def get(name: str) -> ExperimentSpec:
    """The experiment called ``name``; an unknown name lists the known ones."""
    specs = {s.name: s for s in list_experiments()}
    if name not in specs:
        raise ValueError(
            f"`experiment` must be one of {', '.join(specs)}; got {name!r}. "
            "Run `ncdyn list` to see them."
        )
    return specs[name]


def run(
    name: str,
    preset: str = "smoke",
    out: str | os.PathLike[str] | None = None,
    *,
    seed: int = 0,
    resume: bool = False,
    overwrite: bool = False,
    progress: bool = True,
    device: str | torch.device | None = "auto",
    **overrides: Any,
) -> runs.Run:
    """Run experiment ``name`` at ``preset`` into the run directory ``out``.

    Parameters
    ----------
    name : str
        A registered experiment (``ncdyn list``).
    preset : {"smoke", "cpu", "paper", "gpu"}
        ``gpu`` only for the experiments that declare it.
    out : path-like, optional
        Run directory; defaults to ``runs/<name>-<preset>``.
    seed : int, default=0
    resume : bool, default=False
        Continue an unfinished run in ``out`` (from its last checkpoint when the experiment
        is resumable, otherwise from the start). A completed run is returned as it is.
    overwrite : bool, default=False
        Replace a run already in ``out`` (only the run store's own files are removed; a
        directory holding anything else is refused).
    progress : bool, default=True
        Show progress bars.
    device : {"auto", "cpu", "cuda", "cuda:N"} or torch.device, default="auto"
        Where training runs (``auto``: CUDA when present); every training path of the
        experiment takes it from :func:`ncdynamics.training.current_device`. Recorded in
        ``status.json``; not part of the config, so a run may resume on another device.
    **overrides
        Config fields that replace the preset's values; unknown keys are an error.

    Returns
    -------
    Run
        The completed run, its lock released. Figures and the HTML report are written by
        :func:`ncdynamics.report.write_report` (``ncdyn run`` does both; with ``--resume`` it
        also writes the report that a kill after completion left unwritten).
    """
    spec = get(name)
    check_option(preset, "preset", PRESETS)
    from ..training.devices import resolve_device, use_device

    seed = check_int(seed, "seed", low=0)
    dev = resolve_device(device)
    config = spec.make_config(preset, overrides)
    out = Path(out) if out is not None else Path("runs") / f"{name}-{preset}"
    run_ = runs.create(
        out,
        config=config_to_dict(config),
        seed=seed,
        experiment=name,
        preset=preset,
        resume=resume,
        overwrite=overwrite,
    )
    with run_:  # holds the run directory's lock until the run is completed or failed
        if run_.state == "completed":  # resumed after it completed: nothing left to run
            return run_
        if resume and not spec.resumable:
            run_.drop_records_after(-1)
        # where the experiment computes: a NumPy experiment runs on the CPU whatever was asked
        run_._set_status(device=str(dev) if spec.uses_device else "cpu")
        try:
            with use_device(dev):
                spec.run(config, run_, seed=seed, progress=progress)
        except BaseException as exc:
            run_.mark_failed(interruption_reason(exc) or one_line_reason(exc))
            write_bytes(run_.path / "error.txt", traceback.format_exc().encode())
            raise
        run_.save_summary({"provenance": _provenance(run_, name, preset, seed)})
        run_.mark_completed()
    return run_


def _provenance(run_: runs.Run, name: str, preset: str, seed: int) -> dict[str, Any]:
    """What produced a run's summary, so that a claim read from it alone says where it came
    from: experiment, preset, seed, device, package versions and the source commit."""
    status = run_.status
    return {
        "experiment": name,
        "preset": preset,
        "seed": seed,
        "device": status.get("device"),
        "versions": status.get("versions", {}),
    }


def config_of(run_: runs.Run) -> tuple[ExperimentSpec, Any]:
    """The experiment spec and typed config stored in a run directory."""
    stored: Mapping[str, Any] = run_.config
    spec = get(stored["experiment"])
    fields = {k: v for k, v in stored.items() if k not in ("experiment", "preset", "seed")}
    return spec, spec.make_config(stored["preset"], fields)
