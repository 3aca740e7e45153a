"""Which device training runs on: ``auto``, ``cpu``, ``cuda`` or ``cuda:N``.

:func:`resolve_device` turns a user's choice into a :class:`torch.device` (``auto`` is CUDA
when present, else the CPU) and refuses one this machine does not have. An experiment run
(``experiments.run(..., device=...)``, ``ncdyn run --device``) makes its device current with
:func:`use_device` for the duration of the run, and every training path puts its models and
batches on :func:`device_for` (its own ``device=`` argument, checked, else
:func:`current_device`), so a device chosen once reaches them all without being threaded
through each experiment's config (a run resumed on another machine keeps its config).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import torch

__all__ = [
    "adopt_device",
    "check_device_spec",
    "chosen_device",
    "current_device",
    "device_for",
    "resolve_device",
    "use_device",
]

_CURRENT: contextvars.ContextVar[torch.device | None] = contextvars.ContextVar(
    "ncdynamics_device", default=None
)


def resolve_device(device: str | torch.device | None = "auto") -> torch.device:
    """The :class:`torch.device` for ``device`` (``None`` and ``"auto"``: CUDA when present).

    Raises
    ------
    ValueError
        For a spelling torch does not know, a device type other than cpu/cuda, or CUDA (or a
        CUDA index) this machine does not have.
    """
    if device is None or (isinstance(device, str) and device.strip().lower() == "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device.strip().lower() if isinstance(device, str) else device)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"`device` must be 'auto', 'cpu', 'cuda' or 'cuda:N'; got {device!r}."
        ) from exc
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"`device` must be 'auto', 'cpu', 'cuda' or 'cuda:N'; got {device!r}.")
    if dev.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                f"`device` {str(device)!r} needs CUDA, which this machine does not have; "
                "use 'auto' or 'cpu'."
            )
        count = torch.cuda.device_count()
        if dev.index is not None and dev.index >= count:
            raise ValueError(
                f"`device` {str(device)!r} names CUDA device {dev.index}; this machine has "
                f"{count} (0..{count - 1})."
            )
    return dev


def check_device_spec(device: str) -> str:
    """``device`` if it is spelled as :func:`resolve_device` accepts, without checking that
    this machine has it (a sweep's workers may run elsewhere); ``ValueError`` otherwise."""
    spec = str(device).strip().lower()
    if spec == "auto":
        return spec
    try:
        dev = torch.device(spec)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(
            f"`device` must be 'auto', 'cpu', 'cuda' or 'cuda:N'; got {device!r}."
        ) from exc
    if dev.type not in ("cpu", "cuda"):
        raise ValueError(f"`device` must be 'auto', 'cpu', 'cuda' or 'cuda:N'; got {device!r}.")
    return spec


def current_device() -> torch.device:
    """The device made current by :func:`use_device`, else ``auto``'s choice."""
    dev = _CURRENT.get()
    return dev if dev is not None else resolve_device("auto")


def device_for(device: str | torch.device | None = None) -> torch.device:
    """The device a training path runs on: ``device`` checked by :func:`resolve_device`
    when given, else :func:`current_device` (the run's, or ``auto``'s choice).

    The one place where a device argument becomes a :class:`torch.device`; every function
    that takes ``device=`` goes through it.
    """
    return current_device() if device is None else resolve_device(device)


def chosen_device() -> torch.device | None:
    """The device made current by :func:`use_device`, or ``None`` where none was chosen
    (what a worker process has to be handed so that it trains where its parent does)."""
    return _CURRENT.get()


def adopt_device(device: torch.device | None) -> None:
    """Make ``device`` current for the rest of this thread (``None`` leaves auto's choice):
    for a worker process's initializer, which has no ``with`` block to stay in."""
    if device is not None:
        _CURRENT.set(device)


@contextlib.contextmanager
def use_device(device: str | torch.device | None) -> Iterator[torch.device]:
    """Make ``resolve_device(device)`` current inside the ``with`` block; yields it."""
    dev = resolve_device(device)
    token = _CURRENT.set(dev)
    try:
        yield dev
    finally:
        _CURRENT.reset(token)
