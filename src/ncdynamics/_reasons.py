"""The one-line reason of a failure, as every layer stores and prints it.

A failed run's ``status.json``, a sweep's table, a tracker's error tag and a verdict's reason
all hold the same text: ``"<ExceptionType>: <first line of its message>"``.
"""

from __future__ import annotations

__all__ = ["one_line_reason"]


def one_line_reason(error: BaseException | str) -> str:
    """``"<ExceptionType>: <first line of its message>"`` (just the type for an empty
    message); a string gives its own first line."""
    if isinstance(error, str):
        text = error.strip().splitlines()
        return text[0] if text else ""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0]}" if lines else type(error).__name__
