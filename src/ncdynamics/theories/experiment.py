"""Experiment declarations: a typed config, its presets and a function that fills a run.

Part of the theory contract (``ncdynamics.theories``): every theory subpackage declares its
experiments with it, without importing the ``experiments`` layer that collects and runs them.
An experiment is plain data:

- ``config``: a frozen dataclass type whose defaults are the experiment's settings;
- ``presets``: for each of ``smoke``, ``cpu`` and ``paper`` (and, for an experiment whose
  ``paper`` preset needs a GPU, ``gpu``), the fields that differ from the defaults;
- ``run``: ``run(config, run, *, seed, progress) -> None``, which writes metrics, arrays,
  figures and a summary into ``run``, a :class:`RunWriter` (in practice a
  ``ncdynamics.runs.Run``).
"""

from __future__ import annotations

import dataclasses
import re
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from numpy.typing import NDArray

if TYPE_CHECKING:
    import pandas as pd

__all__ = [
    "OPTIONAL_PRESETS",
    "PRESETS",
    "REQUIRED_PRESETS",
    "ExperimentFn",
    "ExperimentSpec",
    "RunWriter",
    "build_config",
    "config_to_dict",
    "parse_value",
]

#: The presets every experiment declares.
REQUIRED_PRESETS = ("smoke", "cpu", "paper")
#: Presets an experiment may declare: ``gpu``, the paper's compute scale on the data that a
#: device machine holds (``mnist-5k`` for MNIST), for the experiments whose ``paper`` preset
#: needs a GPU.
OPTIONAL_PRESETS = ("gpu",)
#: Every preset name, in the order ``ncdyn list`` shows them.
PRESETS = REQUIRED_PRESETS + OPTIONAL_PRESETS


class RunWriter(Protocol):
    """What an experiment writes to: the part of ``ncdynamics.runs.Run`` it may use.

    Experiments receive a run directory opened for writing. They log scalar records, store
    arrays, figures and a summary, and checkpoint long loops so that a killed run resumes.
    """

    @property
    def path(self) -> Path: ...

    def log(self, step: int, values: Mapping[str, float] | None = None, **kw: float) -> None:
        """Buffer scalar records at ``step``."""

    def flush(self) -> None:
        """Write the buffered records."""

    def save_array(self, name: str, step: int, array: Any) -> Path:
        """Store one array of ``name`` at ``step``."""
        ...

    def arrays(self, name: str) -> dict[int, NDArray[Any]]:
        """Every stored array of ``name``, by step."""
        ...

    def metrics_wide(self) -> pd.DataFrame:
        """The scalar records written so far, one row per step and one column per name."""
        ...

    def save_figure(self, fig: Any, name: str, *, dpi: int = 110) -> Path:
        """Save a matplotlib figure as a PNG."""
        ...

    def save_summary(self, summary: Mapping[str, Any]) -> Path:
        """Merge ``summary`` into the run's ``summary.json``."""
        ...

    def save_checkpoint(
        self, step: int, state: Mapping[str, Any], *, tag: str = "main", keep: int = 2
    ) -> Path:
        """Save a checkpoint of ``state`` at ``step``."""
        ...

    def load_checkpoint(self, tag: str = "main") -> dict[str, Any] | None:
        """The newest checkpoint of ``tag``, or ``None``."""
        ...


class ExperimentFn(Protocol):
    """``run(config, run, *, seed, progress) -> None``: fills ``run`` for one experiment."""

    def __call__(self, config: Any, run: RunWriter, *, seed: int, progress: bool) -> None: ...


@dataclass(frozen=True)
class ExperimentSpec:
    """One registered experiment.

    Parameters
    ----------
    name : str
        Unique name, ``<theory>.<figure>`` by convention (e.g. ``hadamard.fig1``).
    theory : str
        Theory subpackage name, or ``"core"``.
    summary : str
        One line shown by ``ncdyn list``.
    config : type
        Frozen dataclass type of settings.
    presets : mapping of str to mapping
        Overrides of ``config`` fields per preset; must have ``smoke``, ``cpu`` and
        ``paper``, and may have ``gpu`` (:data:`OPTIONAL_PRESETS`), nothing else.
    run : ExperimentFn
        ``run(config, run, *, seed, progress) -> None``.
    resumable : bool
        Whether ``run`` resumes from the run's last checkpoint; otherwise a resumed run
        starts over (its earlier records are replaced).
    uses_device : bool
        Whether it trains torch networks on the run's device (``ncdyn run --device``);
        ``False`` for an experiment that computes in NumPy or in CPU float64 tensors
        whatever the device, whose run then records ``cpu`` as its device.
    """

    name: str
    theory: str
    summary: str
    config: type
    presets: Mapping[str, Mapping[str, Any]]
    run: ExperimentFn
    resumable: bool = False
    tags: tuple[str, ...] = field(default=())
    uses_device: bool = True

    def __post_init__(self) -> None:
        if not dataclasses.is_dataclass(self.config):
            raise TypeError(f"`config` of experiment {self.name!r} must be a dataclass type.")
        missing = [p for p in REQUIRED_PRESETS if p not in self.presets]
        extra = [p for p in self.presets if p not in PRESETS]
        if missing or extra:
            raise ValueError(
                f"`presets` of experiment {self.name!r} must have {REQUIRED_PRESETS} and "
                f"may have {OPTIONAL_PRESETS}; missing {missing}, unknown {extra}."
            )
        for preset, overrides in self.presets.items():
            build_config(self.config, overrides, where=f"preset {preset!r} of {self.name!r}")

    @property
    def preset_names(self) -> tuple[str, ...]:
        """The presets this experiment declares, in the order of :data:`PRESETS`."""
        return tuple(p for p in PRESETS if p in self.presets)

    def make_config(self, preset: str, overrides: Mapping[str, Any] | None = None) -> Any:
        """Resolve ``preset`` and then ``overrides`` into a config instance."""
        if preset not in PRESETS:
            raise ValueError(f"`preset` must be one of {', '.join(PRESETS)}; got {preset!r}.")
        if preset not in self.presets:
            raise ValueError(
                f"`preset` of experiment {self.name!r} must be one of "
                f"{', '.join(self.preset_names)}; got {preset!r}."
            )
        merged = dict(self.presets[preset])
        merged.update(overrides or {})
        return build_config(self.config, merged, where=f"experiment {self.name!r}")


def _field_types(cls: type) -> dict[str, Any]:
    hints = typing.get_type_hints(cls)
    return {f.name: hints.get(f.name, Any) for f in dataclasses.fields(cls)}


def build_config(cls: type, values: Mapping[str, Any], *, where: str = "config") -> Any:
    """Build ``cls(**values)``, rejecting unknown keys by name and coercing strings.

    Strings (from the command line) are parsed into the annotated field type.
    """
    types_ = _field_types(cls)
    unknown = [k for k in values if k not in types_]
    if unknown:
        raise ValueError(
            f"unknown option(s) {', '.join(map(repr, unknown))} for {where}; "
            f"known options: {', '.join(types_)}."
        )
    kwargs = {k: _coerce(v, types_[k], k) for k, v in values.items()}
    return cls(**kwargs)


# Numbers in exponent notation that YAML 1.1 (PyYAML) leaves as strings because they lack a
# dot or a signed exponent: 1e-3, 1e3, 5E+2, -2e4.
_EXPONENT_NUMBER = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)[eE][-+]?\d+")


def parse_value(text: str) -> Any:
    """Parse a command-line value: YAML scalars and flow sequences (``1,2`` or ``[1, 2]``).

    Numbers are read as a person types them: ``1e-3`` and ``1e3`` are floats (YAML 1.1 would
    keep them as strings); a whole float given for an integer option becomes that integer
    when the config is built.
    """
    import yaml

    text = text.strip()
    if "," in text and not text.startswith(("[", "(", "{")):
        return [parse_value(part) for part in text.split(",")]
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    if isinstance(value, str) and _EXPONENT_NUMBER.fullmatch(value):
        return float(value)
    if isinstance(value, list):  # a flow sequence: [1e-3, 2e-3]
        return [
            float(v) if isinstance(v, str) and _EXPONENT_NUMBER.fullmatch(v) else v for v in value
        ]
    return value


def _coerce(value: Any, tp: Any, name: str) -> Any:
    """``value`` (a command-line string is parsed first) as the field type ``tp``: an
    optional, a tuple, a literal, or a scalar (:func:`_coerce_scalar`)."""
    if isinstance(value, str) and tp is not str:
        value = parse_value(value)
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        return _coerce_union(value, typing.get_args(tp), name)
    if origin is tuple:
        return _coerce_tuple(value, typing.get_args(tp), name)
    if origin is typing.Literal:
        args = typing.get_args(tp)
        if value not in args:
            raise ValueError(
                f"option `{name}` must be one of {', '.join(map(repr, args))}; got {value!r}."
            )
        return value
    return _coerce_scalar(value, tp, name)


def _coerce_union(value: Any, args: tuple[Any, ...], name: str) -> Any:
    """``X | None``: ``None`` stays, anything else is coerced to ``X``; a union of several
    types is left as given."""
    if value is None and type(None) in args:
        return None
    non_none = [a for a in args if a is not type(None)]
    return _coerce(value, non_none[0], name) if len(non_none) == 1 else value


def _coerce_tuple(value: Any, args: tuple[Any, ...], name: str) -> tuple[Any, ...]:
    """A tuple from a list, a tuple or one value; ``tuple[X, ...]`` coerces each item."""
    if not isinstance(value, (list, tuple)):
        value = [value]
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_coerce(v, args[0], name) for v in value)
    return tuple(value)


def _coerce_scalar(value: Any, tp: Any, name: str) -> Any:
    """``int``, ``float``, ``str`` and ``bool`` checked (a whole float becomes an int, a
    YAML boolean is no number); any other type passes unchanged."""
    if tp in (int, float) and isinstance(value, bool):  # YAML's yes/no/true/false
        raise TypeError(f"option `{name}` must be {tp.__name__}; got {value!r}.")
    if tp is float and isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:  # an integer beyond float range
            raise ValueError(f"option `{name}` is too large for a float; got {value!r}.") from None
    if tp is int and isinstance(value, float) and value.is_integer():
        return int(value)
    if tp in (int, float, str, bool) and not isinstance(value, tp):
        raise TypeError(f"option `{name}` must be {tp.__name__}; got {value!r}.")
    return value


def config_to_dict(config: Any) -> dict[str, Any]:
    """A JSON-ready dict of a config dataclass (tuples become lists)."""
    return dataclasses.asdict(config)
