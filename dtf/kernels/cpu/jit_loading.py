"""dtf's Numba loops, loaded on a background thread while numpy stands in for them.

A process's first step that needs a Numba loop used to pay for Numba itself: importing it
(about 0.25 s here) and initialising its CPU target on the first cached kernel (about
0.3 s more), 0.57 s of the first training step of an MLP on a worker, and as much again on
its ps. Every loop behind a CPU kernel only speeds up what numpy computes (the reference,
or the unfused kernels of a fused group), so there is no need to wait: the first kernel
that wants one starts the loading here, and until it is done the numpy path runs. Steps go
on meanwhile, sharing the interpreter with the loader for about half a second.

``loaded()`` is the switch kernels read on every call (one attribute read once loaded).
``when_loaded(make_fast, slow)`` and ``tiered_kernel(factory)`` wrap the two usual shapes.
If the loading fails, numpy keeps serving and the failure is logged once.

``DTF_JIT_BACKGROUND=0`` loads on the calling thread instead (the first step waits, as
before); the unit tests do so, so that they exercise the loops, not the stand-ins.
"""
from __future__ import annotations

import atexit
import logging
import os
import sys
import threading

log = logging.getLogger("dtf")

BACKGROUND = os.environ.get("DTF_JIT_BACKGROUND", "1") != "0"
# How long interpreter exit waits for a loading still under way: a thread stopped in the
# middle of an import can hold the import lock that exit handlers need.
EXIT_WAIT_S = 30.0

_MODULES = ("dtf.kernels.cpu.dense_jit", "dtf.kernels.cpu.nn_jit")

_done = threading.Event()
_lock = threading.Lock()
_loader: threading.Thread | None = None
_failed = False


def loaded() -> bool:
    """True once the loops can run; the first call starts loading them."""
    if _done.is_set():
        return True
    if _loader is None and not _failed:
        _start()
    return _done.is_set()


def uses_loops(factory):
    """Marks a CPU kernel factory whose kernels switch to these loops once loaded."""
    factory.uses_loops = True
    return factory


_ops_with_loops: frozenset | None = None


def _ops_using_loops() -> frozenset:
    global _ops_with_loops
    if _ops_with_loops is None:
        from dtf.kernels import registry

        _ops_with_loops = frozenset(
            op for (op, device), defs in registry.registered_kernels().items()
            if device == "CPU" and any(getattr(d.factory, "uses_loops", False) for d in defs))
    return _ops_with_loops


def prepare_for(op_types):
    """Starts the loading when any of ``op_types`` has a CPU kernel marked ``uses_loops``:
    a session calls it when its graph is made or extended, so that the loading overlaps
    with what comes before the training loop (initialising, waiting for the chief). Sum,
    whose row sums also use a loop, is not marked: a graph that only reduces is not worth a
    background compiler."""
    if not _done.is_set() and _loader is None and not _ops_using_loops().isdisjoint(op_types):
        loaded()


PRELOAD_ENV = "DTF_PRELOAD_KERNELS"


def preload_for_server():
    """Starts the loading in a process that exists to serve (a standalone task, or a script
    blocked in ``Server.join()``, as a classic ps is): it has nothing else to do before the
    first step arrives, and a loading that starts with the first training step shares the
    interpreter with that step's messages (the first 100 steps of an MLP took 2-3x longer).
    ``DTF_PRELOAD_KERNELS=0`` leaves it to the first kernel that needs a loop."""
    if os.environ.get(PRELOAD_ENV, "1") != "0":
        loaded()


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
        dense_jit._sum_rows(np.zeros((1, 1), np.float32))
    except Exception:  # noqa: BLE001 - numpy keeps serving
        _failed = True
        log.exception("could not load the Numba kernels; numpy runs in their place")
        return
    finally:
        if sys.getswitchinterval() == loading_interval:
            sys.setswitchinterval(interval)  # unless someone else has set it meanwhile
    _done.set()


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
    loaded()
    _done.wait(timeout_s)
    return _done.is_set()


def when_loaded(make_fast, slow):
    """A callable that runs ``slow`` until the loops have loaded, then ``make_fast()``'s
    result (made once). Plans built after the loading get the fast one directly."""
    if loaded():
        return make_fast()
    fast = None

    def call(*args):
        nonlocal fast
        if fast is None:
            if not _done.is_set():
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
        return when_loaded(lambda: factory(node), lambda ctx, *xs: ref(attrs, *xs))

    tiered_factory.__name__ = getattr(factory, "__name__", "tiered")
    tiered_factory.__doc__ = factory.__doc__
    return uses_loops(tiered_factory)
