"""A short busy wait before a thread sleeps in a poll, giving its CPU to any thread that
wants it.

On a virtual machine a message to a sleeping process costs its sender the wake-up of an
idle CPU and its receiver a cold start: 27-32 us per hop of a cross-task step, a third of
a small step. A waiting thread that keeps polling without blocking for ``DTF_SPIN_US``
(default 250) first is still running when its message lands. Between two polls it yields
its CPU (``sched_yield``): a thread that has work, of this process or another, runs at
once in its place, so a spinning thread costs others at most a context switch. (Without
the yield the three processes of a cross-task step on two cores took turns being
preempted, and spinning had to stop whenever a thread was kept from a CPU; that guard is
gone with it.) A thread spins on one wait in eight only (judging again every LOOK_EVERY
waits, on what those probes find) while

- fewer than a quarter of its spins caught their message: spinning is then mostly CPU
  burnt for nothing;
- more than one spin in ten lost its CPU for over STARVED_S between two polls: the
  threads it yielded to kept the CPU that long, so its message, when it came, waited for
  their time slice to end, where a sleeping thread woken by it would have run at once
  (two workers and their ps training a CNN on two cores: half of a worker's spins took
  over 1 ms; the cross-task step's and the MLP training's under 1%).

It does not spin at all while another thread of its process runs session steps too: a
spinning thread holds the GIL but for its polls' and yields' system calls. A server's I/O
thread spins only while no session step is under way in its process; a thread waiting
inside a step only while it is the one thread that ran steps lately (a synchronous chief
runs its queue runner's steps beside its training loop's).
"""
from __future__ import annotations

import os
import threading
import time

SPIN_S = max(0.0, float(os.environ.get("DTF_SPIN_US", "250"))) / 1e6
# The share of spins that must catch their message for a thread to go on spinning.
HIT_LIMIT = 0.25
# A gap this long between two polls of a spin: the yield gave the CPU away for that long.
STARVED_S = 0.0005
# The share of spins that may have such a gap for a thread to go on spinning.
STARVED_LIMIT = 0.1
# While spins miss or starve, one wait in PROBE_EVERY still spins.
PROBE_EVERY = 8
# Waits between two looks.
LOOK_EVERY = 32
# Seconds after its last step a thread still counts as one that runs steps.
STEP_THREAD_S = 0.1

_clock = time.perf_counter
# Gives the calling thread's CPU to a runnable thread, if any (it releases the GIL too).
_yield_cpu = getattr(os, "sched_yield", None)


class _ThreadSpin:
    """One thread's judgement of whether spinning pays, renewed every LOOK_EVERY waits."""

    def __init__(self):
        self.waits = 0
        self.spins = 0
        self.hits = 0
        self.starved = 0
        self.wasteful = False  # the spins of the last window mostly missed, or starved

    def should_spin(self) -> bool:
        self.waits += 1
        if self.waits % LOOK_EVERY == 0:
            self._look()
        return not self.wasteful or self.waits % PROBE_EVERY == 0

    def _look(self):
        if self.spins:
            self.wasteful = (self.hits < HIT_LIMIT * self.spins
                             or self.starved > STARVED_LIMIT * self.spins)
        self.spins = self.hits = self.starved = 0

    def spun(self, hit: bool, starved: bool):
        self.spins += 1
        self.hits += hit
        self.starved += starved


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
        state = _local.state = _ThreadSpin()
    return state


def spin(poll_now, in_loop=False):
    """``poll_now()`` (a poll that does not block) until it answers something or the spin
    is over; its last answer (falsy when nothing came: the caller then blocks).
    ``in_loop``: the caller is a server's I/O loop (see the module's notes)."""
    if not SPIN_S or _yield_cpu is None:  # without a yield a spin can starve others
        return None
    if (_steps if in_loop else _steps > 1 or _other_step_threads()):
        return None
    state = _state()
    if not state.should_spin():
        return None
    last = _clock()
    end = last + SPIN_S
    starved = False
    while True:
        fired = poll_now()
        now = _clock()
        starved = starved or now - last > STARVED_S
        if fired or now > end:
            state.spun(bool(fired), starved)
            return fired
        last = now
        _yield_cpu()
