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
from .blas import matmul
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


for _op, _uf, _ok in [("Prod", np.multiply, True), ("Max", np.maximum, False),
                      ("Min", np.minimum, False)]:
    register_kernel(_op, "CPU", dtypes=dtypes.NUMERIC, label="numpy ufunc.reduce")(
        _ufunc_reduction(_uf, _ok))


@register_kernel("Sum", "CPU", dtypes=dtypes.NUMERIC, label="numpy ufunc.reduce; numba row sums")
def reduce_sum(node):
    """A float bias gradient (a tensor summed over its leading axes: the rows of a dense
    layer's output, or the batch and pixels of an NHWC convolution's) runs a Numba loop;
    the rest numpy."""
    numpy_sum = _ufunc_reduction(np.add, True)(node)
    t = node.attrs.get("T")
    if t not in (dtypes.float32, dtypes.float64):
        return numpy_sum
    dtype, keep = np.dtype(t.as_numpy_dtype), node.attrs.get("keep_dims", False)
    axes_of = _axes_cache()

    def rows_of(x, axes):
        """Whether the loop applies: a C-ordered tensor of the kernel's dtype summed over
        its leading axes (0, ..., k-1), with at least one axis left. Such a sum is the
        matrix [prod of the leading dims, prod of the rest] summed over its rows, in the
        order numpy's reduction adds them (bit for bit: the CNN's conv1 bias gradient,
        64x28x28x32 over (0, 1, 2), took 0.83 ms in numpy and 0.19 in the loop)."""
        if not (x.ndim >= 2 and x.dtype == dtype and x.flags.c_contiguous):
            return False
        ax = axes_of(x, axes)
        return bool(ax) and len(ax) < x.ndim and ax == tuple(range(len(ax)))

    def with_numba():
        from .dense_jit import _sum_rows

        def compute(ctx, x, axes):
            if rows_of(x, axes):
                k = len(axes_of(x, axes))
                rows = x.reshape(int(np.prod(x.shape[:k])), int(np.prod(x.shape[k:])))
                out = _sum_rows(rows)
                return out.reshape((1,) * k + x.shape[k:] if keep else x.shape[k:])
            return numpy_sum(ctx, x, axes)

        return compute

    def until_loaded(ctx, x, axes):
        if rows_of(x, axes):
            return run_stand_in(numpy_sum, ctx, x, axes, key=until_loaded)  # this node's
        return numpy_sum(ctx, x, axes)

    return when_loaded(with_numba, until_loaded)


@register_kernel("Mean", "CPU", dtypes=(dtypes.float32, dtypes.float64), label="numpy")
def mean(node):
    keep = node.attrs.get("keep_dims", False)
    axes_of = _axes_cache()

    def compute(ctx, x, axes):
        ax = axes_of(x, axes)
        if ax is None:
            return x.copy()
        n = 1
        for a in ax:
            n *= x.shape[a]
        # np.mean's own steps: a sum in x's dtype, then one division by the count.
        return np.asarray(np.true_divide(np.add.reduce(x, axis=ax, keepdims=keep), n))

    return compute
