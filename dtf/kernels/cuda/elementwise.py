"""Elementwise CUDA kernels: one generic kernel per unary or binary op, built from a table
of scalar device functions. Binary ops broadcast through per-input strides (0 along a
broadcast dimension); same-shape operands take a stride-free fast path.
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


# op -> (f(x, alpha), dtypes); alpha carries LeakyRelu's attribute.
UNARY = {
    "Neg": (lambda x, a: -x, NUMBERS),
    "Abs": (lambda x, a: abs(x), NUMBERS),
    "Square": (lambda x, a: x * x, NUMBERS),
    "Sign": (lambda x, a: 1 if x > 0 else (-1 if x < 0 else x * 0), NUMBERS),
    "Sqrt": (lambda x, a: math.sqrt(x), FLOATS),
    "Rsqrt": (lambda x, a: 1.0 / math.sqrt(x), FLOATS),
    "Reciprocal": (lambda x, a: 1.0 / x, FLOATS),
    "Exp": (lambda x, a: math.exp(x), FLOATS),
    "Expm1": (lambda x, a: math.expm1(x), FLOATS),
    "Log": (lambda x, a: math.log(x), FLOATS),
    "Log1p": (lambda x, a: math.log1p(x), FLOATS),
    "Sin": (lambda x, a: math.sin(x), FLOATS),
    "Cos": (lambda x, a: math.cos(x), FLOATS),
    "Tan": (lambda x, a: math.tan(x), FLOATS),
    "Atan": (lambda x, a: math.atan(x), FLOATS),
    "Sinh": (lambda x, a: math.sinh(x), FLOATS),
    "Cosh": (lambda x, a: math.cosh(x), FLOATS),
    "Tanh": (lambda x, a: math.tanh(x), FLOATS),
    "Erf": (lambda x, a: math.erf(x), FLOATS),
    "Sigmoid": (lambda x, a: _sigmoid(x), FLOATS),
    "Relu": (lambda x, a: x if x > 0 else 0, NUMBERS),
    "Relu6": (lambda x, a: min(max(x, 0), 6), FLOATS),
    "Elu": (lambda x, a: x if x >= 0 else math.expm1(x), FLOATS),
    "Softplus": (lambda x, a: _softplus(x), FLOATS),
    "Softsign": (lambda x, a: x / (1.0 + abs(x)), FLOATS),
    "LeakyRelu": (lambda x, a: x if x > 0 else x * a, FLOATS),
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
    "Less": (lambda x, y, a: x < y, _COMPARE, np.bool_),
    "LessEqual": (lambda x, y, a: x <= y, _COMPARE, np.bool_),
    "Greater": (lambda x, y, a: x > y, _COMPARE, np.bool_),
    "GreaterEqual": (lambda x, y, a: x >= y, _COMPARE, np.bool_),
    "Equal": (lambda x, y, a: x == y, _COMPARE, np.bool_),
    "NotEqual": (lambda x, y, a: x != y, _COMPARE, np.bool_),
    "LogicalAnd": (lambda x, y, a: x and y, ("bool",), np.bool_),
    "LogicalOr": (lambda x, y, a: x or y, ("bool",), np.bool_),
}


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


def _unary_factory(kernel):
    def factory(node):
        alpha = float(node.attrs.get("alpha", 0.2))
        return lambda ctx, x: run_unary(kernel, x, alpha)

    return factory


def _binary_factory(kernels, out_dtype):
    def factory(node):
        alpha = float(node.attrs.get("alpha", 0.2))
        return lambda ctx, x, y: run_binary(kernels, x, y, alpha, out_dtype)

    return factory


KERNELS_UNARY = {op: _unary_kernel(fn) for op, (fn, _) in UNARY.items()}
KERNELS_BINARY = {op: _binary_kernels(fn) for op, (fn, _, _) in BINARY.items()}

for _op, (_, _dts) in UNARY.items():
    register_kernel(_op, "GPU", dtypes=_dts, label="cuda elementwise")(_unary_factory(KERNELS_UNARY[_op]))
for _op, (_, _dts, _out) in BINARY.items():
    register_kernel(_op, "GPU", dtypes=_dts, label="cuda elementwise")(
        _binary_factory(KERNELS_BINARY[_op], _out))


_copy = _unary_kernel(lambda x, a: x)
_to_bool = _unary_kernel(lambda x, a: x != 0)


@register_kernel("Cast", "GPU", dtypes=NUMBERS + ("bool",), label="cuda elementwise")
def cast(node):
    dst = np.dtype(node.attrs["DstT"].as_numpy_dtype)
    kernel = _to_bool if dst == np.bool_ else _copy

    def compute(ctx, x):
        if x.dtype == dst:
            return x
        return run_unary(kernel, x, 0.0, dst)

    return compute


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
