"""Reduction CUDA kernels: Sum/Mean/Prod/Max/Min/Any/All over any set of axes, ArgMax/ArgMin,
BiasAddGrad and L2Loss. One thread per output element walks its reduced elements through
the strides of the kept and the reduced dimensions, so no transpose is ever needed.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from dtf.kernels.registry import register_kernel
from . import device as D
from .elementwise import FLOATS, NUMBERS, cast, filled

SUM, PROD, MAX, MIN, SUMSQ = range(5)


@cuda.jit(device=True)
def _offset(k, shape, st):
    off = 0
    for d in range(len(shape) - 1, -1, -1):
        off += (k % shape[d]) * st[d]
        k //= shape[d]
    return off


@cuda.jit
def _reduce(x, out, kept_shape, kept_st, red_shape, red_st, n_red, op, scale):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        base = _offset(i, kept_shape, kept_st)
        if op == PROD:
            acc = x[base] * 0 + 1
        elif op == MAX or op == MIN:
            acc = x[base]
        else:
            acc = x[base] * 0
        for j in range(n_red):
            v = x[base + _offset(j, red_shape, red_st)]
            if op == SUM:
                acc += v
            elif op == SUMSQ:
                acc += v * v
            elif op == PROD:
                acc *= v
            elif op == MAX:
                acc = max(acc, v)
            else:
                acc = min(acc, v)
        out[i] = acc * scale if scale != 1 else acc
        i += step


@cuda.jit
def _arg_reduce(x, out, kept_shape, kept_st, n_red, red_st, want_max):
    i = cuda.grid(1)
    step = cuda.gridsize(1)
    while i < out.size:
        base = _offset(i, kept_shape, kept_st)
        best = x[base]
        arg = 0
        for j in range(1, n_red):
            v = x[base + j * red_st]
            if (want_max and v > best) or (not want_max and v < best):
                best = v
                arg = j
        out[i] = arg
        i += step


def _split_dims(shape, axes):
    """(kept shape, kept strides, reduced shape, reduced strides) of a contiguous array."""
    st = D.strides(shape)
    kept = [(shape[d], st[d]) for d in range(len(shape)) if d not in axes]
    red = [(shape[d], st[d]) for d in axes]
    return (D.padded(tuple(k[0] for k in kept), 1), D.padded(tuple(k[1] for k in kept), 0),
            D.padded(tuple(r[0] for r in red), 1), D.padded(tuple(r[1] for r in red), 0))


def normalize_axes(axes, ndim) -> tuple:
    out = set()
    for a in axes:
        if a < -max(ndim, 1) or a >= max(ndim, 1):
            raise ValueError(f"Invalid reduction dimension {a} for input with {ndim} dimensions")
        out.add(a % ndim if ndim else 0)
    return tuple(sorted(out))


def reduce(x, axes, op, keep_dims=False, mean=False, scale=1.0):
    """Reduces device or host array ``x`` over ``axes`` (normalised) on the device; the
    result is multiplied by ``scale`` (by 1/n too for a mean)."""
    x = D.to_device(x)
    shape = tuple(x.shape)
    n_red = int(np.prod([shape[a] for a in axes], dtype=np.int64))
    out_shape = [1 if d in axes else n for d, n in enumerate(shape)] if keep_dims else \
        [n for d, n in enumerate(shape) if d not in axes]
    if n_red == 0:  # nothing to reduce: the identity (NaN for a mean, as 0 / 0)
        if op in (MAX, MIN):
            raise ValueError("Reduction of an empty tensor has no identity (max/min)")
        return filled(out_shape, x.dtype, np.nan if mean else (1 if op == PROD else 0))
    out = D.empty(out_shape, x.dtype)
    if out.size == 0:
        return out
    if mean:
        scale /= n_red
    _reduce[D.grid(out.size)](D.flat(x), D.flat(out), *_split_dims(shape, axes), n_red, op, scale)
    return out


_OPS = {"Sum": (SUM, NUMBERS, False), "Mean": (SUM, FLOATS, True), "Prod": (PROD, NUMBERS, False),
        "Max": (MAX, NUMBERS, False), "Min": (MIN, NUMBERS, False)}


def _reduction_factory(op, mean):
    def factory(node):
        keep = bool(node.attrs.get("keep_dims", False))

        def compute(ctx, x, axes):
            if len(x.shape) == 0:
                return D.to_device(x)
            return reduce(x, normalize_axes(D.host_ints(axes), len(x.shape)), op, keep, mean)

        return compute

    return factory


for _name, (_op, _dts, _mean) in _OPS.items():
    register_kernel(_name, "GPU", dtypes=_dts, label="cuda reduction")(_reduction_factory(_op, _mean))


def _logical_factory(op):
    """Any and All are the Sum and Prod of the condition as 0/1 integers, nonzero meaning
    True (so that empty reductions give False and True)."""
    inner = _reduction_factory(op, False)

    def factory(node):
        compute = inner(node)
        return lambda ctx, x, axes: cast(compute(ctx, cast(x, np.int64), axes), np.bool_)

    return factory


register_kernel("Any", "GPU", dtypes=("bool",), label="cuda reduction")(_logical_factory(SUM))
register_kernel("All", "GPU", dtypes=("bool",), label="cuda reduction")(_logical_factory(PROD))


def _arg_factory(want_max):
    def factory(node):
        out_dtype = np.dtype(node.attrs["output_type"].as_numpy_dtype)

        def compute(ctx, x, axis):
            x = D.to_device(x)
            a = D.host_ints(axis)[0]
            if a < -len(x.shape) or a >= len(x.shape):
                raise ValueError(f"Expected dimension in the range [{-len(x.shape)}, {len(x.shape)}), "
                                 f"but got {a}")
            a %= len(x.shape)
            if x.shape[a] == 0:
                raise ValueError("Reduction axis is empty in argmax/argmin")
            kept_shape, kept_st, _, red_st = _split_dims(tuple(x.shape), (a,))
            out = D.empty([n for d, n in enumerate(x.shape) if d != a], out_dtype)
            if out.size:
                _arg_reduce[D.grid(out.size)](D.flat(x), D.flat(out), kept_shape, kept_st, x.shape[a],
                                              red_st[0], want_max)
            return out

        return compute

    return factory


register_kernel("ArgMax", "GPU", dtypes=NUMBERS, label="cuda reduction")(_arg_factory(True))
register_kernel("ArgMin", "GPU", dtypes=NUMBERS, label="cuda reduction")(_arg_factory(False))


@register_kernel("BiasAddGrad", "GPU", dtypes=NUMBERS, label="cuda reduction")
def bias_add_grad(node):
    nchw = node.attrs.get("data_format", "NHWC") == "NCHW"

    def compute(ctx, g):
        channel = 1 if nchw else len(g.shape) - 1
        return reduce(g, tuple(d for d in range(len(g.shape)) if d != channel), SUM)

    return compute


@register_kernel("L2Loss", "GPU", dtypes=FLOATS, label="cuda reduction")
def l2_loss(node):
    def compute(ctx, x):
        x = D.to_device(x)
        if x.size == 0:
            return D.to_device(np.zeros((), x.dtype))
        return reduce(D.flat(x), (0,), SUMSQ, scale=0.5)

    return compute
