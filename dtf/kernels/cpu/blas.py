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
is set around each small call (but not for ``ONE_THREAD_WORK`` or fewer, which OpenBLAS
keeps on one thread itself) and put back, so numpy calls outside dtf's kernels keep the
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
# OpenBLAS keeps a product of at most this many multiply-adds on one thread by itself (on
# 2 cores here, process CPU equals the calling thread's up to 512K: 64x64x128), so those
# skip the count's set and restore: 0.54 us a pair, for three of the W5 MLP's five
# products a step.
ONE_THREAD_WORK = 1 << 18

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


# A large product is cut into this many pieces per intra-op thread (see split_matmul).
PIECES_PER_THREAD = 4
PIECE_MIN = 64


def matmul(a, b):
    """``np.matmul(a, b)`` with one BLAS thread when the product is small; a large 2-D one
    goes to oneDNN's matmul for float32 (.onednn, where installed), else is cut into
    pieces spread over the intra-op threads (``split_matmul``)."""
    work = _work(a, b)
    if work == 0:
        return np.matmul(a, b)
    if work >= PARALLEL_MIN_WORK:
        if a.ndim == 2 and b.ndim == 2:
            from . import onednn

            out = onednn.matmul(a, b)
            if out is not None:
                return out
            if SPLIT_LARGE:
                return split_matmul(a, b)
        return np.matmul(a, b)
    threads = _controller()
    if (work <= ONE_THREAD_WORK or threads is None or threads.default <= 1
            or _single_sections):  # (inside a one_thread section the count is already 1)
        return np.matmul(a, b)
    # Not a counted section: this runs several times per step of a small model, where the
    # section's bookkeeping measured a few percent. A section that starts on another
    # thread between the check below and the restore loses its limit until its next
    # product (a slower product, never a wrong one).
    threads.set(1)
    try:
        return np.matmul(a, b)
    finally:
        if not _single_sections:
            threads.set(threads.default)


def _work(a, b):
    """Multiply-adds of ``a @ b`` (batch * m * k * n), 0 unless both are matrices or more."""
    return a.size * b.shape[-1] if a.ndim >= 2 and b.ndim >= 2 else 0


def is_large(a, b):
    """Whether ``matmul`` hands ``a @ b`` to the parallel paths (oneDNN, split pieces)."""
    return _work(a, b) >= PARALLEL_MIN_WORK


# DTF_BLAS_SPLIT=0 leaves large products to BLAS's own threads.
SPLIT_LARGE = os.environ.get("DTF_BLAS_SPLIT", "1") != "0"


def split_matmul(a, b):
    """``a @ b`` as one-thread products over row (or, for short ``a``, column) pieces of
    the result, handed out to whichever intra-op thread is free (see .intra_op for why:
    BLAS's own static split waits for its slowest thread, and on shared cores that one has
    often lost its core: a 256 x 784 x 1024 MLP step took 4-5 times longer with OpenBLAS's
    two threads than with one while other processes ran)."""
    from .intra_op import THREADS, run_chunks

    m, n = a.shape[0], b.shape[1]
    out = np.empty((m, n), np.result_type(a, b))
    pieces = max(1, THREADS * PIECES_PER_THREAD)
    if THREADS <= 1:
        with one_thread():
            return np.matmul(a, b, out=out)
    # Each piece packs the whole of the operand it does not split (BLAS copies it into
    # blocks first), so split the longer side, in pieces of at least PIECE_MIN: the
    # packing then costs at most 1/PIECE_MIN of the piece's arithmetic. (Rows of 8 made
    # the CNN's [64, 1024] x [1024, 3136] eight times slower than one call.)
    if m >= n:
        bounds = _bounds(m, pieces, PIECE_MIN)
        run_chunks(lambda i: np.matmul(a[bounds[i]:bounds[i + 1]], b,
                                       out=out[bounds[i]:bounds[i + 1]]), len(bounds) - 1)
    else:
        bounds = _bounds(n, pieces, PIECE_MIN)
        run_chunks(lambda i: np.matmul(a, b[:, bounds[i]:bounds[i + 1]],
                                       out=out[:, bounds[i]:bounds[i + 1]]), len(bounds) - 1)
    return out


def _bounds(size, pieces, multiple):
    """Piece boundaries over ``size``: about ``pieces`` pieces, each a multiple of
    ``multiple`` long (BLAS kernels work in register blocks), the last one the rest."""
    step = max(multiple, -(-size // pieces // multiple) * multiple)
    return list(range(0, size, step)) + [size]
