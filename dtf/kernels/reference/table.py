"""The reference table: ``REFERENCE[op_type](attrs, *inputs) -> array | tuple``."""
from __future__ import annotations

REFERENCE: dict = {}


def reference(op_type):
    """Decorator registering the numpy definition of ``op_type``."""

    def deco(fn):
        if op_type in REFERENCE:
            raise KeyError(f"reference for {op_type} defined twice")
        REFERENCE[op_type] = fn
        return fn

    return deco
