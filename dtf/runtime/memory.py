"""Giving the C allocator's free memory back to the system.

glibc's malloc keeps freed memory for reuse: a large array freed once raises the size
from which later arrays are mapped on their own (up to 32 MiB), so the temporaries of a
one-off step (a 50,000 x 128 table's initializer draws, scales and shifts three arrays of
25 MB) stay in the process's arenas, resident, after the step. A parameter server then
held twice its tables' bytes for good (word2vec, bench/word2vec.py: 160 MiB resident for
49 MiB of tables; 101 MiB after a trim). ``trim()`` returns what is free; the worker calls
it after the first run of each partition (initializers run once; a training step's
arrays are reused from the next step on), so it costs a few milliseconds once per plan.
Elsewhere than glibc it does nothing.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("dtf")

_UNSET = object()
_malloc_trim = _UNSET


def _trim_function():
    global _malloc_trim
    if _malloc_trim is _UNSET:
        _malloc_trim = None
        try:
            libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
            fn = libc.malloc_trim  # glibc only: AttributeError elsewhere
            fn.argtypes, fn.restype = [ctypes.c_size_t], ctypes.c_int
            _malloc_trim = fn
        except (OSError, AttributeError):
            log.debug("no malloc_trim in this C library: free memory stays with the allocator")
    return _malloc_trim


def trim() -> bool:
    """Returns the allocator's free memory to the system; whether it could try."""
    fn = _trim_function()
    if fn is None:
        return False
    fn(0)
    return True
