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

``keep_freed_memory()`` sets, for the process, the thresholds glibc's malloc reaches by
itself once a large array has been freed (it raises them at each free of a mapped block,
up to 32 MiB for mapping and 64 MiB for trimming). Why: a process that never freed such
an array keeps glibc's start values, 128 KiB for both, and then a step's arrays of a few
hundred KiB are mapped afresh, or the heap's top is given back at every free, so every
step pays the page faults of its temporaries again (a word2vec worker: 190-320 minor
faults per step, 0.5-0.7 ms of its 2.4-2.6 ms CPU per step; none after this). A task's
step repeats its arrays' sizes, so the memory kept is what the next step uses again;
``trim()`` still gives back what one-off steps leave. A task's Worker and a local
Session's backend both call it: the ResNet step (bench M3) faulted in 3,400-3,800 pages
a step in a local Session (its 4 MiB activations), 0-240 after.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("dtf")

_UNSET = object()
_malloc_trim = _UNSET
_tuned = False

# mallopt's parameters (malloc.h) and the largest values glibc's own adjustment reaches
# on 64-bit systems (DEFAULT_MMAP_THRESHOLD_MAX, and twice it for trimming).
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = 64 << 20


def _libc():
    return ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")


def keep_freed_memory() -> bool:
    """Lets the allocator keep freed memory for the next step's arrays (see above); once
    per process, whether it could."""
    global _tuned
    if _tuned:
        return True
    try:
        mallopt = _libc().mallopt  # glibc only: AttributeError elsewhere
    except (OSError, AttributeError):
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    # Both, or glibc would go on adjusting the other from its start value.
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _tuned


def _trim_function():
    global _malloc_trim
    if _malloc_trim is _UNSET:
        _malloc_trim = None
        try:
            fn = _libc().malloc_trim  # glibc only: AttributeError elsewhere
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
