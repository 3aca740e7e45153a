"""The claim record every LE-SDE experiment writes into its summary.

A claim is one sentence of [1] (or a check derived from it), the number or numbers we
measured for it, and whether it held at this run's settings.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["claim"]


def claim(text: str, ours: Any, held: bool | np.bool_) -> dict[str, Any]:
    """``{"claim": text, "ours": ours, "held": bool(held)}``, JSON-ready if ``ours`` is."""
    return {"claim": text, "ours": ours, "held": bool(held)}
