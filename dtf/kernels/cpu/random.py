"""CPU kernels: random ops."""
from __future__ import annotations

from dtf.kernels.registry import register_kernel  # noqa: F401
