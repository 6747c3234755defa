"""A short busy wait before a thread sleeps in a poll, while the host has CPUs to spare.

On a virtual machine a message to a sleeping process costs its sender the wake-up of an
idle CPU and its receiver a cold start: 27-32 us per hop of a cross-task step, a third of
a small step. A waiting thread that keeps polling without blocking for ``DTF_SPIN_US``
(default 100) first is still running when its message lands. That CPU time is free only
while no other thread wants it: a thread that was kept waiting for a CPU lately (the
run-queue time of its own /proc schedstat, over 2% of the wall time since the last look)
sleeps at once, so busy hosts (training with more processes than cores) keep their CPU
for work.
"""
from __future__ import annotations

import os
import threading
import time

SPIN_S = max(0.0, float(os.environ.get("DTF_SPIN_US", "100"))) / 1e6
# Run-queue time over wall time above which a thread counts as kept from a CPU.
CONTENDED = 0.02
# Waits between two looks at the schedstat (a look costs a pread, ~2 us).
LOOK_EVERY = 32

_clock = time.perf_counter


class _ThreadContention:
    """Whether the calling thread waited for a CPU lately, from its schedstat."""

    def __init__(self, path="/proc/thread-self/schedstat"):
        self.waits = 0
        self.last = None  # (wall time, run-queue seconds) at the last look
        self.contended = False
        try:
            self.fd = os.open(path, os.O_RDONLY)
        except OSError:  # not Linux, or no schedstats: never spin
            self.fd = None
            self.contended = True

    def check(self) -> bool:
        self.waits += 1
        if self.fd is None or self.waits % LOOK_EVERY:
            return self.contended
        try:
            queued = int(os.pread(self.fd, 128, 0).split()[1]) / 1e9
        except (OSError, IndexError, ValueError):
            self.contended = True
            return True
        now = _clock()
        if self.last is not None:
            then, queued_then = self.last
            self.contended = queued - queued_then > CONTENDED * (now - then)
        self.last = (now, queued)
        return self.contended


_local = threading.local()


def _contended() -> bool:
    state = getattr(_local, "state", None)
    if state is None:
        state = _local.state = _ThreadContention()
    return state.check()


def spin(poll_now):
    """``poll_now()`` (a poll that does not block) until it answers something or the spin
    is over; its last answer (falsy when nothing came: the caller then blocks)."""
    if not SPIN_S or _contended():
        return None
    end = _clock() + SPIN_S
    while True:
        fired = poll_now()
        if fired or _clock() > end:
            return fired
