"""Reference semantics: random ops."""
from __future__ import annotations

import numpy as np  # noqa: F401

from .table import REFERENCE, reference  # noqa: F401
