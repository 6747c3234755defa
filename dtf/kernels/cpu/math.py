"""CPU kernels of MatMul and the reductions Sum, Prod, Max, Min, Mean on numeric dtypes.

The numpy reference spends more time checking and normalising arguments than a small
matmul or reduction takes: here a MatMul calls BLAS directly and leaves the checks to the
reference only when numpy refuses the call, and a reduction normalises its axes once per
distinct axes value (cached per node) instead of on every call. Reductions equal the
reference's bit for bit (the same numpy calls with the same accumulation dtype); a small
MatMul runs on one BLAS thread (see .blas), which may round differently from numpy on
several.
"""
from __future__ import annotations

import numpy as np

from dtf.framework import dtypes
from dtf.kernels.reference import REFERENCE
from dtf.kernels.reference.math import _axes
from dtf.kernels.registry import register_kernel
from .blas import is_large, matmul
from .intra_op import run_ranges
from .jit_loading import run_stand_in, when_loaded


@register_kernel("MatMul", "CPU", dtypes=dtypes.NUMERIC, label="BLAS, threads sized to the product")
def mat_mul(node):
    attrs, ref = node.attrs, REFERENCE["MatMul"]
    ta, tb = attrs["transpose_a"], attrs["transpose_b"]

    def compute(ctx, a, b):
        # np.matmul would broadcast higher ranks; MatMul takes matrices only.
        if a.ndim == 2 == b.ndim:
            try:
                return matmul(a.T if ta else a, b.T if tb else b)
            except ValueError:
                pass
        return ref(attrs, a, b)  # raises the reference's error

    return compute


def mat_mul_with_epilogue(node, inputs, bias, relu):
    """MatMul of ``inputs`` plus ``bias`` (a row), then ReLU when ``relu``, in one oneDNN
    primitive for large float32 products; None elsewhere (see .epilogues)."""
    if len(inputs) != 2:
        return None
    a, b = inputs
    if not (type(a) is np.ndarray and type(b) is np.ndarray and type(bias) is np.ndarray
            and a.ndim == 2 == b.ndim):
        return None
    a = a.T if node.attrs.get("transpose_a") else a
    b = b.T if node.attrs.get("transpose_b") else b
    if not is_large(a, b):
        return None  # small: OpenBLAS on one thread and the tail's pass cost less
    from . import onednn

    return onednn.matmul(a, b, bias, relu)


# Distinct axes values one node sees are few (usually one constant).
_MAX_CACHED = 64


def _axes_cache():
    """``axes_of(x, axes)``: the reference's normalised axes, memoised on (rank, axes)."""
    cache: dict = {}

    def axes_of(x, axes):
        try:
            key = (x.ndim, axes.dtype.num, axes.tobytes())
        except AttributeError:  # not an array: nothing to key on
            return _axes(x, axes)
        ax = cache.get(key, key)
        if ax is key:
            ax = _axes(x, axes)  # raises on an out-of-range axis, as the reference does
            if len(cache) < _MAX_CACHED:
                cache[key] = ax
        return ax

    return axes_of


def _ufunc_reduction(ufunc, empty_ok):
    def factory(node):
        keep = node.attrs.get("keep_dims", False)
        axes_of = _axes_cache()

        def compute(ctx, x, axes):
            ax = axes_of(x, axes)
            if ax is None:  # a scalar input: nothing to reduce
                return x.copy()
            if not ax:
                # No axes (the gradient of a same-shape Add sums over BroadcastGradientArgs'
                # empty list): the input itself, as Identity returns it and TF forwards it;
                # a copy cost 1 ms per 4 MB, six times per step of the ResNet-style model.
                return x
            if not empty_ok and x.size == 0:
                return REFERENCE[node.op](node.attrs, x, axes)  # raises: no identity
            # dtype=x.dtype: np.sum would widen small ints; the reference casts back anyway.
            return np.asarray(ufunc.reduce(x, axis=ax, dtype=x.dtype, keepdims=keep))

        return compute

    return factory


register_kernel("Prod", "CPU", dtypes=dtypes.NUMERIC, label="numpy ufunc.reduce")(
    _ufunc_reduction(np.multiply, True))


# Rows of at most this many elements, reduced whole (the reduced axes are the trailing
# ones), run Numba loops: numpy's reduction along a contiguous axis pays per row. 32768
# rows of 64 float32, one core: sum 1.06 ms in numpy, 0.40 in the loop; max 2.2 and 0.63
# (TensorFlow's reduce_max on both cores: 0.61). Wider rows amortize numpy's cost.
SHORT_ROW_MAX = 128


def _short_rows(x, ax, dtype):
    """(rows, n) where reducing ``x`` over ``ax`` reduces each row of a C-contiguous
    [rows, n] view of it, n <= SHORT_ROW_MAX, in the kernel's float dtype; else None."""
    if not (ax and x.dtype == dtype and x.size and ax[-1] == x.ndim - 1
            and ax == tuple(range(ax[0], x.ndim)) and x.flags.c_contiguous):
        return None
    n = _product(x.shape[ax[0]:])
    return (x.size // n, n) if n <= SHORT_ROW_MAX else None


def _float_kernel(node) -> bool:
    return node.attrs.get("T") in (dtypes.float32, dtypes.float64)


def _reduction_setup(node):
    """(dtype, keep_dims, axes_of) of a float reduction node's loops."""
    return (np.dtype(node.attrs["T"].as_numpy_dtype), node.attrs.get("keep_dims", False),
            _axes_cache())


def _reduce_rows(loop, x, rows, n, *args):
    """``loop(x2, *args, out, r0, r1)`` over the rows of ``x`` viewed as [rows, n], on the
    intra-op threads; the [rows] result."""
    x2, out = x.reshape(rows, n), np.empty(rows, x.dtype)
    run_ranges(lambda r0, r1: loop(x2, *args, out, r0, r1), rows, n)
    return out


def _extreme_reduction(largest):
    """Max (``largest``) or Min: float rows in a loop (see SHORT_ROW_MAX), else numpy."""
    def factory(node):
        numpy_reduce = _ufunc_reduction(np.maximum if largest else np.minimum, False)(node)
        if not _float_kernel(node):
            return numpy_reduce
        dtype, keep, axes_of = _reduction_setup(node)

        def with_numba():
            from .dense_jit import _row_extremes

            def compute(ctx, x, axes):
                ax = axes_of(x, axes)
                rows = None if ax is None else _short_rows(x, ax, dtype)
                if rows is None:
                    return numpy_reduce(ctx, x, axes)
                out = _reduce_rows(_row_extremes, x, *rows, largest)
                return out.reshape(_reduced_shape(x.shape, ax, keep))

            return compute

        def until_loaded(ctx, x, axes):
            ax = axes_of(x, axes)
            if ax is not None and _short_rows(x, ax, dtype) is not None:
                return run_stand_in(numpy_reduce, ctx, x, axes, key=until_loaded)
            return numpy_reduce(ctx, x, axes)

        return when_loaded(with_numba, until_loaded)

    return factory


for _op, _largest in (("Max", True), ("Min", False)):
    register_kernel(_op, "CPU", dtypes=dtypes.NUMERIC,
                    label="numpy ufunc.reduce; numba over short float rows")(_extreme_reduction(_largest))


def _middle_run(x, ax, dtype):
    """(a, n, m) where the loop ``_sum_middle`` computes the reduction of ``x`` over ``ax``:
    a C-ordered float tensor of the kernel's dtype summed over one run of neighbouring axes
    that leaves the last axis, viewed as [a, n, m] summed over n. That is a bias gradient
    (NHWC summed over batch and pixels: the CNN's conv1, 64x28x28x32, took 0.83 ms in
    numpy and 0.19 in the loop) or a global average pool (over the pixels: the ResNet
    step's 64x32x32x16, 1.4 ms in numpy). Else None (numpy reduces)."""
    if not (ax and x.ndim >= 2 and x.dtype == dtype and x.flags.c_contiguous
            and ax[-1] < x.ndim - 1 and ax == tuple(range(ax[0], ax[-1] + 1))):
        return None
    shape = x.shape
    return (_product(shape[:ax[0]]), _product(shape[ax[0]:ax[-1] + 1]),
            _product(shape[ax[-1] + 1:]))


def _product(dims):
    n = 1
    for d in dims:
        n *= d
    return n


def _reduced_shape(shape, ax, keep):
    return tuple(1 if i in ax else d for i, d in enumerate(shape)) if keep else tuple(
        d for i, d in enumerate(shape) if i not in ax)


@register_kernel("Sum", "CPU", dtypes=dtypes.NUMERIC, label="numpy ufunc.reduce; numba row sums")
def reduce_sum(node):
    """A float sum over a run of axes that keeps the last (see ``_middle_run``), or over
    short rows (``_short_rows``), runs a Numba loop; the rest numpy. Both add in numpy's
    order."""
    numpy_sum = _ufunc_reduction(np.add, True)(node)
    if not _float_kernel(node):
        return numpy_sum
    dtype, keep, axes_of = _reduction_setup(node)

    def with_numba():
        from .dense_jit import _row_sums, _sum_middle

        zero = dtype.type(0)

        def compute(ctx, x, axes):
            ax = axes_of(x, axes)
            run = _middle_run(x, ax, dtype)
            if run is not None:
                return _sum_middle(x.reshape(run)).reshape(_reduced_shape(x.shape, ax, keep))
            rows = None if ax is None else _short_rows(x, ax, dtype)
            if rows is None:
                return numpy_sum(ctx, x, axes)
            return _reduce_rows(_row_sums, x, *rows, zero).reshape(_reduced_shape(x.shape, ax, keep))

        return compute

    def until_loaded(ctx, x, axes):
        ax = axes_of(x, axes)
        if _middle_run(x, ax, dtype) is not None or ax is not None and _short_rows(x, ax, dtype):
            return run_stand_in(numpy_sum, ctx, x, axes, key=until_loaded)  # this node's
        return numpy_sum(ctx, x, axes)

    return when_loaded(with_numba, until_loaded)


@register_kernel("Mean", "CPU", dtypes=(dtypes.float32, dtypes.float64),
                 label="numpy; numba sums over a run of axes")
def mean(node):
    keep = node.attrs.get("keep_dims", False)
    dtype = np.dtype(node.attrs["T"].as_numpy_dtype) if "T" in node.attrs else None
    axes_of = _axes_cache()

    def numpy_mean(ctx, x, axes):
        ax = axes_of(x, axes)
        if ax is None:
            return x.copy()
        # np.mean's own steps: a sum in x's dtype, then one division by the count.
        return np.asarray(np.true_divide(np.add.reduce(x, axis=ax, keepdims=keep),
                                         _product(x.shape[a] for a in ax)))

    def with_numba():
        from .dense_jit import _row_sums, _sum_middle

        zero = dtype.type(0)

        def compute(ctx, x, axes):
            ax = axes_of(x, axes)
            run = None if ax is None else _middle_run(x, ax, dtype)
            if run is not None:
                out, count = _sum_middle(x.reshape(run)), run[1]
            else:
                rows = None if ax is None else _short_rows(x, ax, dtype)
                if rows is None:
                    return numpy_mean(ctx, x, axes)
                out, count = _reduce_rows(_row_sums, x, *rows, zero), rows[1]
            np.true_divide(out, count, out=out)  # the same division, in place
            return out.reshape(_reduced_shape(x.shape, ax, keep))

        return compute

    return when_loaded(with_numba, numpy_mean)
