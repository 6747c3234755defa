"""The loop primitives, one of each, for every thread that waits on sockets: a wake-up
(``Wakeup``), a timer queue (``Timers``) and a pool of handler threads (``HandlerPool``).

The server loop (dtf.wire.server) uses all three; a step's reply pump and ``Peers``
(dtf.runtime.service) use the same wake-up and pool rather than their own.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import os
import queue
import sys
import threading
import time
import weakref

log = logging.getLogger("dtf.wire")


class Wakeup:
    """Wakes a thread that polls ``fileno()``, from any thread: an eventfd (a pipe where
    there is none). A plain descriptor costs the poll nothing more; a ZeroMQ inproc
    socket, which did this before, cost every poll two system calls more. ``wake`` writes
    only when the poller has not been signalled since its last ``clear``."""

    def __init__(self):
        self._lock = threading.Lock()  # a write never races the close (and a reused fd)
        self._signalled = False
        if hasattr(os, "eventfd"):
            self._rfd = self._wfd = os.eventfd(0, os.EFD_NONBLOCK | os.EFD_CLOEXEC)
        else:
            self._rfd, self._wfd = os.pipe()
            os.set_blocking(self._rfd, False)
            os.set_blocking(self._wfd, False)
        # A wake-up kept per thread (a step's reply pump, dtf.runtime.service) is never
        # closed by its owner: its descriptors close once nothing refers to it, when no
        # waker can hold it either.
        fds = (self._rfd,) if self._rfd == self._wfd else (self._rfd, self._wfd)
        self._closer = weakref.finalize(self, _close_fds, *fds)

    def fileno(self) -> int:
        return self._rfd

    def wake(self):
        if self._signalled:
            return  # the poller will see the last wake-up, and what came before this one
        with self._lock:
            if self._wfd < 0:
                return
            self._signalled = True
            try:
                os.write(self._wfd, _WAKE_BYTES)
            except BlockingIOError:  # a pipe full of wake-ups: the poller is signalled
                pass

    def clear(self):
        """Called by the poller before it takes what it was woken for. The read comes
        first: while ``_signalled`` is still set no one writes, so the read cannot swallow
        a wake-up whose sender then relies on the flag (its work was queued before it
        looked at the flag, so the take that follows this sees it)."""
        try:
            os.read(self._rfd, 4096)
        except (BlockingIOError, InterruptedError):
            pass
        self._signalled = False

    def close(self):
        with self._lock:
            if self._wfd < 0:
                return
            self._closer()
            self._rfd = self._wfd = -1


_WAKE_BYTES = (1).to_bytes(8, sys.byteorder)  # an eventfd adds an 8-byte count


def _close_fds(*fds):
    for fd in fds:
        os.close(fd)


class TimerHandle:
    """A pending ``Timers.call_later``."""

    __slots__ = ("_timers", "fn")

    def __init__(self, timers, fn):
        self._timers = timers
        self.fn = fn  # None once run or cancelled

    def cancel(self):
        """Drops the timer and what its function holds (call on the owner thread)."""
        if self.fn is not None:
            self.fn = None
            self._timers._cancelled_one()


class Timers:
    """Functions due at monotonic times, owned by one thread (a server loop's I/O
    thread): it schedules them, cancels them and runs them when due. ``heap`` holds
    (due time, sequence, TimerHandle); its owner reads ``heap[0]`` inline to size its
    poll (that runs every pass)."""

    def __init__(self):
        self.heap: list = []
        self._cancelled = 0  # handles in the heap whose timer was cancelled
        self._seq = itertools.count()

    def call_later(self, delay_s, fn) -> TimerHandle:
        """Runs ``fn()`` after ``delay_s`` (call from the owner thread). Its handle's
        ``cancel()`` (also from the owner thread) lets go of ``fn`` at once."""
        handle = TimerHandle(self, fn)
        heapq.heappush(self.heap, (time.monotonic() + delay_s, next(self._seq), handle))
        return handle

    def pop_due(self, run):
        """Hands ``run`` each function now due, in due order."""
        heap = self.heap
        now = time.monotonic()
        while heap and heap[0][0] <= now:
            _, _, handle = heapq.heappop(heap)
            fn, handle.fn = handle.fn, None
            if fn is None:
                self._cancelled -= 1
            else:
                run(fn)

    def _cancelled_one(self):
        # A step's deadline timer is cancelled when the step ends, usually long before
        # the deadline: drop such entries once they are most of the heap.
        self._cancelled += 1
        if self._cancelled > 64 and 2 * self._cancelled > len(self.heap):
            self.heap = [t for t in self.heap if t[2].fn is not None]
            heapq.heapify(self.heap)
            self._cancelled = 0


class HandlerPool:
    """Threads that run handlers. Lighter than ThreadPoolExecutor (no Future per call,
    which showed up at ~15% of a cross-task step). A job never waits behind a busy
    thread: submit reserves an idle thread or starts a new one (up to ``max_workers``),
    because a handler may block until another handler of the same step runs. ``call``
    and ``map`` are for callers that want results (``Peers``); the loop uses ``submit``."""

    def __init__(self, max_workers, name, thread_init=None):
        self._thread_init = thread_init
        self._jobs = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._idle = 0
        self._threads: list = []
        self._max = max_workers
        self._name = name
        self._closed = False

    def submit(self, fn, *args):
        """Runs ``fn(*args)`` on a pool thread; RuntimeError once the pool is shut down."""
        with self._lock:
            if self._closed:
                raise RuntimeError(f"{self._name}: the pool has shut down")
            if self._idle:
                self._idle -= 1
            elif len(self._threads) < self._max:
                if sys.is_finalizing():
                    # A thread started now never runs (Thread.start would wait for it
                    # forever): a session closed by its __del__ at exit gets here.
                    raise RuntimeError(f"{self._name}: the interpreter is shutting down")
                t = threading.Thread(target=self._work, name=f"{self._name}-{len(self._threads)}",
                                     daemon=True)
                self._threads.append(t)
                t.start()
        self._jobs.put((fn, args))

    def _work(self):
        if self._thread_init is not None:
            self._thread_init()
        while True:
            job = self._jobs.get()
            if job is None:
                return
            fn, args = job
            try:
                fn(*args)
            except Exception:  # noqa: BLE001 - handlers report their own errors
                log.exception("%s: handler failed", self._name)
            with self._lock:
                self._idle += 1

    def call(self, fn, *args) -> "Outcome":
        """Runs ``fn(*args)`` on a pool thread; its ``Outcome`` gives the result."""
        outcome = Outcome()
        self.submit(outcome._run, fn, args)
        return outcome

    def map(self, fn, items) -> list:
        """[fn(item) for item in items], run together on pool threads."""
        return [o.result() for o in [self.call(fn, item) for item in items]]

    def shutdown(self):
        """Lets the threads end once their jobs are done (it does not wait for them)."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        for _ in self._threads:
            self._jobs.put(None)


class Outcome:
    """The result of a ``HandlerPool.call``: ``result()`` waits for it, and raises what
    the call raised."""

    __slots__ = ("_done", "_value", "_error")

    def __init__(self):
        self._done = threading.Event()
        self._value = self._error = None

    def _run(self, fn, args):
        try:
            self._value = fn(*args)
        except BaseException as e:  # noqa: BLE001 - handed to result()
            self._error = e
        self._done.set()

    def result(self):
        self._done.wait()
        if self._error is not None:
            raise self._error
        return self._value


