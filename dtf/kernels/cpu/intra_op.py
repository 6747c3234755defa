"""One thread budget for the big kernels: chunks of one kernel spread over the calling
thread and a small process-wide pool, each chunk's BLAS call on one thread.

Why not let BLAS parallelise each product: OpenBLAS splits every product statically over
its threads and returns when the slowest part is done. On 2 cores shared with other
processes (a ps, ZeroMQ's I/O thread, other programs) one of those threads is often
descheduled for a whole time slice, so every product waits for it: the deep-MNIST CNN's
conv2 forward, 21 chunks of ~1,500 x 800 x 64, took 14 ms with the machine to itself and
300 ms with a few other busy processes beside it, while one thread per chunk, its chunks
handed out one at a time, degrades only as much as the machine is shared. So a kernel cut
into chunks runs them here: every thread (the caller first) takes the next chunk until
none is left, and a thread that is descheduled just takes fewer. While chunks run, BLAS
uses one thread (``blas.one_thread``), so threads never exceed the pool's.

The pool has one thread fewer than the thread budget (the caller is the last): the cores
this process may use, shared with the other compute tasks on its host (.cores), or
``DTF_INTRA_OP_THREADS`` (1: every chunk on the caller).
"""
from __future__ import annotations

import itertools
import queue
import threading

from . import cores
from .blas import one_thread


THREADS = cores.threads()


class _Job:
    """``fn(i)`` for every i in range(n), pulled one at a time by whichever thread is free."""

    def __init__(self, fn, n):
        self.fn, self.n = fn, n
        self._next = itertools.count()  # next() is atomic under the GIL
        self._lock = threading.Lock()
        self._finished = 0
        self._all_done = threading.Event()
        self.error = None

    def work(self):
        while True:
            i = next(self._next)
            if i >= self.n:
                return
            try:
                self.fn(i)
            except BaseException as e:  # noqa: BLE001 - re-raised on the caller's thread
                if self.error is None:
                    self.error = e
            with self._lock:
                self._finished += 1
                if self._finished == self.n:
                    self._all_done.set()

    def wait(self):
        self._all_done.wait()
        if self.error is not None:
            raise self.error


class IntraOpPool:
    """``size`` daemon helper threads, started on first use, serving jobs' ``work``."""

    def __init__(self, size: int):
        self.size = size
        self._tasks = queue.SimpleQueue()
        self._started = False
        self._active = 0  # jobs running now
        self._lock = threading.Lock()
        self._start_lock = threading.Lock()

    def _start(self):
        with self._start_lock:
            if not self._started:
                for k in range(self.size):
                    threading.Thread(target=self._serve, daemon=True,
                                     name=f"dtf-intra-op-{k}").start()
                self._started = True

    def _serve(self):
        while True:
            self._tasks.get().work()

    def run(self, fn, n: int):
        """Calls ``fn(i)`` for i in range(n) (any order, up to size + 1 at once) and returns
        when all are done; the first exception of any call is raised here."""
        if n <= 0:
            return
        job = _Job(fn, n)
        with self._lock:
            # Another kernel's chunks are running (an inter-op thread's): its helpers are
            # busy, so this one's run on its caller alone and the threads at work stay
            # within the cores.
            helped = n > 1 and self.size > 0 and self._active == 0
            self._active += 1
        try:
            with one_thread():
                if helped:
                    if not self._started:
                        self._start()
                    for _ in range(min(self.size, n - 1)):
                        self._tasks.put(job)
                job.work()
                job.wait()
        finally:
            with self._lock:
                self._active -= 1


POOL = IntraOpPool(THREADS - 1)


def run_chunks(fn, n: int):
    """``fn(i)`` for each of ``n`` chunks over this process's intra-op threads."""
    POOL.run(fn, n)


def run_ranges(fn, count, item_elements, chunk_elements=1 << 17):
    """``fn(a, b)`` over [0, count) in ranges of items (images, rows) of about
    ``chunk_elements`` elements each (items of ``item_elements``), on the intra-op threads;
    one call on this thread when it is all one range. Ranges are disjoint, so a kernel
    that writes only its own items' output never races."""
    per = max(1, chunk_elements // max(1, item_elements))
    chunks = -(-count // per)
    if chunks <= 1:
        fn(0, count)
    else:
        POOL.run(lambda k: fn(k * per, min(count, (k + 1) * per)), chunks)
