"""Checkpoints: torch files loaded with ``weights_only=True``, so loading runs no code.

A checkpoint may hold tensors, numbers, strings, ``None``, and lists, tuples and dicts of
them, plus what torch's restricted unpickler allows by default (``collections.OrderedDict``
and ``collections.Counter``, which ``MultiStepLR.state_dict()`` holds). That covers what
:func:`ncdynamics.training.train` saves: model, optimizer and scheduler ``state_dict`` s and
``torch.get_rng_state()``. Anything else (an arbitrary class, a function, ``os.system``) is
refused before it is built, so a crafted file in a run someone sends you executes nothing.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path
from typing import Any

__all__ = ["load_checkpoint_file", "reason"]

_REFUSED = re.compile(
    r"WeightsUnpickler error:\s*(.+?)(?:\s+was not an allowed global|\n\n|$)", re.S
)


_ADVICE = re.compile(r"weights.only|check the documentation|trusted source", re.I)


def reason(exc: BaseException) -> str:
    """One line saying why a checkpoint could not be loaded."""
    text = str(exc)
    match = _REFUSED.search(text)
    if match:
        return "refused unsafe content: " + " ".join(match.group(1).split())
    if "weights only load failed" in text.lower():
        # torch's message opens with advice to load with weights_only=False, which would run
        # the file's code: never quote it; give the cause it names, if any
        causes = [
            " ".join(para.split())
            for para in re.split(r"\n\s*\n", text)
            if para.strip() and not _ADVICE.search(para)
        ]
        cause = f": {causes[0]}" if causes else ""
        return f"refused unsafe content{cause}"
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def load_checkpoint_file(path: Path) -> dict[str, Any]:
    """The dict in checkpoint ``path`` (loaded on CPU, ``weights_only=True``).

    Raises
    ------
    Exception
        Whatever torch raises for a damaged or unsafe file (see :func:`reason`), or
        ``ValueError`` when the file holds something other than a dict with an integer
        ``step``.
    """
    import torch

    from ._io import open_regular

    # a regular file inside the run only: a FIFO would block the load, a link read elsewhere
    with os.fdopen(open_regular(path), "rb") as fh, warnings.catch_warnings():
        # torch warns about the pickle protocol of files it did not write; the error says more
        warnings.simplefilter("ignore", UserWarning)
        state = torch.load(fh, map_location="cpu", weights_only=True)
    if not isinstance(state, dict) or not isinstance(state.get("step"), int):
        raise ValueError(f"holds {type(state).__name__}, not a checkpoint dict with a step")
    return state
