"""A short busy wait before a thread sleeps in a poll, while the host has CPUs to spare.

On a virtual machine a message to a sleeping process costs its sender the wake-up of an
idle CPU and its receiver a cold start: 27-32 us per hop of a cross-task step, a third of
a small step. A waiting thread that keeps polling without blocking for ``DTF_SPIN_US``
(default 250) first is still running when its message lands. Spinning is worth it only
where that CPU time is free and the message usually comes within the spin, so a thread
stops spinning (looking again every LOOK_EVERY waits) while

- it was preempted more than once per ten waits: another thread wanted its CPU (hosts
  with more busy processes than cores keep their CPU for work);
- fewer than a quarter of its spins caught their message (it then still spins on one
  wait in eight, to notice when its waits become short again);
- another thread of its process runs session steps too: a spinning thread holds the GIL
  but for its polls' system calls. A server's I/O thread spins only while no session
  step is under way in its process; a thread waiting inside a step only while it is the
  one thread that ran steps lately (a synchronous chief runs its queue runner's steps
  beside its training loop's).
"""
from __future__ import annotations

import os
import resource
import threading
import time

SPIN_S = max(0.0, float(os.environ.get("DTF_SPIN_US", "250"))) / 1e6
# Preemptions per wait above which a thread counts as kept from a CPU.
PREEMPTIONS_LIMIT = 0.1
# The share of spins that must catch their message for a thread to go on spinning.
HIT_LIMIT = 0.25
# While spins miss, one wait in PROBE_EVERY still spins.
PROBE_EVERY = 8
# Waits between two looks (a look costs ~0.5 us).
LOOK_EVERY = 32
# Seconds after its last step a thread still counts as one that runs steps.
STEP_THREAD_S = 0.1

_clock = time.perf_counter


def _preemptions() -> int:
    """Involuntary context switches of the calling thread so far."""
    return resource.getrusage(resource.RUSAGE_THREAD).ru_nivcsw


class _ThreadSpin:
    """One thread's judgement of whether spinning pays, renewed every LOOK_EVERY waits."""

    def __init__(self, preemptions=_preemptions):
        self.preemptions = preemptions
        self.waits = 0
        self.spins = 0
        self.hits = 0
        self.last = None  # the preemption count at the last look
        self.contended = preemptions is None  # no way to tell: never spin
        self.missing = False  # the spins of the last window mostly missed

    def should_spin(self) -> bool:
        self.waits += 1
        if self.waits % LOOK_EVERY == 0:
            self._look()
        if self.contended:
            return False
        return not self.missing or self.waits % PROBE_EVERY == 0

    def _look(self):
        if self.preemptions is None:
            return
        now = self.preemptions()
        if self.last is not None:
            self.contended = now - self.last > PREEMPTIONS_LIMIT * LOOK_EVERY
        self.last = now
        if self.spins:
            self.missing = self.hits < HIT_LIMIT * self.spins
        self.spins = self.hits = 0

    def spun(self, hit: bool):
        self.spins += 1
        self.hits += hit


_HAS_THREAD_USAGE = hasattr(resource, "RUSAGE_THREAD")
_local = threading.local()

# Session steps under way in this process, and when each thread last ran one
# (dtf.client.remote reports them).
_steps_lock = threading.Lock()
_steps = 0
_step_threads: dict = {}  # thread id -> when its last step ended


def step_started():
    global _steps
    with _steps_lock:
        _steps += 1


def step_ended():
    global _steps
    with _steps_lock:
        _steps -= 1
        _step_threads[threading.get_ident()] = _clock()


def _other_step_threads() -> bool:
    """Whether a thread other than this one ran a session step lately."""
    me = threading.get_ident()
    if not _step_threads or len(_step_threads) == 1 and me in _step_threads:
        return False
    recent = _clock() - STEP_THREAD_S
    with _steps_lock:
        for ident, when in list(_step_threads.items()):
            if when < recent:
                del _step_threads[ident]
            elif ident != me:
                return True
    return False


def _state() -> _ThreadSpin:
    state = getattr(_local, "state", None)
    if state is None:
        state = _local.state = _ThreadSpin(_preemptions if _HAS_THREAD_USAGE else None)
    return state


def spin(poll_now, in_loop=False):
    """``poll_now()`` (a poll that does not block) until it answers something or the spin
    is over; its last answer (falsy when nothing came: the caller then blocks).
    ``in_loop``: the caller is a server's I/O loop (see the module's notes)."""
    if not SPIN_S:
        return None
    if (_steps if in_loop else _steps > 1 or _other_step_threads()):
        return None
    state = _state()
    if not state.should_spin():
        return None
    end = _clock() + SPIN_S
    while True:
        fired = poll_now()
        if fired or _clock() > end:
            state.spun(bool(fired))
            return fired
