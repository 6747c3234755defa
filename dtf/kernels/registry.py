"""Kernel registry keyed by (op type, device type), with optional dtype constraints.

A kernel is registered as a *factory*: ``factory(node) -> compute`` where ``node`` is the
NodeDef and ``compute(ctx, *inputs)`` returns one array or a tuple of arrays. Factories run
once per plan, so attribute parsing and Numba specialisation happen outside the step.

Kernels must not mutate their inputs: values may be shared with variables or feeds.

Kernel modules load on first use: a lookup of ``(op type, device type)`` imports the
modules that ``dtf.framework.registry_index`` names for it (a generated table; regenerate
it with ``python scripts/registry_index.py`` after adding or moving a kernel, a test checks
it). A miss imports every kernel module of that device before it reports, so an error
still lists everything registered for the op.

``host=True`` on a CPU kernel (or a numpy reference) says the op runs on the host on a GPU
device: its GPU kernel copies the inputs to host memory and calls the CPU kernel. It is a
GPU *fallback*, so a CUDA kernel registered later for some dtypes takes precedence.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field

from dtf.framework import errors
from dtf.framework.op_registry import defining_module, load_indexed


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
    resumes the step; ``cancel()`` takes it back when the step stops waiting otherwise.
    ``ready()`` (called holding ``resource.cond``), where given, is what the kernel waits
    for: a change that leaves it false need not resume the step (see ``due``)."""

    __slots__ = ("resume", "resource", "fired", "ready")

    def __init__(self, resume, resource, ready=None):
        self.resume = resume
        self.resource = resource
        self.fired = False
        self.ready = ready

    def due(self) -> bool:
        """Whether the change just made to the resource can let the kernel go on. A
        synchronous chief's take of the aggregated gradients waits for every worker's
        push: resumed on each, its step re-ran the kernel, found too few and parked again
        (W6 sync: 12 advances of the queue runner's partition per global step on the ps)."""
        return self.ready is None or self.ready()

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
    # The module whose import registered it (what the generated index names).
    module: str = field(default="", compare=False)


_KERNELS: dict[tuple[str, str], list[KernelDef]] = {}
_loaded_keys: set = set()  # (op type, device type) whose indexed modules are imported
_all_loaded: set = set()  # device types whose every kernel module is imported
HOST_LABEL = "host memory"


def register_kernel(op_type: str, device: str = "CPU", dtypes=None, label: str = "",
                    fallback: bool = False, blocking: bool = False, host: bool = False):
    """Decorator: ``@register_kernel("MatMul", "CPU", dtypes=FLOATS)`` on a factory.

    ``fallback`` kernels (the numpy reference) serve only the dtypes no primary kernel
    claims, so a specialised kernel can be added without touching the fallback.
    ``host`` (CPU kernels only): on a GPU device the op runs this CPU kernel on the host.
    """
    if host and device != "CPU":
        raise ValueError(f"host=True is for CPU kernels (the op's GPU kernel runs them); "
                         f"{op_type} on {device}")
    names = None if dtypes is None else frozenset(getattr(d, "name", d) for d in dtypes)
    module = defining_module()

    def deco(factory):
        _add(KernelDef(op_type, device, names, factory, label or factory.__module__, fallback, blocking,
                       module))
        if host and not any(e.label == HOST_LABEL for e in _KERNELS.get((op_type, "GPU"), ())):
            _add(KernelDef(op_type, "GPU", None, _on_host(op_type), HOST_LABEL, True, blocking, module))
        return factory

    return deco


def _add(kdef):
    entries = _KERNELS.setdefault((kdef.op_type, kdef.device_type), [])
    for e in entries:
        if e.fallback != kdef.fallback:
            continue
        if e.dtypes is None or kdef.dtypes is None or (e.dtypes & kdef.dtypes):
            both = None if e.dtypes is None or kdef.dtypes is None else sorted(e.dtypes & kdef.dtypes)
            overlap = "any dtype" if both is None else both
            raise KeyError(f"kernel for {kdef.op_type} on {kdef.device_type} registered twice ({overlap}); "
                           f"first: {e.label or e.factory.__module__}")
    entries.append(kdef)
    entries.sort(key=lambda e: e.fallback)  # primaries first


def _on_host(op_type):
    """The GPU factory of a host-run op: inputs copied to host memory, the CPU kernel run
    (variables, queues and ops with no CUDA kernel yet); the next GPU kernel copies back."""

    def factory(node):
        from dtf.kernels.cuda.device import to_host  # numba.cuda loads with the first GPU plan

        cpu = lookup(op_type, "CPU", node.dtype_key).factory(node)
        return lambda ctx, *xs: cpu(ctx, *[to_host(x) for x in xs])

    factory.__name__ = f"on_host_{op_type}"
    return factory


def simple(fn):
    """Adapts ``fn(*inputs)`` (no attrs, no ctx) to the factory form."""

    def factory(node):
        return lambda ctx, *inputs: fn(*inputs)

    factory.__name__ = getattr(fn, "__name__", "simple")
    factory.__module__ = getattr(fn, "__module__", "")
    return factory


def _load(op_type, device_type):
    """Imports the modules the index names for the pair (once; imports are thread-safe, and
    another thread's import in progress is waited for by the import system)."""
    key = (op_type, device_type)
    if key in _loaded_keys:
        return
    from dtf.framework import registry_index

    load_indexed(registry_index.KERNELS.get(device_type, {}), op_type)
    _loaded_keys.add(key)


def load_all(device_type="CPU"):
    """Imports every kernel module of ``device_type`` (what a miss or a listing needs).

    The CUDA modules load only for "GPU": importing numba.cuda fixes the simulator choice
    and slows CPU-only programs."""
    if device_type in _all_loaded:
        return
    from dtf.framework import registry_index

    for mod in registry_index.KERNEL_MODULES.get(device_type, ()):
        importlib.import_module(mod)
    _all_loaded.add(device_type)


def has_kernel(op_type, device_type, dtype=None) -> bool:
    try:
        lookup(op_type, device_type, dtype)
        return True
    except errors.NotFoundError:
        return False


def _find(op_type, device_type, name):
    for e in _KERNELS.get((op_type, device_type), ()):
        if e.dtypes is None or name is None or name in e.dtypes:
            return e
    return None


def lookup(op_type: str, device_type: str, dtype=None) -> KernelDef:
    _load(op_type, device_type)
    name = getattr(dtype, "name", dtype)
    found = _find(op_type, device_type, name)
    if found is None and device_type not in _all_loaded:
        load_all(device_type)  # an op the index does not know yet still finds its kernel
        found = _find(op_type, device_type, name)
    if found is not None:
        return found
    _load(op_type, "CPU")  # so the message lists the CPU kernels too
    registered = []
    for (t, dev), entries in sorted(_KERNELS.items()):
        if t == op_type:
            kinds = ",".join("*" if e.dtypes is None else ",".join(sorted(e.dtypes)) for e in entries)
            registered.append(f"{dev}[{kinds}]")
    have = ("; registered: " + " ".join(registered) if registered else
            "; no kernel registered for it at all (one added since dtf/framework/registry_index.py "
            "was generated loads once scripts/registry_index.py has run)")
    raise errors.NotFoundError(None, None, f"no kernel for {op_type} on {device_type} for {name}{have}")


def registered_kernels(*device_types):
    """Every kernel of the device types (default CPU) and what else has loaded so far."""
    for dev in device_types or ("CPU",):
        load_all(dev)
    return {k: list(v) for k, v in _KERNELS.items()}
