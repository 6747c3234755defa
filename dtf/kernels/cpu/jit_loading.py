"""dtf's Numba loops, loaded on a background thread once they are worth it; numpy stands
in for them until then.

Loading costs a process about half a second of interpreter time: importing Numba (about
0.25 s here) and initialising its CPU target on the first cached kernel (about 0.3 s
more). Every loop behind a CPU kernel only speeds up what numpy computes (the reference,
or the unfused kernels of a fused group), so nothing waits for it: numpy serves while the
loops load, and the loading shares the interpreter with the steps meanwhile.

When to load is a rent-or-buy choice. The stand-ins' cost is measured as they run: the
loading starts once they have taken ``STANDIN_BUDGET_S`` in all (about what the loading
itself costs, so a process never loses more than about twice what the best choice made in
hindsight would), or at once when a kernel's stand-in takes ``SLOW_CALL_S`` for the second
time (large tensors, where the loops pay for themselves within a few hundred calls). Not
at its first slow call: a variable's initializer runs once, on 6.4M elements for a
50,000 x 128 table, and the loops loaded for it on a parameter server (which never ran
another stand-in) cost that task about 150 MiB of Numba and LLVM for nothing. A small
model's steps reach it late or never: the first 100 steps of the W5 MLP took 400-430 ms against ~110 ms
for the next hundreds while its worker loaded the loops, which then save ~60 us per step
(~5,000 steps to pay back; its stand-ins take ~80 us per step, so they load after ~6,000).
``DTF_PRELOAD_KERNELS=1`` makes a serving process load them up front instead.

``loaded()`` is the switch kernels read on every call (one attribute read once loaded);
``run_stand_in`` runs and charges the numpy path. ``when_loaded(make_fast, slow)`` and
``tiered_kernel(factory)`` wrap the two usual shapes. If the loading fails, numpy keeps
serving and the failure is logged once.

``DTF_JIT_AFTER_S`` sets the budget (0: load at the first stand-in call).
``DTF_JIT_BACKGROUND=0`` loads on the calling thread the first time a kernel asks instead;
the unit tests do so, so that they exercise the loops, not the stand-ins.
"""
from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
import time

log = logging.getLogger("dtf")

BACKGROUND = os.environ.get("DTF_JIT_BACKGROUND", "1") != "0"
# How long interpreter exit waits for a loading still under way: a thread stopped in the
# middle of an import can hold the import lock that exit handlers need.
EXIT_WAIT_S = 30.0

_MODULES = ("dtf.kernels.cpu.dense_jit", "dtf.kernels.cpu.nn_jit", "dtf.kernels.cpu.conv_jit",
            "dtf.kernels.cpu.adam_jit", "dtf.kernels.cpu.norm_jit",
            "dtf.kernels.cpu.pool_jit", "dtf.kernels.cpu.image_jit")

# Seconds of stand-in time after which the loops load: about the loading's own cost.
STANDIN_BUDGET_S = float(os.environ.get("DTF_JIT_AFTER_S", "0.5"))
# A kernel's second stand-in call this slow starts the loading at once (on 10M float32
# elements, relu(a*b+c)*0.5 takes 26 ms in numpy and 4 ms as one loop).
SLOW_CALL_S = 0.002

_done = threading.Event()
_lock = threading.Lock()
# Called when the loops that serve kernels change (they loaded, or a loop compiled in the
# background took over): whatever was measured of a step's kernels before is out of date.
_change_listeners: list = []
_loader: threading.Thread | None = None
_failed = False


def loaded() -> bool:
    """True once the loops can run. Starts nothing, except when loading on the calling
    thread (``DTF_JIT_BACKGROUND=0``), where the first kernel to ask loads them."""
    if _done.is_set():
        return True
    if not BACKGROUND and _loader is None and not _failed:
        _start()
    return _done.is_set()


_standin_s = 0.0  # stand-in time so far (a lost update under a race only delays loading)
# ids of the kernels (``key``s) that have made one slow stand-in call: their next one loads.
_slow_once: set = set()


def charge(seconds: float, key=None):
    """Counts ``seconds`` a numpy stand-in ran where a loop would have; starts the loading
    once they add up to the budget, or when this call was slow and so was an earlier one
    of the same kernel ``key`` (None: this call alone decides)."""
    global _standin_s
    _standin_s += seconds
    if _standin_s >= STANDIN_BUDGET_S:
        start()
    elif seconds >= SLOW_CALL_S:
        if key is None or id(key) in _slow_once:
            start()
        else:
            _slow_once.add(id(key))


# A thread's CPU clock is a system call (no vDSO reads it: 0.56 us here, perf_counter 0.05),
# read twice per stand-in call: a fifth of a small model's gradient-descent update. So a
# kernel whose calls are quick enough that SAMPLE_EVERY of them stay under SLOW_CALL_S is
# timed on one call in SAMPLE_EVERY, which is charged for all of them.
SAMPLE_EVERY = 8
_untimed: dict = {}  # id(key) -> the kernel's calls still to run without the clock


def run_stand_in(fn, *args, key=None):
    """``fn(*args)``, the numpy path of a kernel whose loops have not loaded, charged to
    the kernel ``key`` (an object that lives as long as the kernel; default ``fn``).
    Charged in this thread's CPU time, not wall time: on a busy machine a tiny call that
    lost its core for a few milliseconds is not slow work a loop would save (wall time
    started the loading for small models whenever other processes ran)."""
    if key is None:
        key = fn
    left = _untimed.get(id(key))
    if left:
        _untimed[id(key)] = left - 1
        return fn(*args)
    t0 = time.thread_time()
    try:
        return fn(*args)
    finally:
        seconds = time.thread_time() - t0
        if seconds * SAMPLE_EVERY < SLOW_CALL_S:  # so never a slow call: charge() can tell
            _untimed[id(key)] = SAMPLE_EVERY - 1
            seconds *= SAMPLE_EVERY
        charge(seconds, key)


def start():
    """Starts loading now (in the background unless ``DTF_JIT_BACKGROUND=0``)."""
    if not _done.is_set() and _loader is None and not _failed:
        _start()


PRELOAD_ENV = "DTF_PRELOAD_KERNELS"


def preload_for_server():
    """Starts the loading in a process that exists to serve (a standalone task, or a script
    blocked in ``Server.join()``) when ``DTF_PRELOAD_KERNELS=1``: for tasks that will run
    large kernels and sit idle first. Not by default: tasks are often started just before
    their clients, and a loading still under way when training starts shares the task's
    interpreter with every step (W5's first 100 steps took 200 ms instead of 120 while its
    ps finished loading; W5 async, 1 ps + 1 worker, 807/826 steps/s with against 850/845
    without). The budget above loads the loops of a task whose kernels need them."""
    if os.environ.get(PRELOAD_ENV, "0") == "1":
        start()


def state() -> str:
    """'loaded', 'loading', 'failed' or 'idle' (nothing has asked for the loops yet), for a
    task's Status reply; starts nothing."""
    if _done.is_set():
        return "loaded"
    if _failed:
        return "failed"
    return "loading" if _loader is not None else "idle"


# The interpreter's switch interval while the loader runs. Importing holds the interpreter
# for most of half a second, and a step thread that gave it up for a message or a wait
# would get it back only when the loader's 5 ms slice ends: the first 50 steps of the W5
# MLP took 419-690 ms with the default against 276-333 ms with this (five runs each).
LOADING_SWITCH_INTERVAL_S = 0.0005


def _load():
    global _failed
    interval = sys.getswitchinterval()
    loading_interval = min(interval, LOADING_SWITCH_INTERVAL_S)
    sys.setswitchinterval(loading_interval)
    try:
        import importlib

        import numpy as np

        for name in _MODULES:
            importlib.import_module(name)
        from . import dense_jit

        # The first cached kernel a process loads initialises Numba's CPU target.
        dense_jit._sum_middle(np.zeros((1, 1, 1), np.float32))
    except Exception:  # noqa: BLE001 - numpy keeps serving
        _failed = True
        log.exception("could not load the Numba kernels; numpy runs in their place")
        return
    finally:
        if sys.getswitchinterval() == loading_interval:
            sys.setswitchinterval(interval)  # unless someone else has set it meanwhile
    _done.set()
    kernels_changed()


def on_kernels_changed(listener):
    """Calls ``listener()`` (on the thread that made the change) whenever kernels change
    speed: the loops loaded, or a loop compiled in the background now serves."""
    _change_listeners.append(listener)


def kernels_changed():
    for listener in list(_change_listeners):
        listener()


def _start():
    global _loader
    with _lock:
        if _loader is not None or _done.is_set():
            return
        if not BACKGROUND:
            _loader = threading.current_thread()
            _load()
            return
        _loader = threading.Thread(target=_load, name="dtf-jit-loader", daemon=True)
        _loader.start()
        atexit.register(_loader.join, EXIT_WAIT_S)


def _after_fork_in_child():
    """A child forked mid-load has the loader's state but not its thread: start afresh."""
    global _loader, _lock
    if not _done.is_set():
        _loader, _lock = None, threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def wait(timeout_s: float | None = None) -> bool:
    """Loads now if nothing has started it and waits until done; True when loaded."""
    start()
    _done.wait(timeout_s)
    return _done.is_set()


def when_loaded(make_fast, slow):
    """A callable that runs ``slow`` until the loops have loaded, then ``make_fast()``'s
    result (made once). ``slow`` charges its own calls (``run_stand_in``) where a loop
    would have run. Plans built after the loading get the fast one directly."""
    if loaded():
        return make_fast()
    fast = None

    def call(*args):
        nonlocal fast
        if fast is None:
            if not loaded():
                return slow(*args)
            fast = make_fast()
        return fast(*args)

    return call


def tiered_kernel(factory):
    """A kernel factory whose Numba kernel takes over from the numpy reference of the same
    op once the loops have loaded (the reference raises the same errors)."""

    def tiered_factory(node):
        from dtf.kernels.reference import REFERENCE

        ref, attrs = REFERENCE[node.op], node.attrs
        return when_loaded(lambda: factory(node),
                           lambda ctx, *xs: run_stand_in(ref, attrs, *xs, key=attrs))

    tiered_factory.__name__ = getattr(factory, "__name__", "tiered")
    tiered_factory.__doc__ = factory.__doc__
    return tiered_factory
