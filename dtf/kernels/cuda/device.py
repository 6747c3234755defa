"""Device arrays: where a GPU partition's values live, and how kernels are launched.

Inside a GPU partition a value is either a CUDA device array (every tensor a kernel
computes) or a host numpy array (feeds, received tensors, integer constants, shapes).
Kernels take either: data inputs go through ``to_device`` (a no-op for device arrays),
shape-like inputs through ``host_ints``, as TF keeps such tensors in host memory.
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import config, cuda

from dtf.kernels.reference import REFERENCE

# The simulator runs every CUDA thread as a Python thread, so it gets small launches; the
# grid-stride loops give the same results with any launch size.
SIMULATED = bool(config.ENABLE_CUDASIM)
THREADS = 32 if SIMULATED else 128
MAX_BLOCKS = 2 if SIMULATED else 4096  # grid-stride loops cover the rest


def is_device(x) -> bool:
    return hasattr(x, "copy_to_host")


def to_device(x):
    if is_device(x):
        return x
    return cuda.to_device(np.asarray(x, order="C"))  # (ascontiguousarray makes 0-d 1-d)


def to_host(x):
    return x.copy_to_host() if is_device(x) else x


def host_ints(x) -> list:
    return [int(v) for v in np.asarray(to_host(x)).reshape(-1)]


def empty(shape, dtype):
    return cuda.device_array(tuple(int(d) for d in shape), dtype=np.dtype(dtype))


def flat(x):
    """A 1-d view of a contiguous device array (kernels index values linearly)."""
    return x.reshape(int(np.prod(x.shape, dtype=np.int64)))


def grid(n: int):
    """(blocks, threads) for a 1-d grid-stride launch over ``n`` items."""
    return min(MAX_BLOCKS, max(1, math.ceil(n / THREADS))), THREADS


def strides(shape) -> tuple:
    """Element strides of a C-contiguous array of ``shape``."""
    out = []
    acc = 1
    for d in reversed(shape):
        out.append(acc)
        acc *= int(d)
    return tuple(reversed(out))


def padded(t: tuple, fill: int) -> tuple:
    """Tuples passed to kernels must not be empty (rank 0 becomes rank 1)."""
    return t if t else (fill,)


def on_host(values) -> bool:
    """Whether ``values`` are all host arrays of integer or bool dtype: shapes, indices and
    axes, which TF's GPU kernels of shape-handling ops keep in host memory."""
    return all(not is_device(v) and np.asarray(v).dtype.kind in "iub" for v in values)


def host_reference_factory(op):
    """A kernel factory running ``op``'s numpy reference on host copies of the inputs."""
    fn = REFERENCE[op]

    def factory(node):
        return lambda ctx, *xs: fn(node.attrs, *[to_host(x) for x in xs])

    return factory


def host_ints_stay(op):
    """Decorator on a GPU kernel factory: when every input is already a host integer (or
    bool) array, the op runs its reference on the host and answers in host memory, so shape
    arithmetic never round-trips through the device."""
    fn = REFERENCE[op]

    def deco(factory):
        @functools.wraps(factory)
        def wrapped(node):
            compute = factory(node)

            def run(ctx, *xs):
                return fn(node.attrs, *xs) if on_host(xs) else compute(ctx, *xs)

            return run

        return wrapped

    return deco
