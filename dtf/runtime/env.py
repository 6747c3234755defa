"""Settings read from the environment, refused by name when malformed."""
from __future__ import annotations

import os


def seconds(name: str, default: float, positive: bool = False) -> float:
    """``$name`` as a number of seconds (``default`` when unset); a value that is not a
    number, or not above 0 when ``positive``, raises ValueError naming the variable."""
    raw = os.environ.get(name, "")
    try:
        value = float(raw) if raw else float(default)
    except ValueError:
        raise ValueError(f"{name}={raw!r} is not a number of seconds") from None
    if positive and not value > 0:
        raise ValueError(f"{name}={raw!r} must be a positive number of seconds")
    return value
