"""Direct numpy-ufunc kernels for the hot elementwise ops on numeric dtypes, and Cast.

Both inputs of a binary op always share one dtype (the graph layer enforces it), so the
ufunc's result already has TF's dtype and the reference's dtype bookkeeping can be
skipped; the executor runs each step under ``np.errstate(all="ignore")``, so no per-call
error-state context is needed either. Everything else (strings, integer division rules,
float16 promotion corner cases) stays with the numpy reference. A small step of the MLP
example spends most of its time in these ops: this cut an Add from ~10 us to ~3 us.
"""
from __future__ import annotations

import operator

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference import REFERENCE
from dtf.kernels.registry import register_kernel
from .jit_loading import tiered_kernel

FLOATS = (dtypes.float16, dtypes.float32, dtypes.float64)
NUMERIC = FLOATS + (dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16)

# op type -> (ufunc, dtypes it is exact for)
_BINARY = {
    "Add": (np.add, NUMERIC), "Sub": (np.subtract, NUMERIC), "Mul": (np.multiply, NUMERIC),
    "Maximum": (np.maximum, NUMERIC), "Minimum": (np.minimum, NUMERIC),
    "RealDiv": (np.true_divide, FLOATS), "Pow": (np.power, FLOATS),
    "Less": (np.less, NUMERIC), "LessEqual": (np.less_equal, NUMERIC),
    "Greater": (np.greater, NUMERIC), "GreaterEqual": (np.greater_equal, NUMERIC),
    "Equal": (np.equal, NUMERIC), "NotEqual": (np.not_equal, NUMERIC),
}
_UNARY = {
    "Neg": (np.negative, NUMERIC), "Abs": (np.abs, NUMERIC), "Square": (np.square, NUMERIC),
    "Exp": (np.exp, FLOATS), "Log": (np.log, FLOATS), "Sqrt": (np.sqrt, FLOATS),
    "Tanh": (np.tanh, FLOATS), "Sin": (np.sin, FLOATS), "Cos": (np.cos, FLOATS),
    "Floor": (np.floor, FLOATS), "Ceil": (np.ceil, FLOATS), "Sign": (np.sign, NUMERIC),
    "Log1p": (np.log1p, FLOATS),
}


# The operator form of a ufunc: on arrays it is the same ufunc call (ndarray.__add__ is
# np.add), but on two numpy scalars (what a 0-d result becomes, e.g. a loop counter) it
# skips the ufunc machinery: 0.1 us instead of 1.4 us a call.
_OPERATOR_FOR = {
    np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
    np.less: operator.lt, np.less_equal: operator.le, np.greater: operator.gt,
    np.greater_equal: operator.ge, np.equal: operator.eq, np.not_equal: operator.ne,
}


def _binary_factory(ufunc):
    fn = _OPERATOR_FOR.get(ufunc, ufunc)

    def factory(node):
        return lambda ctx, x, y: fn(x, y)

    return factory


def _unary_factory(ufunc):
    def factory(node):
        return lambda ctx, x: ufunc(x)

    return factory


for _op, (_uf, _dts) in _BINARY.items():
    register_kernel(_op, "CPU", dtypes=_dts, label="numpy ufunc")(_binary_factory(_uf))
for _op, (_uf, _dts) in _UNARY.items():
    register_kernel(_op, "CPU", dtypes=_dts, label="numpy ufunc")(_unary_factory(_uf))


@register_kernel("Sigmoid", "CPU", dtypes=FLOATS, label="numpy")
def _sigmoid(node):
    # Python floats are weak scalars (NEP 50): the result keeps x's dtype.
    return lambda ctx, x: 1.0 / (1.0 + np.exp(-x))


def _cast_factory(node):
    attrs, ref = node.attrs, REFERENCE["Cast"]
    dst = attrs["DstT"].as_numpy_dtype

    def compute(ctx, x):
        if x.dtype.hasobject:
            return ref(attrs, x)  # raises: strings need tf.strings.to_number
        return x.astype(dst)

    return compute


# Cast picks its kernel by DstT (strings stay with the reference); the source is checked per call.
register_kernel("Cast", "CPU", dtypes=NUMERIC + (dtypes.bool,), label="numpy astype")(_cast_factory)


# -- AddN ----------------------------------------------------------------------------------------
# Elements per slice of a large elementwise kernel on the intra-op threads: 512 KB of
# float32, so a slice's inputs and output stay in L2 between the adds, and a 4 MiB tensor
# makes 8 slices for 2 threads.
SLICE_ELEMENTS = 1 << 17


def over_slices(fn, size):
    """``fn(s0, s1)`` over [0, size) in slices of SLICE_ELEMENTS, on the intra-op threads
    when there are two or more (each slice writes only its own range of the output)."""
    count = -(-size // SLICE_ELEMENTS)
    if count <= 1:
        fn(0, size)
        return
    from .intra_op import run_chunks

    run_chunks(lambda k: fn(k * SLICE_ELEMENTS, min(size, (k + 1) * SLICE_ELEMENTS)), count)


@register_kernel("AddN", "CPU", dtypes=NUMERIC, label="numpy ufunc, sliced")
def _add_n(node):
    """Sums into one output with ``out=``, slice by slice: the reference's ``out = out + x``
    made a fresh array per input, and a gradient sum of three 4 MiB tensors (the ResNet
    step's residual branches) took 3.5 ms; sliced, each slice's partial sum stays in cache
    and the slices' page faults and adds spread over the threads. Inputs are added in
    order, as TF's CPU kernel adds them."""
    ref = REFERENCE["AddN"]

    def compute(ctx, *xs):
        first = xs[0]
        if (len(xs) == 1 or first.size < SLICE_ELEMENTS
                or any(x.shape != first.shape or x.dtype != first.dtype for x in xs[1:])):
            return ref(node.attrs, *xs)  # small sums, and its checks and messages
        if not all(x.flags.c_contiguous for x in xs):
            # Views (a concat's gradient split along its last axis): numpy walks their
            # strides itself; making them contiguous first cost a copy each (2.2 ms against
            # 1.0 for two halves of 32x32x32x128). The same additions in the same order.
            out = np.add(xs[0], xs[1])
            for x in xs[2:]:
                np.add(out, x, out=out)
            return out
        flat = [x.reshape(-1) for x in xs]
        out = np.empty(first.shape, first.dtype)
        of = out.reshape(-1)

        def add(s0, s1):
            o = of[s0:s1]
            np.add(flat[0][s0:s1], flat[1][s0:s1], out=o)
            for x in flat[2:]:
                np.add(o, x[s0:s1], out=o)

        over_slices(add, first.size)
        return out

    return compute


# Select on inputs of one shape from this size: np.where branches on every element (a
# random mask over 2M float32: 8.5 ms), the loop blends (0.9 ms on one thread).
SELECT_MIN_ELEMENTS = 1 << 12


def _select(node):
    from . import dense_jit

    ref = REFERENCE[node.op]

    def compute(ctx, c, x, y):
        if (x.size < SELECT_MIN_ELEMENTS or not c.shape == x.shape == y.shape
                or c.dtype != np.bool_ or x.dtype != y.dtype or x.dtype == object):
            return ref(node.attrs, c, x, y)  # broadcasting, row conditions, its errors
        cf, xf, yf = (np.ascontiguousarray(a).reshape(-1) for a in (c, x, y))
        out = np.empty(x.shape, x.dtype)
        of = out.reshape(-1)
        over_slices(lambda s0, s1: dense_jit._select_into(cf[s0:s1], xf[s0:s1], yf[s0:s1],
                                                         of[s0:s1]), x.size)
        return out

    return compute


for _op in ("Select", "SelectV2"):
    register_kernel(_op, "CPU", dtypes=NUMERIC, label="numba blend over slices")(tiered_kernel(_select))
