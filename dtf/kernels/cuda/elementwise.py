"""Elementwise CUDA kernels: one generic kernel per unary or binary op, built from a table
of scalar device functions. Binary ops (and Select) broadcast through per-input strides (0
along a broadcast dimension); same-shape operands take a stride-free fast path.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from dtf.kernels.registry import register_kernel
from . import device as D

FLOATS = ("float32", "float64")
NUMBERS = FLOATS + ("int32", "int64")


@cuda.jit(device=True)
def _sigmoid(x):
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


@cuda.jit(device=True)
def _softplus(x):
    return x + math.log1p(math.exp(-x)) if x > 0 else math.log1p(math.exp(x))


@cuda.jit(device=True)
def _floor(x):
    """floor(x) as a float; NaN, infinities and floats too large to hold a fraction pass
    through (math.floor answers an int64 on the device)."""
    return math.floor(x) if abs(x) < 4503599627370496.0 else x  # 2**52


@cuda.jit(device=True)
def _ceil(x):
    return -_floor(-x)


@cuda.jit(device=True)
def _trunc(x):
    return _floor(x) if x >= 0 else _ceil(x)


@cuda.jit(device=True)
def _round_half_even(x):
    r = _floor(x)
    if r == x:  # integral, infinite or too large for a fraction
        return r
    d = x - r
    if d > 0.5 or (d == 0.5 and r % 2 != 0):
        r += 1
    return r


@cuda.jit(device=True)
def _floor_mod(x, y):
    """Python's (and TF's FloorMod) remainder: the sign of the divisor."""
    r = math.fmod(x, y)
    return r + y if r != 0 and (r < 0) != (y < 0) else r


# op -> (f(x, alpha), dtypes, output dtype or None for the input's); alpha carries
# LeakyRelu's attribute.
UNARY = {
    "Neg": (lambda x, a: -x, NUMBERS, None),
    "Abs": (lambda x, a: abs(x), NUMBERS, None),
    "Square": (lambda x, a: x * x, NUMBERS, None),
    "Sign": (lambda x, a: 1 if x > 0 else (-1 if x < 0 else x * 0), NUMBERS, None),
    "Sqrt": (lambda x, a: math.sqrt(x), FLOATS, None),
    "Rsqrt": (lambda x, a: 1.0 / math.sqrt(x), FLOATS, None),
    "Reciprocal": (lambda x, a: 1.0 / x, FLOATS, None),
    "Exp": (lambda x, a: math.exp(x), FLOATS, None),
    "Expm1": (lambda x, a: math.expm1(x), FLOATS, None),
    "Log": (lambda x, a: math.log(x), FLOATS, None),
    "Log1p": (lambda x, a: math.log1p(x), FLOATS, None),
    "Sin": (lambda x, a: math.sin(x), FLOATS, None),
    "Cos": (lambda x, a: math.cos(x), FLOATS, None),
    "Tan": (lambda x, a: math.tan(x), FLOATS, None),
    "Atan": (lambda x, a: math.atan(x), FLOATS, None),
    "Sinh": (lambda x, a: math.sinh(x), FLOATS, None),
    "Cosh": (lambda x, a: math.cosh(x), FLOATS, None),
    "Tanh": (lambda x, a: math.tanh(x), FLOATS, None),
    "Erf": (lambda x, a: math.erf(x), FLOATS, None),
    "Sigmoid": (lambda x, a: _sigmoid(x), FLOATS, None),
    "Relu": (lambda x, a: x if x > 0 else 0, NUMBERS, None),
    "Relu6": (lambda x, a: min(max(x, 0), 6), FLOATS, None),
    "Elu": (lambda x, a: x if x >= 0 else math.expm1(x), FLOATS, None),
    "Softplus": (lambda x, a: _softplus(x), FLOATS, None),
    "Softsign": (lambda x, a: x / (1.0 + abs(x)), FLOATS, None),
    "LeakyRelu": (lambda x, a: x if x > 0 else x * a, FLOATS, None),
    "Asin": (lambda x, a: math.asin(x), FLOATS, None),
    "Acos": (lambda x, a: math.acos(x), FLOATS, None),
    "Floor": (lambda x, a: _floor(x), FLOATS, None),
    "Ceil": (lambda x, a: _ceil(x), FLOATS, None),
    "Round": (lambda x, a: _round_half_even(x), FLOATS, None),
    "IsNan": (lambda x, a: math.isnan(x), FLOATS, np.bool_),
    "IsInf": (lambda x, a: math.isinf(x), FLOATS, np.bool_),
    "IsFinite": (lambda x, a: math.isfinite(x), FLOATS, np.bool_),
    "LogicalNot": (lambda x, a: not x, ("bool",), np.bool_),
}

_COMPARE = FLOATS + ("int32", "int64")
# op -> (f(x, y, alpha), dtypes, output dtype or None for the input's).
BINARY = {
    "Add": (lambda x, y, a: x + y, NUMBERS, None),
    "Sub": (lambda x, y, a: x - y, NUMBERS, None),
    "Mul": (lambda x, y, a: x * y, NUMBERS, None),
    "RealDiv": (lambda x, y, a: x / y, FLOATS, None),
    "Maximum": (lambda x, y, a: max(x, y), NUMBERS, None),
    "Minimum": (lambda x, y, a: min(x, y), NUMBERS, None),
    "SquaredDifference": (lambda x, y, a: (x - y) * (x - y), NUMBERS, None),
    "Pow": (lambda x, y, a: x ** y, FLOATS, None),
    "Atan2": (lambda x, y, a: math.atan2(x, y), FLOATS, None),
    "DivNoNan": (lambda x, y, a: x / y if y != 0 else 0, FLOATS, None),
    "ReluGrad": (lambda g, f, a: g if f > 0 else 0, FLOATS, None),
    "Relu6Grad": (lambda g, f, a: g if 0 < f < 6 else 0, FLOATS, None),
    "LeakyReluGrad": (lambda g, f, a: g if f > 0 else g * a, FLOATS, None),
    "EluGrad": (lambda g, y, a: g * (y + 1) if y < 0 else g, FLOATS, None),
    "SoftplusGrad": (lambda g, f, a: g * _sigmoid(f), FLOATS, None),
    "SoftsignGrad": (lambda g, f, a: g / ((1.0 + abs(f)) * (1.0 + abs(f))), FLOATS, None),
    "FloorDiv": (lambda x, y, a: _floor(x / y), FLOATS, None),
    "FloorMod": (lambda x, y, a: _floor_mod(x, y), FLOATS, None),
    "TruncateDiv": (lambda x, y, a: _trunc(x / y), FLOATS, None),
    "TruncateMod": (lambda x, y, a: math.fmod(x, y), FLOATS, None),
    "Xdivy": (lambda x, y, a: x / y if x != 0 else 0, FLOATS, None),
    "Less": (lambda x, y, a: x < y, _COMPARE, np.bool_),
    "LessEqual": (lambda x, y, a: x <= y, _COMPARE, np.bool_),
    "Greater": (lambda x, y, a: x > y, _COMPARE, np.bool_),
    "GreaterEqual": (lambda x, y, a: x >= y, _COMPARE, np.bool_),
    "Equal": (lambda x, y, a: x == y, _COMPARE, np.bool_),
    "NotEqual": (lambda x, y, a: x != y, _COMPARE, np.bool_),
    "LogicalAnd": (lambda x, y, a: x and y, ("bool",), np.bool_),
    "LogicalOr": (lambda x, y, a: x or y, ("bool",), np.bool_),
    "LogicalXor": (lambda x, y, a: x != y, ("bool",), np.bool_),
}
# Integer divisions run on the host, as TF's int32 GPU kernels of these ops do: a zero
# divisor must fail the step, which a device thread cannot report.
HOST_INT_BINARY = ("FloorDiv", "FloorMod", "TruncateDiv", "TruncateMod")


def _unary_kernel(fn):
    f = cuda.jit(device=True)(fn)

    @cuda.jit
    def kernel(x, out, alpha):
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < out.size:
            out[i] = f(x[i], alpha)
            i += step

    return kernel


def _binary_kernels(fn):
    f = cuda.jit(device=True)(fn)

    @cuda.jit
    def same_shape(x, y, out, alpha):
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < out.size:
            out[i] = f(x[i], y[i], alpha)
            i += step

    @cuda.jit
    def broadcast(x, y, out, shape, xs, ys, alpha):
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < out.size:
            rem = i
            ox = 0
            oy = 0
            for d in range(len(shape) - 1, -1, -1):
                c = rem % shape[d]
                rem //= shape[d]
                ox += c * xs[d]
                oy += c * ys[d]
            out[i] = f(x[ox], y[oy], alpha)
            i += step

    return same_shape, broadcast


def broadcast_strides(shape, out_shape) -> tuple:
    """Strides of a contiguous array of ``shape`` read at the indices of ``out_shape``."""
    lead = len(out_shape) - len(shape)
    st = D.strides(shape)
    return tuple(0 if k < lead or shape[k - lead] == 1 else st[k - lead] for k in range(len(out_shape)))


def run_unary(kernel, x, alpha=0.0, out_dtype=None):
    x = D.to_device(x)
    out = D.empty(x.shape, out_dtype or x.dtype)
    kernel[D.grid(x.size)](D.flat(x), D.flat(out), alpha)
    return out


def run_binary(kernels, x, y, alpha=0.0, out_dtype=None):
    same_shape, broadcast = kernels
    x, y = D.to_device(x), D.to_device(y)
    try:
        shape = np.broadcast_shapes(x.shape, y.shape)
    except ValueError:
        raise ValueError(f"Incompatible shapes: {list(x.shape)} vs. {list(y.shape)}") from None
    out = D.empty(shape, out_dtype or x.dtype)
    if x.shape == y.shape:
        same_shape[D.grid(out.size)](D.flat(x), D.flat(y), D.flat(out), alpha)
    else:
        broadcast[D.grid(out.size)](D.flat(x), D.flat(y), D.flat(out), D.padded(tuple(shape), 1),
                                    D.padded(broadcast_strides(x.shape, shape), 0),
                                    D.padded(broadcast_strides(y.shape, shape), 0), alpha)
    return out


def _unary_factory(kernel, out_dtype):
    def factory(node):
        alpha = float(node.attrs.get("alpha", 0.2))
        return lambda ctx, x: run_unary(kernel, x, alpha, out_dtype)

    return factory


def _binary_factory(kernels, out_dtype):
    def factory(node):
        alpha = float(node.attrs.get("alpha", 0.2))
        return lambda ctx, x, y: run_binary(kernels, x, y, alpha, out_dtype)

    return factory


KERNELS_UNARY = {op: _unary_kernel(fn) for op, (fn, _, _) in UNARY.items()}
KERNELS_BINARY = {op: _binary_kernels(fn) for op, (fn, _, _) in BINARY.items()}

for _op, (_, _dts, _out) in UNARY.items():
    register_kernel(_op, "GPU", dtypes=_dts, label="cuda elementwise")(
        _unary_factory(KERNELS_UNARY[_op], _out))
for _op, (_, _dts, _out) in BINARY.items():
    register_kernel(_op, "GPU", dtypes=_dts, label="cuda elementwise")(
        _binary_factory(KERNELS_BINARY[_op], _out))
for _op in HOST_INT_BINARY:
    register_kernel(_op, "GPU", dtypes=("int32", "int64"), label="host memory")(D.host_reference_factory(_op))


@cuda.jit
def _select(c, x, y, out, shape, cs, xs, ys):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        rem = i
        oc = 0
        ox = 0
        oy = 0
        for d in range(len(shape) - 1, -1, -1):
            k = rem % shape[d]
            rem //= shape[d]
            oc += k * cs[d]
            ox += k * xs[d]
            oy += k * ys[d]
        out[i] = x[ox] if c[oc] else y[oy]
        i += step


def _select_condition(c, x, y):
    """Select's condition as a broadcastable array: a vector picks rows of x and y."""
    if len(c.shape) == 1 and len(x.shape) > 1:
        if c.shape[0] != x.shape[0]:
            raise ValueError(f"condition has {c.shape[0]} elements but x has {x.shape[0]} rows")
        return c.reshape(c.shape[0], *[1] * (len(x.shape) - 1))
    if not tuple(c.shape) == tuple(x.shape) == tuple(y.shape):
        raise ValueError(f"condition, then and else must have the same shape: "
                         f"{list(c.shape)} vs {list(x.shape)} vs {list(y.shape)}")
    return c


def _select_factory(broadcasting):
    def factory(node):
        def compute(ctx, c, x, y):
            c, x, y = D.to_device(c), D.to_device(x), D.to_device(y)
            if not broadcasting:
                c = _select_condition(c, x, y)
            try:
                shape = np.broadcast_shapes(c.shape, x.shape, y.shape)
            except ValueError:
                raise ValueError(f"Incompatible shapes: {list(c.shape)} vs. {list(x.shape)} vs. "
                                 f"{list(y.shape)}") from None
            out = D.empty(shape, x.dtype)
            if out.size:
                st = [D.padded(broadcast_strides(v.shape, shape), 0) for v in (c, x, y)]
                _select[D.grid(out.size)](D.flat(c), D.flat(x), D.flat(y), D.flat(out),
                                          D.padded(tuple(shape), 1), *st)
            return out

        return compute

    return factory


for _op, _broadcasting in (("Select", False), ("SelectV2", True)):
    register_kernel(_op, "GPU", dtypes=NUMBERS + ("bool",), label="cuda elementwise")(
        _select_factory(_broadcasting))


_copy = _unary_kernel(lambda x, a: x)
_to_bool = _unary_kernel(lambda x, a: x != 0)


def cast(x, dtype):
    """A device copy of ``x`` converted to ``dtype`` (nonzero is True for bool)."""
    dtype = np.dtype(dtype)
    return run_unary(_to_bool if dtype == np.bool_ else _copy, x, 0.0, dtype)


@register_kernel("Cast", "GPU", dtypes=NUMBERS + ("bool",), label="cuda elementwise")
def cast_op(node):
    dst = np.dtype(node.attrs["DstT"].as_numpy_dtype)
    return lambda ctx, x: x if x.dtype == dst else cast(x, dst)


@register_kernel("AddN", "GPU", dtypes=NUMBERS, label="cuda elementwise")
def add_n(node):
    add = KERNELS_BINARY["Add"]

    def compute(ctx, *xs):
        total = D.to_device(xs[0])
        for x in xs[1:]:
            total = run_binary(add, total, x)
        return total if len(xs) > 1 else run_unary(_copy, total)

    return compute


@register_kernel("BiasAdd", "GPU", dtypes=NUMBERS, label="cuda elementwise")
def bias_add(node):
    nchw = node.attrs.get("data_format", "NHWC") == "NCHW"
    add = KERNELS_BINARY["Add"]

    def compute(ctx, x, bias):
        axis = 1 if nchw else len(x.shape) - 1
        if len(x.shape) < 2 or x.shape[axis] != bias.shape[0]:
            raise ValueError(f"Must provide as many biases as the channel dimension of the input "
                             f"tensor: {list(bias.shape)} vs. {list(x.shape)}")
        shape = [1] * len(x.shape)
        shape[axis] = bias.shape[0]
        return run_binary(add, x, D.to_device(bias).reshape(*shape))

    return compute


@cuda.jit
def _fill(out, value):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        out[i] = value[0]
        i += step


def filled(shape, dtype, value):
    out = D.empty(shape, dtype)
    _fill[D.grid(out.size)](D.flat(out), D.to_device(np.asarray(value, dtype=dtype).reshape(1)))
    return out


@register_kernel("Fill", "GPU", dtypes=NUMBERS + ("bool",), label="cuda elementwise")
def fill(node):
    def compute(ctx, dims, value):
        shape = D.host_ints(dims)
        if any(d < 0 for d in shape):
            raise ValueError(f"dims must be non-negative, got {shape}")
        return filled(shape, value.dtype, np.asarray(D.to_host(value)))

    return compute


def _like(value):
    def factory(node):
        return lambda ctx, x: filled(x.shape, x.dtype, value)

    return factory


register_kernel("ZerosLike", "GPU", dtypes=NUMBERS + ("bool",), label="cuda elementwise")(_like(0))
register_kernel("OnesLike", "GPU", dtypes=NUMBERS + ("bool",), label="cuda elementwise")(_like(1))
