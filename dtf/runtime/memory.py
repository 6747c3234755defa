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

``keep_freed_memory()`` makes the allocator keep what a step frees for the next step,
which allocates the same sizes again; ``trim()`` gives back what one-off steps leave.
glibc's start values return memory eagerly: arrays over 128 KiB are mapped afresh each
time, the heap's top is given back past 128 KiB free, and a thread's arena (its heaps are
64 MiB each) unmaps a heap the moment a step has emptied it. Each step then pays the
page faults of its temporaries again: a word2vec worker 190-320 minor faults per step
(0.5-0.7 ms of its 2.4-2.6 ms CPU), the ResNet step (bench M3) 3,400-3,800 in a local
Session, and 4,000-8,000 more, in some runs only, on the inter-op thread whose arena
crossed a heap's edge at that step. So, for the process:
- arrays are mapped on their own only from 32 MiB (the most glibc's own adjustment
  reaches on 64-bit systems), so a step's activations come from the heaps;
- nothing is trimmed by itself (only ``trim()`` gives memory back): any automatic
  threshold is crossed every step by a model whose live arrays rise and fall by more;
- the top pad is 64 MiB, which keeps an emptied thread heap mapped (glibc unmaps one
  only when more than the pad would be left free) and grows the main heap in steps of
  64 MiB of address space (pages are resident only once written).
A task's Worker and a local Session's backend both call it. Peak memory is what the step
writes, as before; between steps a process keeps its high-water mark, as TensorFlow's
allocators do, until ``trim()``.
"""
from __future__ import annotations

import ctypes
import ctypes.util
import logging

log = logging.getLogger("dtf")

_UNSET = object()
_malloc_trim = _UNSET
_tuned = False

# mallopt's parameters (malloc.h). The mapping threshold is the largest mallopt accepts
# (DEFAULT_MMAP_THRESHOLD_MAX on 64-bit systems); -1 turns automatic trimming off.
_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_THRESHOLD = -1, -2, -3
MMAP_THRESHOLD = 32 << 20
TRIM_THRESHOLD = -1
TOP_PAD = 64 << 20


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
    # All three: setting one stops glibc's own adjustment of the other two as well.
    _tuned = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD)) and bool(
        mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) and bool(mallopt(_M_TOP_PAD, TOP_PAD))
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
