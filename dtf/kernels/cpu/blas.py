"""Matrix products on numpy's BLAS, with its threads sized to the product.

OpenBLAS (what numpy's wheels ship) splits any product of more than 256K multiply-adds
over all its threads. For the small products of a training step that costs more than it
gains: each call wakes the other threads (tens of microseconds when the other core is busy
with a ps or ZeroMQ's I/O thread, which is the usual case here), and the woken threads
then spin for a while, taking a core from the processes beside them. Measured on 2 cores,
one idle (median of 5 products of an MLP 64-128-10 training step): 1 thread and 2 threads
within 10% of each other up to 128x128x128; 2 threads pay from about 160^3 (1.18x), 1.4x at
256^3, 1.9x at 512^3. In a 1 ps + 1 worker training step the same 5 products took 64 us
each with 2 threads against 9 us with 1.

So a product under ``PARALLEL_MIN_WORK`` multiply-adds runs with one BLAS thread; larger
ones use whatever the process had (``OPENBLAS_NUM_THREADS``, else one per core). The count
is set around each small call and put back, so numpy calls outside dtf's kernels keep the
process's setting (OpenBLAS has one count per process: a large product that starts on
another thread during a small one runs on one thread too, correct but slower). Where the
BLAS is not an OpenBLAS that dtf can find (macOS's Accelerate, MKL), products run as numpy
runs them.

``DTF_BLAS_PARALLEL_MIN_WORK`` moves the threshold (0: never limit).
"""
from __future__ import annotations

import ctypes
import os
import threading

import numpy as np

PARALLEL_MIN_WORK = int(os.environ.get("DTF_BLAS_PARALLEL_MIN_WORK", 1 << 22))

# numpy >= 2 bundles scipy-openblas (symbols prefixed, 64-bit ints); older wheels and
# system builds export the plain names.
_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads",
            "openblas_set_num_threads64_", "openblas_set_num_threads")


class _OpenBLASThreads:
    """Sets the thread count of the OpenBLAS that numpy loaded."""

    def __init__(self, set_fn, get_fn):
        self._set = set_fn
        self.default = int(get_fn())

    def set(self, n: int):
        self._set(n)


def _find_openblas():
    """The OpenBLAS mapped into this process (numpy loaded it), or None."""
    try:
        with open("/proc/self/maps") as f:
            paths = sorted({line.split()[-1] for line in f if "openblas" in line.lower()
                            and line.split()[-1].startswith("/")})
    except OSError:  # not Linux
        return None
    for path in paths:
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SETTERS:
            setter = getattr(lib, name, None)
            getter = getattr(lib, name.replace("set_num_threads", "get_num_threads"), None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = [ctypes.c_int], None
                getter.argtypes, getter.restype = [], ctypes.c_int
                return _OpenBLASThreads(setter, getter)
    return None


_threads = None
_looked = False
_lock = threading.Lock()


def _controller():
    global _threads, _looked
    if not _looked:
        with _lock:
            if not _looked:
                _threads = _find_openblas()
                _looked = True
    return _threads


_single_sections = 0  # threads inside one_thread() now; guarded by _lock


class one_thread:
    """``with one_thread():`` BLAS calls run on one thread until every thread that entered
    has left (a count, so overlapping sections on several threads don't put the process's
    count back while another still relies on one)."""

    __slots__ = ("_threads",)

    def __enter__(self):
        global _single_sections
        threads = self._threads = _controller()
        if threads is None or threads.default <= 1:
            return self
        with _lock:
            _single_sections += 1
            if _single_sections == 1:
                threads.set(1)
        return self

    def __exit__(self, *exc):
        global _single_sections
        threads = self._threads
        if threads is None or threads.default <= 1:
            return
        with _lock:
            _single_sections -= 1
            if _single_sections == 0:
                threads.set(threads.default)


def matmul(a, b):
    """``np.matmul(a, b)`` with one BLAS thread when the product is small."""
    work = a.size * b.shape[-1] if a.ndim >= 2 and b.ndim >= 2 else 0  # batch * m * k * n
    if work >= PARALLEL_MIN_WORK or work == 0:
        return np.matmul(a, b)
    threads = _controller()
    if threads is None or threads.default <= 1:
        return np.matmul(a, b)
    with one_thread():
        return np.matmul(a, b)
