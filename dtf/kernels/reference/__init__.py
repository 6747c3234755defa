"""Reference semantics of every op in numpy: the living definition each kernel (CPU and
CUDA) is tested against. One module per op family; entries take the NodeDef attrs and the
input arrays and return an array or a tuple of arrays. Each entry is the op's CPU fallback
kernel too. The family modules load on first use of one of their ops (see table.py).
"""
from .table import REFERENCE, reference  # noqa: F401
