"""variable_scope."""
from __future__ import annotations

__all__: list = []
