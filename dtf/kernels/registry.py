"""Kernel registry keyed by (op type, device type), with optional dtype constraints.

A kernel is registered as a *factory*: ``factory(node) -> compute`` where ``node`` is the
NodeDef and ``compute(ctx, *inputs)`` returns one array or a tuple of arrays. Factories run
once per plan, so attribute parsing and Numba specialisation happen outside the step.

Kernels must not mutate their inputs: values may be shared with variables or feeds.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass

from dtf.framework import errors


class WouldBlock(Exception):
    """Raised, before any side effect, by a blocking kernel whose step must not block (a
    step run in pieces on a server's I/O thread: ``ctx.may_park`` is its resume callback).
    ``subscribed``: the kernel registered the callback where it waits, so the step parks
    and retries the kernel when woken; False: the step must go on on a thread of its own.
    ``deadline`` (time.monotonic()) is when the kernel gives up, if ever. ``wake``: the
    ParkedWake the kernel registered, which says whether its resource has changed since
    (a step that resumes for another reason does not retry a kernel still bound to wait)."""

    def __init__(self, subscribed=False, deadline=None, wake=None):
        super().__init__("would block")
        self.subscribed = subscribed
        self.deadline = deadline
        self.wake = wake


class ParkedWake:
    """What a parked kernel registers with the resource it waits on (``resource.waiters``,
    guarded by ``resource.cond``): calling it records that the resource changed and
    resumes the step; ``cancel()`` takes it back when the step stops waiting otherwise."""

    __slots__ = ("resume", "resource", "fired")

    def __init__(self, resume, resource):
        self.resume = resume
        self.resource = resource
        self.fired = False

    def __call__(self):
        self.fired = True
        self.resume()

    def cancel(self):
        """Unregisters it (a step that timed out, failed or moved to a thread): a resource
        nobody notifies again would otherwise keep every such step's callback."""
        if not self.fired:
            with self.resource.cond:
                try:
                    self.resource.waiters.remove(self)
                except ValueError:  # notified meanwhile
                    pass


@dataclass(frozen=True)
class KernelDef:
    op_type: str
    device_type: str
    dtypes: frozenset | None  # None: any dtype
    factory: object
    label: str
    fallback: bool = False
    # The kernel may wait for other steps (queues, accumulators): its partition always runs
    # on a thread of its own, never on a server's I/O thread.
    blocking: bool = False


_KERNELS: dict[tuple[str, str], list[KernelDef]] = {}
_loaded = False
_gpu_loaded = False


def register_kernel(op_type: str, device: str = "CPU", dtypes=None, label: str = "",
                    fallback: bool = False, blocking: bool = False):
    """Decorator: ``@register_kernel("MatMul", "CPU", dtypes=FLOATS)`` on a factory.

    ``fallback`` kernels (the numpy reference) serve only the dtypes no primary kernel
    claims, so a specialised kernel can be added without touching the fallback.
    """
    names = None if dtypes is None else frozenset(getattr(d, "name", d) for d in dtypes)

    def deco(factory):
        entries = _KERNELS.setdefault((op_type, device), [])
        for e in entries:
            if e.fallback != fallback:
                continue
            if e.dtypes is None or names is None or (e.dtypes & names):
                overlap = "any dtype" if e.dtypes is None or names is None else sorted(e.dtypes & names)
                raise KeyError(f"kernel for {op_type} on {device} registered twice ({overlap}); "
                               f"first: {e.label or e.factory.__module__}")
        entries.append(KernelDef(op_type, device, names, factory, label or factory.__module__, fallback,
                                 blocking))
        entries.sort(key=lambda e: e.fallback)  # primaries first
        return factory

    return deco


def simple(fn):
    """Adapts ``fn(*inputs)`` (no attrs, no ctx) to the factory form."""

    def factory(node):
        return lambda ctx, *inputs: fn(*inputs)

    factory.__name__ = getattr(fn, "__name__", "simple")
    factory.__module__ = getattr(fn, "__module__", "")
    return factory


_load_lock = threading.Lock()


def _ensure_loaded(device_type=None):
    """Imports the kernel modules once; other threads wait until registration is complete.

    The CUDA kernels load only when a GPU kernel is first looked up: importing numba.cuda
    at ``import dtf`` would fix the simulator choice and slow CPU-only programs.
    """
    global _loaded, _gpu_loaded
    if _loaded and (_gpu_loaded or device_type != "GPU"):
        return
    with _load_lock:
        if not _loaded:
            from dtf.kernels import cpu  # noqa: F401  (registers the CPU kernels)

            _loaded = True
        if device_type == "GPU" and not _gpu_loaded:
            from dtf.kernels import cuda  # noqa: F401  (registers the CUDA kernels)

            _gpu_loaded = True


def has_kernel(op_type, device_type, dtype=None) -> bool:
    try:
        lookup(op_type, device_type, dtype)
        return True
    except errors.NotFoundError:
        return False


def lookup(op_type: str, device_type: str, dtype=None) -> KernelDef:
    _ensure_loaded(device_type)
    name = getattr(dtype, "name", dtype)
    for e in _KERNELS.get((op_type, device_type), ()):
        if e.dtypes is None or name is None or name in e.dtypes:
            return e
    registered = []
    for (t, dev), entries in sorted(_KERNELS.items()):
        if t == op_type:
            kinds = ",".join("*" if e.dtypes is None else ",".join(sorted(e.dtypes)) for e in entries)
            registered.append(f"{dev}[{kinds}]")
    have = "; registered: " + " ".join(registered) if registered else "; no kernel registered for it at all"
    raise errors.NotFoundError(None, None, f"no kernel for {op_type} on {device_type} for {name}{have}")


def registered_kernels():
    _ensure_loaded()
    return {k: list(v) for k, v in _KERNELS.items()}
